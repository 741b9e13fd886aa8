"""Torifuda (取り札) drawn by the app: the card you grab, as printed.

A torifuda carries the poem's 下の句 in hiragana without dakuten (``Poem.torifuda``: よはり,
かはく as printed), in 3 vertical columns read right to left — 5 kana, 5 kana, the rest (14
kana: 5/5/4; the 15-kana cards 5/5/5; poem 21, the one 16-kana card, 5/5/6) — on a cream face
with a green border, in a Japanese serif (明朝) face.

Options:
  - ``kimariji``: the card's kimariji (as it is now, card form) printed small under the text,
    for beginners;
  - ``back``: the goshiki card back, which shows the 上の句 (one ku a column, right to left) on
    the colour of the card's set — a goshiki player may look at it between reads;
  - ``upside_down``: the opponent's cards, turned to face them;
  - ``dim`` (cards that can no longer be the one being read, ``--hints``), ``frame`` (a
    coloured outline: a selection, the highlighted send, right/wrong feedback).

Who calls what: the practice board (``reader.practice.window``) asks a ``CardPainter`` of its
card size for ready surfaces (cached: a frame only blits); the speed and memory drills call
``draw_torifuda(surface, rect, poem)``.

Fonts (``serif_font_path``): Noto Serif CJK JP (Debian ``fonts-noto-cjk``), else IPAex Mincho
(``fonts-ipaexfont-mincho``, which ``scripts/setup`` installs), else any installed font that
fontconfig says covers Japanese, else the drills' Gothic (``reader.ui.window.font_path``).

pygame is imported inside functions; a ``pygame.Surface`` can be drawn without a display, so
the tests render cards off screen.
"""
from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

from reader.base.errors import DeviceError

__all__ = ["SERIF_FONTS", "serif_font_path", "load_serif", "columns", "kami_columns",
           "CardPainter", "draw_torifuda", "CARD_MM", "GREEN", "FACE", "INK", "KIMARIJI_INK",
           "GOSHIKI_RGB"]

#: a torifuda's size, mm (width, height): 52 x 73
CARD_MM = (52.0, 73.0)

SERIF_FONTS = (
    Path("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"),  # fonts-noto-cjk
    Path("/usr/share/fonts/opentype/ipaexfont-mincho/ipaexm.ttf"),  # fonts-ipaexfont-mincho
    Path("/usr/share/fonts/truetype/fonts-japanese-mincho.ttf"),  # Debian's alternative link
)

GREEN = (34, 104, 62)  # the green paper a torifuda's face is mounted on
FACE = (246, 238, 214)  # the drills' paper colour (reader.ui.window.PAPER)
INK = (18, 18, 18)
KIMARIJI_INK = (190, 40, 30)
DIM_RGBA = (30, 40, 36, 165)
#: goshiki colours (the card backs and borders of a set)
GOSHIKI_RGB = {"blue": (40, 80, 170), "pink": (225, 110, 150), "yellow": (230, 190, 40),
               "green": (40, 140, 70), "orange": (230, 120, 30)}


@lru_cache(maxsize=1)
def serif_font_path() -> str | None:
    """A font file with Japanese glyphs, serif first; None if the machine has none."""
    for p in SERIF_FONTS:
        if p.is_file():
            return str(p)
    try:  # any Japanese font fontconfig knows (a machine set up by hand)
        out = subprocess.run(["fc-list", ":lang=ja", "file"], capture_output=True, text=True,
                             timeout=5).stdout
        files = sorted(ln.strip().rstrip(":") for ln in out.splitlines() if ln.strip())
        serif = [f for f in files if any(k in f.lower() for k in ("mincho", "serif", "明朝"))]
        if serif or files:
            return (serif or files)[0]
    except (OSError, subprocess.SubprocessError):
        pass
    from reader.ui.window import font_path

    return font_path()


@lru_cache(maxsize=64)
def load_serif(px: int):
    """A pygame Font of ``px`` pixels from ``serif_font_path`` (DeviceError if none)."""
    import pygame

    if not pygame.font.get_init():
        pygame.font.init()
    path = serif_font_path()
    if path is None:
        raise DeviceError("no Japanese font for the board: install fonts-ipaexfont-mincho "
                          "(or fonts-noto-cjk)")
    return pygame.font.Font(path, max(4, int(px)))


def columns(text: str) -> tuple[str, ...]:
    """A torifuda's text in its printed columns, first (rightmost) first: 5 kana, 5 kana, the
    rest (``ありあけのつきをまちいてつるかな`` -> ありあけの / つきをまち / いてつるかな)."""
    return tuple(c for c in (text[:5], text[5:10], text[10:]) if c)


def kami_columns(no: int) -> tuple[str, ...]:
    """The goshiki card back: the 上の句 in historical kana, one ku a column."""
    import poems

    return tuple(poems.poem(no).kana[:3])


def _draw_columns(surf, cols, font, box, ink) -> None:
    """Vertical text: ``cols`` right to left inside ``box``, every column top-aligned on one
    pitch (the longest column fills the height)."""
    x0, y0, w, h = box
    longest = max(len(c) for c in cols)
    pitch = h / longest
    col_w = w / len(cols)
    for i, col in enumerate(cols):
        cx = x0 + w - col_w * (i + 0.5)
        for j, ch in enumerate(col):
            g = font.render(ch, True, ink)
            surf.blit(g, g.get_rect(center=(round(cx), round(y0 + pitch * (j + 0.5)))))


