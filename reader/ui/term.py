"""Writing to the terminal for front ends below the CLI (no click there): one echo, and
tables whose columns line up on Japanese text.

A terminal gives a kana or a kanji two columns and an ASCII letter one, so a column padded by
counting characters (``f"{s:<8}"``) breaks as soon as a cell holds Japanese.  ``width`` counts
what the terminal shows (the ``wcwidth`` package: East Asian wide and full-width characters 2,
combining marks 0), ``pad`` fills a cell to a width, and ``table`` lays out rows so that every
column starts at the same terminal column on every line.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["echo", "width", "pad", "table"]


def echo(text: str = "", nl: bool = True, err: bool = False) -> None:
    """Write ``text`` (and a newline unless ``nl=False``) to stdout or stderr, flushed."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + ("\n" if nl else ""))
    stream.flush()


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal (わ 2, ``a`` 1, a combining mark 0).  A
    character with no width of its own (a control character) counts 0 rather than spoiling
    the sum."""
    from wcwidth import wcswidth, wcwidth

    w = wcswidth(text)
    if w >= 0:
        return w
    return sum(max(0, wcwidth(c)) for c in text)


def pad(text: str, cols: int, align: str = "<") -> str:
    """``text`` filled with spaces to ``cols`` terminal columns: ``<`` on the right, ``>`` on
    the left.  Text already wider is left as it is."""
    fill = " " * max(0, cols - width(text))
    return fill + text if align == ">" else text + fill


def table(rows: Sequence[Sequence[str]], align: str | None = None, gap: int = 2) -> list[str]:
    """``rows`` (the header first, if any) as lines whose columns line up by display width.
    ``align``: one ``<`` or ``>`` a column (default all ``<``); ``gap`` spaces between
    columns.  Trailing spaces are dropped."""
    if not rows:
        return []
    n = max(len(r) for r in rows)
    cells = [[str(c) for c in r] + [""] * (n - len(r)) for r in rows]
    widths = [max(width(r[i]) for r in cells) for i in range(n)]
    aligns = (align or "<" * n).ljust(n, "<")
    sep = " " * gap
    return [sep.join(pad(c, w, a) for c, w, a in zip(r, widths, aligns)).rstrip() for r in cells]
