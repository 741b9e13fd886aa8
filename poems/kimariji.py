"""Kimariji (決まり字): the shortest opening of a 上の句 that no other unread poem shares.

Counted in sounds as read aloud, one kana per mora (rules.md §5):
を→お, ゐ/ゑ→い/え, ぢ/づ→じ/ず, word-internal は行→わ行 (already so in the ``reading``
field), and a long o (おう, historical あふ) → おお.  So 44 あふことの sounds おおこ.

Card form: the same number of characters of the historical kana (あふこ, をぐ).  Historical kana
has one character per mora, which ``tests/test_kimariji.py`` checks for every 上の句.

The universe is the set of poems that can be read (all 100, or a goshiki colour's 20); every
poem read — taken or karafuda — drops out, and the others' kimariji can only shorten.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

__all__ = ["split_morae", "heard", "sound_morae", "kami_heard", "opens_with", "shared_opening", "kimariji", "kimariji_length",
           "Kimariji", "static_kimariji"]

_SMALL = set("ゃゅょぁぃぅぇぉゎ")
_ALWAYS = str.maketrans("をゐゑぢづ", "おいえじず")
# kana whose vowel is o: a following う is heard as お (long o)
_O_ROW = set("おこごそぞとどのほぼぽもよろょぉを")


def _morae(text: str) -> list[str]:
    out: list[str] = []
    for c in text:
        if c in _SMALL and out:
            out[-1] += c
        else:
            out.append(c)
    return out


def split_morae(text: str) -> list[str]:
    """``text`` (modern hiragana) split into morae as written, small kana attached, with the
    kana that are always read otherwise folded (を, ゐ/ゑ, ぢ/づ as お, い/え, じ/ず); no long
    vowel folded (``heard`` does that)."""
    return _morae(text.translate(_ALWAYS))


def heard(morae: Iterable[str]) -> tuple[str, ...]:
    """Morae (hiragana, small kana attached) as heard: the one rule every part of the app folds
    sounds by (rules.md §5).  を→お, ゐ/ゑ→い/え, ぢ/づ→じ/ず, and an o-row + う is a long o
    (おう → おお).  Nothing else: an a-row + う stays (48 いわうつ is い-わ-う-つ), and so does
    an e-row + い (79 もれいづる is も-れ-い-ず-る).
    """
    out = [m.translate(_ALWAYS) for m in morae]
    for i in range(1, len(out)):
        if out[i] == "う" and out[i - 1][-1] in _O_ROW:
            out[i] = "お"
    return tuple(out)


def sound_morae(reading_kami: Iterable[str]) -> tuple[str, ...]:
    """Ku in modern reading, as heard, one string per mora: ('お', 'お', 'こ', 'と', 'の', ...).

    The modern reading already turned historical あふ into おう, so ``heard``'s long o is all
    it needs."""
    return heard(_morae("".join(reading_kami)))


def kami_heard(no: int) -> tuple[str, ...]:
    """The 上の句 of poem ``no`` as heard, one string per mora (44: おおことの...)."""
    sounds = _sounds()
    if no not in sounds:
        raise KeyError(f"no poem number {no!r} (poems are 1-100)")
    return sounds[no]


def opens_with(no: int, typed: str) -> bool:
    """Whether the 上の句 of poem ``no`` opens with the kana ``typed``: as heard (``おおこ``,
    folded as typed: ``おうこ`` too) or as printed on the card (``あふこ``)."""
    from poems import poem

    return ("".join(kami_heard(no)).startswith("".join(sound_morae([typed])))
            or "".join(poem(no).kana[:3]).startswith(typed))


def shared_opening(a: int, b: int) -> int:
    """How many morae the 上の句 of poems ``a`` and ``b`` share at the start, as heard
    (なげき/なげけ: 2)."""
    return _common(kami_heard(a), kami_heard(b))


class Kimariji(tuple):
    """(card, sound, length): ``Kimariji('あふこ', 'おおこ', 3)``."""

    __slots__ = ()

    def __new__(cls, card: str, sound: str, length: int):
        return super().__new__(cls, (card, sound, length))

    card = property(lambda self: self[0])
    sound = property(lambda self: self[1])
    length = property(lambda self: self[2])


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    k, limit = 0, min(len(a), len(b))
    while k < limit and a[k] == b[k]:
        k += 1
    return k


def _shortest_unique(sounds: Mapping[int, tuple[str, ...]]) -> dict[int, int]:
    """For each key, the number of morae that make its sequence unique among ``sounds``.

    In sorted order the longest opening a sequence shares with any other is the one it shares
    with a neighbour, so one sort and one pass do it (n log n, not n²).
    """
    ranked = sorted(sounds.items(), key=lambda kv: kv[1])
    out: dict[int, int] = {}
    for i, (n, s) in enumerate(ranked):
        shared = max(
            _common(s, ranked[i - 1][1]) if i > 0 else 0,
            _common(s, ranked[i + 1][1]) if i + 1 < len(ranked) else 0,
        )
        out[n] = min(shared + 1, len(s))
    return out


@lru_cache(maxsize=None)
def _sounds() -> dict[int, tuple[str, ...]]:
    from poems import all_poems

    return {p.no: sound_morae(p.kami_reading) for p in all_poems()}


def _card_form(kana_kami: Iterable[str], length: int) -> str:
    return "".join(kana_kami)[:length]


def _unread(universe: Iterable[int], read: Iterable[int]) -> set[int]:
    """The poems of ``universe`` not in ``read`` (KeyError for a number that is no poem)."""
    sounds = _sounds()
    unread = set(universe) - set(read)
    bad = [n for n in unread if n not in sounds]
    if bad:
        raise KeyError(f"no poem number {bad[0]!r} (poems are 1-100)")
    return unread


def _entry(no: int, length: int) -> Kimariji:
    """Poem ``no``'s kimariji of ``length`` morae: card form, sound, length."""
    from poems import poem

    return Kimariji(_card_form(poem(no).kana[:3], length), "".join(_sounds()[no][:length]), length)


