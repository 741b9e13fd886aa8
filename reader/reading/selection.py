"""Which poems: parse ``--poems`` / ``--color`` into poem numbers.

Grammar (tokens separated by commas or spaces; the result is the union, sorted):

  ``12``, ``1-20``              poem numbers and ranges (1-100)
  ``all``                       all 100
  ``blue`` ``pink`` ``yellow`` ``green`` ``orange`` (or 青 桃 黄 緑 橙)   a goshiki colour's 20
  ``むすめふさほせ``, ``1ji``      the seven one-sound kimariji (一字決まり); ``2ji`` … ``6ji`` likewise
  ``あさ``, ``な``, ``あふ``       every poem whose 上の句 opens with these sounds (as heard or as spelt
                                on the card), e.g. ``な`` = the な group, ``あさぼらけ`` = 31 and 64
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import poems
from poems.kimariji import opens_with
from reader.base.errors import SelectionError

_HELP = ("use numbers (5, 1-20), colours (blue pink yellow green orange), "
         "kimariji groups (むすめふさほせ, 2ji … 6ji) or an opening sound (あさ, な)")
_JA_COLORS = {ja: name for name, ja in poems.COLOR_JA.items()}
_KANA = re.compile(r"^[\u3041-\u3096]+$")


def color_poems(name: str) -> tuple[int, ...]:
    key = _JA_COLORS.get(name, name.lower())
    if key not in poems.COLORS:
        raise SelectionError(f"unknown colour {name!r}: choose one of {', '.join(poems.COLORS)}")
    return poems.COLORS[key]


def _token(tok: str) -> set[int]:
    if tok == "all":
        return set(range(1, 101))
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", tok)
    if m:
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        if not (1 <= lo <= 100 and 1 <= hi <= 100):
            raise SelectionError(f"no poem {tok}: poems are numbered 1-100")
        if lo > hi:
            raise SelectionError(f"empty range {tok}: write the smaller number first")
        return set(range(lo, hi + 1))
    if tok.lower() in poems.COLORS or tok in _JA_COLORS:
        return set(color_poems(tok))
    m = re.fullmatch(r"([1-6])(?:ji|字)", tok)
    if m or tok == "むすめふさほせ":
        k = int(m.group(1)) if m else 1
        return {p.no for p in poems.all_poems() if len(p.kimariji_sound) == k}
    if _KANA.match(tok):
        found = {p.no for p in poems.all_poems() if opens_with(p.no, tok)}
        if not found:
            raise SelectionError(f"no poem's 上の句 opens with {tok!r}")
        return found
    raise SelectionError(f"unknown poem selection {tok!r}: {_HELP}")


def parse_selection(spec: str | None = None, colors: Iterable[str] = ()) -> tuple[int, ...]:
    """Poem numbers named by ``spec`` and ``colors`` (union); all 100 when both are empty."""
    chosen: set[int] = set()
    tokens = [t for t in re.split(r"[,\s、]+", spec or "") if t]
    for tok in tokens:
        chosen |= _token(tok)
    for c in colors:
        chosen |= set(color_poems(c))
    if not tokens and not list(colors):
        chosen = set(range(1, 101))
    return tuple(sorted(chosen))
