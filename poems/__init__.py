"""The 100 poems of the Ogura Hyakunin Isshu, the two jo-ka, goshiki colours.

Data comes from ``poems/data/poems.json`` and ``poems/data/extra.json`` (public-domain
text; see ``poems/data/SOURCES.md``).  Everything here is immutable and loaded once.

Who uses what:
  - ``all_poems()`` / ``poem(no)``: the reading engine, the CLI, the match rules.
  - ``JOKA`` / ``GOSHIKI_KARAFUDA`` / ``GOSHIKI_ANNOUNCE``: texts read that are not one of the 100.
  - ``COLORS``: goshiki colour name -> the 20 poem numbers.
  - kimariji (static and as cards are read) live in ``poems.kimariji``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = [
    "Poem", "Text", "all_poems", "poem", "JOKA", "GOSHIKI_KARAFUDA", "GOSHIKI_ANNOUNCE",
    "COLORS", "COLOR_JA", "COLOR_CARD_ORDER", "color_of", "POET_CATEGORIES",
]


@dataclass(frozen=True)
class Text:
    """A recited text: five ku in kanji and in modern reading (one kana per sound).

    ``key`` names it for the audio layer: "1".."100" for poems, "joka", "karafuda".
    """

    key: str
    kanji: tuple[str, ...]
    reading: tuple[str, ...]
    author: str = ""

    @property
    def kami_kanji(self) -> tuple[str, ...]:
        return self.kanji[:3]

    @property
    def shimo_kanji(self) -> tuple[str, ...]:
        return self.kanji[3:]

    @property
    def kami_reading(self) -> tuple[str, ...]:
        return self.reading[:3]

    @property
    def shimo_reading(self) -> tuple[str, ...]:
        return self.reading[3:]


@dataclass(frozen=True)
class Poem(Text):
    """One of the 100.  ``kana`` is historical kana (as printed on cards)."""

    no: int = 0
    author_kana: str = ""
    kana: tuple[str, ...] = ()
    color: str = ""
    #: kimariji with all 100 unread, card form (historical kana, e.g. あふこ, をぐ)
    kimariji: str = ""
    #: the same, as heard: one kana per mora (おおこ, おぐ)
    kimariji_sound: str = ""

    @property
    def torifuda(self) -> str:
        """The grabbed card's text: 下の句 in hiragana, no dakuten, as printed.

        Two cards print a spelling other than the dictionary one (see SOURCES.md):
        89 よはり and 92 かはく.
        """
        text = "".join(self.kana[3:])
        text = {89: text.replace("よわり", "よはり"), 92: text.replace("かわく", "かはく")}.get(self.no, text)
        return strip_dakuten(text)


_DAKUTEN = str.maketrans(
    "がぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽ",
    "かきくけこさしすせそたちつてとはひふへほはひふへほ",
)


def strip_dakuten(text: str) -> str:
    return text.translate(_DAKUTEN)


def _load(name: str):
    return json.loads(resources.files("poems").joinpath("data", name).read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _extra() -> dict:
    return _load("extra.json")


COLORS: dict[str, tuple[int, ...]] = {
    name: tuple(v["poems"]) for name, v in _extra()["goshiki_colors"].items()
}
COLOR_JA: dict[str, str] = {name: v["ja"] for name, v in _extra()["goshiki_colors"].items()}
COLOR_CARD_ORDER: dict[str, tuple[int, ...]] = {
    name: tuple(v["card_order"]) for name, v in _extra()["goshiki_colors"].items()
}
POET_CATEGORIES: dict[str, tuple[int, ...]] = {
    k: tuple(v) for k, v in _extra()["poet_categories"].items() if isinstance(v, list)
}


def color_of(no: int) -> str:
    for name, nos in COLORS.items():
        if no in nos:
            return name
    raise KeyError(no)


@lru_cache(maxsize=None)
def all_poems() -> tuple[Poem, ...]:
    """The 100 poems, index i holds poem i + 1."""
    from poems.kimariji import static_kimariji  # late: kimariji needs the raw poems

    raw = _load("poems.json")
    static = static_kimariji(raw)
    out = []
    for p in raw:
        card, sound = static[p["no"]]
        out.append(Poem(
            key=str(p["no"]), kanji=tuple(p["kanji"]), reading=tuple(p["reading"]),
            author=p["author"], no=p["no"], author_kana=p["author_kana"], kana=tuple(p["kana"]),
            color=color_of(p["no"]), kimariji=card, kimariji_sound=sound,
        ))
    return tuple(out)


def poem(no: int) -> Poem:
    if not isinstance(no, int) or not 1 <= no <= 100:
        raise KeyError(f"no poem number {no!r} (poems are 1-100)")
    return all_poems()[no - 1]


def _text(key: str, d: dict) -> Text:
    return Text(key=key, kanji=tuple(d["kanji"]), reading=tuple(d["reading"]), author=d.get("author", ""))


#: 序歌 of competitive karuta: 難波津に 咲くやこの花 ...
JOKA: Text = _text("joka", _extra()["joka"]["kyogi"])
#: the karafuda poem read first in goshiki (石川啄木「東海の…」)
GOSHIKI_KARAFUDA: Text = _text("karafuda", _extra()["joka"]["goshiki"])
#: 「ご用意よければ 空札一枚」: one line, kept as a single "ku"
GOSHIKI_ANNOUNCE: Text = Text(
    key="announce",
    kanji=tuple(_extra()["joka"]["goshiki"]["announce"]["kanji"].split()),
    reading=tuple(_extra()["joka"]["goshiki"]["announce"]["reading"].split()),
)