def kimariji_length(universe: Iterable[int], read: Iterable[int] = ()) -> dict[int, int]:
    """Kimariji length in morae for every unread poem of ``universe``."""
    sounds = _sounds()
    return _shortest_unique({n: sounds[n] for n in sorted(_unread(universe, read))})


def kimariji(universe: Iterable[int] = range(1, 101), read: Iterable[int] = ()) -> dict[int, Kimariji]:
    """Kimariji of every unread poem of ``universe`` after the poems in ``read`` were read.

    >>> kimariji(read=[])[44]
    ('あふこ', 'おおこ', 3)
    """
    return {n: _entry(n, k) for n, k in kimariji_length(universe, read).items()}


def kimariji_of(no: int, universe: Iterable[int] = range(1, 101),
                read: Iterable[int] = ()) -> Kimariji:
    """``kimariji(universe, read)[no]`` without the other unread poems' kimariji: the
    longest opening ``no`` shares with any other unread poem, one mora more (what the
    sorted pass of ``_shortest_unique`` finds at a neighbour).  A reading's plan asks once
    per card: the whole table each time was most of a plan's time."""
    sounds = _sounds()
    unread = _unread(universe, read)
    if no not in unread:
        raise KeyError(no)
    s = sounds[no]
    return _entry(no, min(max((_common(s, sounds[n]) for n in unread if n != no), default=0) + 1,
                          len(s)))


def static_kimariji(raw_poems: list[dict]) -> dict[int, tuple[str, str]]:
    """All 100 unread, straight from the raw JSON (used while loading ``poems``)."""
    sounds = {p["no"]: sound_morae(p["reading"][:3]) for p in raw_poems}
    lengths = _shortest_unique(sounds)
    return {
        p["no"]: (_card_form(p["kana"][:3], lengths[p["no"]]), "".join(sounds[p["no"]][: lengths[p["no"]]]))
        for p in raw_poems
    }