class CardPainter:
    """Card surfaces of one size (``size`` px, portrait), made once and cached.

    ``face(poem, ...)`` and ``back(poem, ...)`` return ``pygame.Surface`` s to blit; asking
    again with the same options costs a dict lookup, so a frame with 50 cards on the board
    draws no text.
    """

    def __init__(self, size: tuple[int, int]):
        w, h = int(size[0]), int(size[1])
        if w < 8 or h < 8:
            raise ValueError(f"a card of {w}x{h} px is too small to draw")
        self.size = (w, h)
        self.border = max(2, round(w * 0.065))
        self._cache: dict = {}

    def _text_box(self, with_kimariji: bool):
        w, h = self.size
        b = self.border
        pad_x, pad_y = max(1, round(w * 0.06)), max(1, round(h * 0.05))
        bottom = round(h * 0.17) if with_kimariji else 0
        return (b + pad_x, b + pad_y, w - 2 * (b + pad_x), h - 2 * (b + pad_y) - bottom)

    def _font_for(self, cols, box):
        """One glyph size for every card of this size (a 6-kana column is set tighter, not
        smaller, as printed)."""
        _, _, bw, bh = box
        px = min(bh / max(5.6, max(len(c) for c in cols) * 0.95), bw / max(3, len(cols)) * 0.9)
        return load_serif(max(4, int(px)))

    def _finish(self, surf, upside_down: bool, dim: bool, frame):
        import pygame

        if frame is not None:
            fw = max(3, round(self.size[0] * 0.08))
            pygame.draw.rect(surf, frame, surf.get_rect(), width=fw,
                             border_radius=max(2, self.size[0] // 16))
        if dim:
            veil = pygame.Surface(self.size, pygame.SRCALPHA)
            veil.fill(DIM_RGBA)
            surf.blit(veil, (0, 0))
        if upside_down:
            surf = pygame.transform.rotate(surf, 180)
        return surf

    def face(self, poem: int, *, kimariji: str | None = None, upside_down: bool = False,
             dim: bool = False, frame=None, edge=GREEN):
        """The torifuda of ``poem``; ``edge``: the border colour (goshiki: the set's colour)."""
        key = ("face", poem, kimariji, upside_down, dim, frame, edge)
        got = self._cache.get(key)
        if got is not None:
            return got
        import pygame

        import poems

        w, h = self.size
        surf = pygame.Surface(self.size)
        surf.fill(edge)
        b = self.border
        pygame.draw.rect(surf, FACE, (b, b, w - 2 * b, h - 2 * b),
                         border_radius=max(1, b // 2))
        cols = columns(poems.poem(poem).torifuda)
        box = self._text_box(kimariji is not None)
        _draw_columns(surf, cols, self._font_for(cols, box), box, INK)
        if kimariji:
            kf = load_serif(max(6, round(h * 0.11)))
            img = kf.render(kimariji, True, KIMARIJI_INK)
            if img.get_width() > w - 2 * b - 4:
                img = pygame.transform.smoothscale(
                    img, (w - 2 * b - 4, max(1, img.get_height() * (w - 2 * b - 4)
                                             // img.get_width())))
            surf.blit(img, img.get_rect(midbottom=(w // 2, h - b - max(1, h // 40))))
        surf = self._finish(surf, upside_down, dim, frame)
        self._cache[key] = surf
        return surf

    def back(self, poem: int, *, upside_down: bool = False, dim: bool = False, frame=None):
        """The goshiki card back: the 上の句 on the colour of the poem's set."""
        key = ("back", poem, upside_down, dim, frame)
        got = self._cache.get(key)
        if got is not None:
            return got
        import pygame

        import poems

        colour = GOSHIKI_RGB.get(poems.poem(poem).color, GREEN)
        light = tuple(c + (255 - c) * 3 // 4 for c in colour)
        w, h = self.size
        surf = pygame.Surface(self.size)
        surf.fill(colour)
        b = self.border
        pygame.draw.rect(surf, light, (b, b, w - 2 * b, h - 2 * b), border_radius=max(1, b // 2))
        cols = kami_columns(poem)
        box = self._text_box(False)
        _draw_columns(surf, cols, self._font_for(cols, box), box, INK)
        surf = self._finish(surf, upside_down, dim, frame)
        self._cache[key] = surf
        return surf

    def clear(self) -> None:
        self._cache.clear()


_PAINTERS: dict[tuple[int, int], CardPainter] = {}


def painter(size: tuple[int, int]) -> CardPainter:
    """The shared painter for cards of ``size`` px."""
    size = (int(size[0]), int(size[1]))
    p = _PAINTERS.get(size)
    if p is None:
        p = _PAINTERS[size] = CardPainter(size)
    return p


def draw_torifuda(surface, rect, poem: int, *, kimariji: str | None = None, frame=None,
                  upside_down: bool = False, dim: bool = False) -> None:
    """Draw ``poem``'s torifuda into ``rect`` (x, y, w, h) of ``surface``: the largest card of
    the real 52:73 proportions that fits, centred."""
    x, y, w, h = rect
    cw = min(w, h * CARD_MM[0] / CARD_MM[1])
    ch = cw * CARD_MM[1] / CARD_MM[0]
    img = painter((round(cw), round(ch))).face(poem, kimariji=kimariji, frame=frame,
                                               upside_down=upside_down, dim=dim)
    surface.blit(img, (x + (w - img.get_width()) // 2, y + (h - img.get_height()) // 2))
