"""The torifuda of a web match as images, drawn by the project's own card renderer.

The board page (``karuta practice --web``) shows each card as the pygame board does: the
face ``reader.ui.torifuda.CardPainter`` draws (the 下の句 in kana, 3 columns, a Japanese serif,
the green border), not text set by the phone (which would need a 4 MB Japanese font on the
device, or whatever font it has).  The server renders each card of the match once a size, as
PNG (or WebP, smaller, where this pygame can write it), and serves it behind the match's token
as it serves the clips (``/card/<token>/<width>/<poem>.<ext>``); the page picks the size that
fits its card boxes at its ``devicePixelRatio`` and turns the far side's cards itself (CSS,
180°), so one image serves both sides.

``WIDTHS``: two sizes, px wide (52:73 cards): 96 (a phone's cards, or a tablet's at 1x) and
168 (a tablet's at 2x, a phone's at 3x).  Rendering is cheap (``scripts/bench_web_cards.py``
measures it) and cached for the match; a lock keeps pygame on one thread at a time (the
server renders from its executor's threads).
"""
from __future__ import annotations

import io
import threading
from collections.abc import Iterable

from reader.ui.torifuda import CARD_MM

__all__ = ["WIDTHS", "CardImages", "card_size", "image_format"]

#: the card widths the page may ask for, px (height: 73/52 of it)
WIDTHS = (96, 168)


def card_size(width: int) -> tuple[int, int]:
    """A card ``width`` px wide: (width, height) at the real 52:73."""
    return width, round(width * CARD_MM[1] / CARD_MM[0])


_FORMAT: list[str] = []


def image_format() -> str:
    """``"webp"`` if this pygame writes WebP, else ``"png"`` (asked once)."""
    if not _FORMAT:
        import pygame

        fmt = "png"
        try:
            buf = io.BytesIO()
            pygame.image.save(pygame.Surface((4, 4)), buf, "x.webp")
            if buf.getvalue()[8:12] == b"WEBP":
                fmt = "webp"
        except (pygame.error, ValueError, TypeError):
            pass
        _FORMAT.append(fmt)
    return _FORMAT[0]


class CardImages:
    """The faces of ``cards`` (the match's: every card that lies, or may come to lie, on the
    board) as encoded images.  ``image(poem, width)``: the bytes, or a line saying why not."""

    def __init__(self, cards: Iterable[int], widths: tuple[int, ...] = WIDTHS):
        self.cards = frozenset(int(c) for c in cards)
        self.widths = tuple(widths)
        self.format = image_format()
        self.content_type = f"image/{self.format}"
        self._cache: dict[tuple[int, int], bytes] = {}
        self._lock = threading.Lock()

    def image(self, poem: int, width: int) -> bytes | str:
        if width not in self.widths:
            return "no cards of that size"
        if poem not in self.cards:
            return "not a card of this match"
        key = (poem, width)
        with self._lock:
            got = self._cache.get(key)
            if got is None:
                got = self._cache[key] = self._render(poem, width)
        return got

    def _render(self, poem: int, width: int) -> bytes:
        import pygame

        from reader.ui.torifuda import painter

        surf = painter(card_size(width)).face(poem)
        buf = io.BytesIO()
        pygame.image.save(surf, buf, f"card.{self.format}")
        return buf.getvalue()

    def render_all(self) -> None:
        """Every card at every size (the server does it ahead, off the page's way)."""
        for w in self.widths:
            for c in sorted(self.cards):
                self.image(c, w)
