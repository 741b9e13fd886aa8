"""Reading settings and the presets: one per game (kyogi, goshiki: ``game.reading``, a
``reader.match.rules.games.ReadingPreset``) and ``BEGINNER``, a reading of its own.

All durations are integer milliseconds; ``speed`` scales the voice's pace (1.0 = kyogi pace).
A preset gives defaults; any option given on the command line replaces just that value.

Defaults and where they come from (rules.md §1-2):
  kyogi    間 1000 ms (the one fixed number), 余韻 3000 ms ("5-3-1-6" tempo since 2021),
           take 3000 ms in auto mode and files; the jo-ka read 上の句, 1.5 s, 下の句, 0.9 s,
           下の句 again with its 余韻 (the pauses a human reader makes: issue 21).
  goshiki  each poem 上の句 then 下の句 once, no waiting, about 7-8 s a poem: a faster pace,
           a short hold; starts with 「ご用意よければ 空札一枚」 and a karafuda poem; 17 cards.
  beginner each poem 上の句 then 下の句 straight through, slower, with room between poems.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from reader.match.rules.games import GAMES, KYOGI, ReadingPreset

#: beginner: each poem 上の句 then 下の句 straight through, slower, with room between poems
BEGINNER = ReadingPreset("beginner", (("ma_ms", 2000), ("yoin_ms", 1000), ("take_ms", 0),
                                      ("gap_ms", 800), ("speed", 0.9), ("joka", False)),
                         opening="joka-once", waits_for_take=False)
#: every reading preset by name, in the order the command line lists them
READINGS: dict[str, ReadingPreset] = {**{n: g.reading for n, g in GAMES.items()},
                                      BEGINNER.name: BEGINNER}
RULES = tuple(READINGS)


def reading_of(name: str) -> ReadingPreset:
    """The reading preset called ``name`` (``KarutaError`` for another name)."""
    from reader.base.errors import KarutaError

    if not isinstance(name, str) or name not in READINGS:
        raise KarutaError(f"unknown rules {name!r}: choose {_choices()}")
    return READINGS[name]


def _choices() -> str:
    return ", ".join(RULES[:-1]) + " or " + RULES[-1]


@dataclass(frozen=True)
class ReadingSettings:
    rules: str = KYOGI.name
    #: 間: silence right before every 上の句 (after a 下の句 or the jo-ka)
    ma_ms: int = 1000
    #: 余韻: how long the last sound of a 下の句 is held
    yoin_ms: int = 3000
    #: the wait after a 上の句 while players take (auto mode and files; live waits for a key)
    take_ms: int = 3000
    #: silence between the two halves of one poem (goshiki, beginner) and between the
    #: jo-ka's 下の句 and its repeat ("one breath": 0.9 s, a human reader's, issue 21)
    gap_ms: int = 900
    #: silence between the jo-ka's 上の句 and its 下の句 (1.5 s, the same reader's)
    joka_gap_ms: int = 1500
    #: voice pace, 1.0 = kyogi (about 0.3 s a mora with the synthesized voice)
    speed: float = 1.0
    #: how many cards to read (None = all selected, goshiki 17)
    cards: int | None = None
    #: the selected poems (None = all 100, or the colour for goshiki)
    poems: tuple[int, ...] | None = None
    #: karafuda drawn from outside the selection and shuffled in (practice subsets)
    karafuda: int = 0
    #: read the jo-ka (kyogi) / the announcement and karafuda poem (goshiki)
    joka: bool = True
    #: read the last card's 下の句 (kyogi; rules.md marks it uncertain, so a setting)
    last_shimo: bool = True

    def __post_init__(self):
        from reader.base.errors import KarutaError

        reading_of(self.rules)
        from reader.base.limits import check_pause_ms

        for name in ("ma_ms", "yoin_ms", "take_ms", "gap_ms", "joka_gap_ms"):
            check_pause_ms(name.removesuffix("_ms"), getattr(self, name))
        if self.karafuda < 0:
            raise KarutaError("karafuda must not be negative")
        if not 0.25 <= self.speed <= 4.0:
            raise KarutaError(f"speed {self.speed} is out of range: use 0.25 to 4")
        if self.cards is not None and self.cards < 1:
            raise KarutaError("cards must be at least 1")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["poems"] = list(self.poems) if self.poems is not None else None
        return d


#: each preset's settings (a preset's ``values`` over the defaults)
PRESETS: dict[str, ReadingSettings] = {
    n: ReadingSettings(rules=n, **dict(r.values)) for n, r in READINGS.items()}


def preset(rules: str, **overrides) -> ReadingSettings:
    """The preset for ``rules`` with the given (non-None) values replaced."""
    from reader.base.errors import KarutaError

    reading_of(rules)
    return replace(PRESETS[rules], **{k: v for k, v in overrides.items() if v is not None})


def settings_from_options(rules: str = KYOGI.name, *, poems_spec: str | None = None, colors=(),
                          cards: int | None = None, karafuda: int | None = None,
                          ma: float | None = None, yoin: float | None = None,
                          take: float | None = None, gap: float | None = None,
                          speed: float | None = None, joka: bool | None = None,
                          last_shimo: bool | None = None,
                          joka_gap: float | None = None) -> ReadingSettings:
    """Settings from values as a user gives them: pauses in seconds, the poems as a selection
    text (``1-20``, ``blue``, ``むすめふさほせ`` ...) and colour names; None keeps the preset's
    value.  The CLI's reading options and version-1 club sessions both come through here."""
    from reader.reading.selection import parse_selection

    def ms(value: float | None) -> int | None:
        return None if value is None else round(value * 1000)

    if poems_spec is not None and not poems_spec.strip(" ,"):
        from reader.base.errors import KarutaError

        raise KarutaError("--poems is empty: give poems (1-20, blue, むすめふさほせ) or leave it out")
    selection = parse_selection(poems_spec, colors) if (poems_spec or colors) else None
    return preset(rules, poems=selection, cards=cards, karafuda=karafuda, ma_ms=ms(ma),
                  yoin_ms=ms(yoin), take_ms=ms(take), gap_ms=ms(gap), joka_gap_ms=ms(joka_gap),
                  speed=speed, joka=joka, last_shimo=last_shimo)


def settings_from_dict(d: dict) -> ReadingSettings:
    """The inverse of ``ReadingSettings.to_dict`` (saved sessions and logs).  Unknown keys are
    refused with a ``KarutaError`` (the caller names the file)."""
    from dataclasses import fields

    from reader.base.errors import KarutaError

    names = {f.name for f in fields(ReadingSettings)}
    extra = set(d) - names
    if extra:
        raise KarutaError(f"unknown reading setting {sorted(extra)[0]!r}")
    d = dict(d)
    if d.get("poems") is not None:
        d["poems"] = tuple(int(n) for n in d["poems"])
    try:
        return ReadingSettings(**d)
    except TypeError as e:
        raise KarutaError(f"bad reading settings ({e})") from None
