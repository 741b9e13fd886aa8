"""Drawing the practice board: ``Scene`` (what the board shows, without pygame), ``Painter``
(draws a scene, redrawing only what changed) and ``Anim`` (a card in flight or shaking).

``Painter``: each card's look is a key; a frame redraws the rects whose key changed (cards,
animations, texts), and a full redraw (a phase change, the end screen) is spread over a few
frames in strips, so input is never held up by a long screen update.  Card faces come from
``reader.ui.torifuda.CardPainter`` (cached).  The window (``reader.practice.window``) owns the
screen and the loop; times (``now``) are passed in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import poems
from reader.practice import board as B
from reader.practice.games import Game

__all__ = ["Scene", "Painter", "Anim", "ba_rect"]

TATAMI = (198, 184, 120)
TATAMI_DARK = (176, 162, 100)
PANEL = (32, 44, 40)
TEXT = (240, 236, 220)
DIMTEXT = (170, 176, 166)
GOLD = (235, 190, 60)
RED = (210, 50, 40)
BLUE = (70, 140, 230)
SEND = (60, 170, 230)
#: the countdown numeral's height, design px (of 720)
COUNTDOWN_PX = 200
#: the frame of a card the session marked (``PracticeSession.marks``)
MARKS = {"take": GOLD, "fault": RED, "send": SEND}

ANIM_TAKE_S = 0.35
ANIM_SEND_S = 0.5
#: a fault (お手つき): the touched card shakes in place, framed red, then keeps its red frame
ANIM_FAULT_S = 0.5
FAULT_SHAKES = 3


@dataclass
class Anim:
    """A card moving: a flight from ``start`` to ``end`` (a take, a send), or with ``shake``
    (px) a shake in place at ``start`` that dies down (a fault); ``frame``: its frame colour."""

    poem: int
    start: B.Rect
    end: B.Rect
    t0: float
    dur: float
    upside_down: bool
    shake: float = 0.0
    frame: tuple[int, int, int] | None = None

    def rect_at(self, t: float) -> B.Rect | None:
        import math

        u = (t - self.t0) / self.dur
        if u >= 1.0:
            return None
        u = max(0.0, u)
        if self.shake:
            a = self.start
            dx = self.shake * (1 - u) * math.sin(2 * math.pi * FAULT_SHAKES * u)
            return B.Rect(a.x + dx, a.y, a.w, a.h)
        u = 1 - (1 - u) ** 3  # ease out
        a, b = self.start, self.end
        return B.Rect(a.x + (b.x - a.x) * u, a.y + (b.y - a.y) * u,
                      a.w + (b.w - a.w) * u, a.h + (b.h - a.h) * u)


def ba_rect(vp: B.Viewport, depth: int = 0) -> B.Rect:
    """Goshiki: where the ba's top card lies (``depth`` cards below the top lie a little up
    and to the left): beside the board on the right, just above the middle."""
    a, k, b = vp.area, vp.design_scale, vp.board
    cw, ch = vp.card_px()
    pad = vp.scale * 8 + 2
    step = 5 * k
    x = b.x + b.w + pad + 16 * k + (Scene.BA_SHOWN - 1) * step
    y = a.y + a.h / 2 - ch - 12 * k
    return B.Rect(x - depth * step, y - depth * step, cw, ch)


@dataclass
class Scene:
    """What the board shows, without pygame: territories (kyogi) or rows (goshiki), the
    looks of cards (dim, frames), animations, texts.  ``boxes()`` gives every card's px rect
    (worked out again only when the cards' places change)."""

    game: Game
    viewport: B.Viewport
    viewer: str = "A"
    territories: dict[str, B.Territory] = field(default_factory=dict)
    goshiki_hands: dict[str, tuple[int, ...]] = field(default_factory=dict)
    on_board: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dim: frozenset[int] = frozenset()
    frames: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    anims: list[Anim] = field(default_factory=list)
    kimariji: dict[int, str] | None = None
    backs: bool = False
    drag: tuple[int, float, float] | None = None  # (poem, x px, y px) of a card being dragged
    texts: dict[str, str] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)
    #: goshiki: the 場 (ba), bottom first (drawn as a pile beside the board, the top card up)
    ba: tuple[int, ...] = ()

    _boxes_key: tuple | None = field(default=None, repr=False, compare=False)
    _boxes: list = field(default_factory=list, repr=False, compare=False)

    def boxes(self) -> list[B.CardBox]:
        key = (tuple(sorted(self.territories.items())), tuple(sorted(self.on_board.items())),
               tuple(sorted(self.goshiki_hands.items())))
        if self._boxes_key == key:
            return self._boxes
        self._boxes_key, self._boxes = key, self._make_boxes()
        return self._boxes

    def _make_boxes(self) -> list[B.CardBox]:
        if self.game.territories:
            mm = B.kyogi_board(self.territories, self.viewer)
        else:
            mm = [c for c in B.goshiki_board(self.goshiki_hands, self.viewer)
                  if c.poem in self.on_board.get(c.owner, ())]
        return self.viewport.boxes(mm)

    #: how many of the ba's top cards are drawn (each a little lower and to the right)
    BA_SHOWN = 3

    def ba_rect(self, depth: int = 0) -> B.Rect:
        return ba_rect(self.viewport, depth)

    def pile_rect(self, player: str) -> B.Rect:
        """Where taken cards go: the player's side panel."""
        a, k = self.viewport.area, self.viewport.design_scale
        cw, ch = self.viewport.card_px()
        if player == self.viewer:
            return B.Rect(a.x + a.w - 8 * k - cw * 0.6, a.y + a.h - 8 * k - ch * 0.6, cw * 0.6, ch * 0.6)
        return B.Rect(a.x + 8 * k, a.y + 8 * k, cw * 0.6, ch * 0.6)


class Painter:
    """Draws a ``Scene`` onto the window, redrawing only what changed (see the module doc)."""

    STRIPS = 12

    def __init__(self, screen, viewport: B.Viewport):
        import pygame

        from reader.ui.torifuda import CardPainter
        from reader.ui.window import load_font

        self.pg = pygame
        self.screen = screen
        self.vp = viewport
        self.cards = CardPainter(viewport.card_px())
        k = viewport.design_scale
        self.font = load_font(max(10, round(22 * k)))
        self.small = load_font(max(9, round(17 * k)))
        self.big = load_font(max(12, round(40 * k)))
        #: the 3-2-1 before the reading: a numeral you see from across the room
        self.huge = load_font(max(24, round(COUNTDOWN_PX * k)))
        self.bg = self._background()
        self.drawn: dict = {}
        self.pending_full: list = []
        self.overlay = None  # the end screen (a surface over everything)
        self._sig = None
        self._had_anims = False
        #: called between repaints of a frame's rects (the window polls input there)
        self.between = lambda: None
        self.full()

    def _background(self):
        pg = self.pg
        surf = pg.Surface(self.screen.get_size())
        surf.fill(PANEL)
        b = self.vp.board
        pad = self.vp.scale * 8
        if self.vp.solo:  # alone: one territory, the message strip on the tatami above it
            mid = self.vp.middle_strip()
            pg.draw.rect(surf, TATAMI, (b.x - pad, mid.y - pad, b.w + 2 * pad,
                                        b.y + b.h - mid.y + 2 * pad), border_radius=6)
            if self.vp.territories:
                r = self.vp.to_px(B.Rect(0, B.BOARD_D - B.TERRITORY_D, B.TERRITORY_W,
                                         B.TERRITORY_D)).int_tuple()
                pg.draw.rect(surf, TATAMI_DARK, r, width=1)
            return surf
        pg.draw.rect(surf, TATAMI, (b.x - pad, b.y - pad, b.w + 2 * pad, b.h + 2 * pad),
                     border_radius=6)
        # the territories' outlines, faint (the 87 cm and the 3 rows)
        bw, bd = self.vp.board_mm
        if self.vp.board_mm == (B.BOARD_W, B.BOARD_D):
            for top in (0.0, B.TERRITORY_D + B.MIDDLE_GAP):
                r = self.vp.to_px(B.Rect(0, top, B.TERRITORY_W, B.TERRITORY_D)).int_tuple()
                pg.draw.rect(surf, TATAMI_DARK, r, width=1)
        mid = self.vp.middle_strip().int_tuple()
        pg.draw.line(surf, TATAMI_DARK, (mid[0], mid[1] + mid[3] // 2),
                     (mid[0] + mid[2], mid[1] + mid[3] // 2), 1)
        return surf

    def full(self) -> None:
        """Redraw everything, spread over the next frames in horizontal strips."""
        w, h = self.screen.get_size()
        step = -(-h // self.STRIPS)
        self.pending_full = [self.pg.Rect(0, y, w, min(step, h - y)) for y in range(0, h, step)]

    # -- what each thing looks like (a key per drawn item) ------------------------------------
    def _items(self, scene: Scene, now: float) -> dict:
        """key -> (rect (px ints), draw function)."""
        items = {}
        flying = {a.poem for a in scene.anims}
        dragged = scene.drag[0] if scene.drag else None
        for c in scene.boxes():
            if c.poem in flying or c.poem == dragged:
                continue
            look = (c.upside_down, c.poem in scene.dim, scene.frames.get(c.poem),
                    scene.kimariji.get(c.poem) if scene.kimariji else None, scene.backs)
            items[("card", c.poem)] = (c.rect.int_tuple(), look,
                                       (lambda c=c, look=look: self._card(c.poem, c.rect, *look)))
        shown = [c for c in scene.ba if c not in flying][-Scene.BA_SHOWN:]
        for depth, poem in enumerate(reversed(shown)):
            r = scene.ba_rect(depth)
            # (the key's order: the top card is drawn last, over the ones below it)
            items[("ba", len(shown) - depth)] = (
                r.int_tuple(), (poem,), (lambda poem=poem, r=r: self._card(
                    poem, r, False, False, None, None, False)))
        for a in list(scene.anims):
            r = a.rect_at(now)
            if r is None:
                scene.anims.remove(a)
                continue
            items[("anim", a.poem)] = (r.int_tuple(), (r.int_tuple(), a.upside_down, a.frame),
                                       (lambda a=a, r=r: self._card(a.poem, r, a.upside_down,
                                                                    False, a.frame, None, False)))
        if scene.drag:
            poem, x, y = scene.drag
            cw, ch = self.vp.card_px()
            r = B.Rect(x - cw / 2, y - ch / 2, cw, ch)
            items[("drag", poem)] = (r.int_tuple(), (round(x), round(y)),
                                     (lambda r=r, poem=poem: self._card(poem, r, False, False,
                                                                        GOLD, None, False)))
        for name, text in scene.texts.items():
            rect = self.text_rect(name)
            if rect is not None and text:
                items[("text", name)] = (rect, text, (lambda n=name, t=text, r=rect:
                                                      self._text(n, t, r)))
        return items

    def _card(self, poem, rect, upside_down, dim, frame, kimariji, back):
        cp = self.cards
        if back:
            img = cp.back(poem, upside_down=upside_down, dim=dim, frame=frame)
        else:
            img = cp.face(poem, upside_down=upside_down, dim=dim, frame=frame, kimariji=kimariji,
                          edge=self.edge(poem))
        size = (max(8, round(rect.w)), max(8, round(rect.h)))
        if size != cp.size:
            # a card in flight changing size (a take shrinking to the pile): the cached face,
            # scaled — drawing its text at every new size cost 1-3 ms a frame
            img = self._scaled(img, size)
        self.screen.blit(img, (round(rect.x), round(rect.y)))

    def _scaled(self, img, size):
        try:
            return self.pg.transform.smoothscale(img, size)
        except ValueError:  # (smoothscale wants 24 or 32 bits a pixel)
            return self.pg.transform.scale(img, size)

    def edge(self, poem):
        """The card's border: green (a torifuda), or the set's colour on a goshiki board."""
        from reader.ui.torifuda import GOSHIKI_RGB, GREEN

        if self.vp.territories:
            return GREEN
        return GOSHIKI_RGB.get(poems.poem(poem).color, GREEN)

    def text_rect(self, name):
        a, k = self.vp.area, self.vp.design_scale
        mid = self.vp.middle_strip()
        b = self.vp.board
        if name == "countdown":  # a disc in the middle of the board, the numeral on it
            side = round(COUNTDOWN_PX * 1.25 * k)
            cx, cy = b.x + b.w / 2, b.y + b.h / 2
            return (round(cx - side / 2), round(cy - side / 2), side, side)
        if name == "status":
            if not self.vp.territories and not self.vp.solo:
                # goshiki: no gap in the middle (alone: the strip of tatami above the rows)
                pad = self.vp.scale * 8 + 2
                return (round(a.x + 8 * k), round(a.y + a.h / 2 - 20 * k),
                        round(b.x - a.x - pad - 16 * k), round(40 * k))
            return (round(mid.x), round(mid.y), round(mid.w), round(mid.h))
        pad = self.vp.scale * 8 + 2  # (the tatami reaches 8 mm past the board)
        if name == "near":
            return (round(b.x + b.w + pad), round(a.y + a.h / 2 + 4 * k),
                    round(a.x + a.w - b.x - b.w - pad), round(a.h / 2 - 80 * k))
        if name == "far":
            return (round(a.x), round(a.y + 80 * k), round(b.x - a.x - pad), round(a.h / 2 - 84 * k))
        if name == "ba":  # the label above the ba's pile
            top = ba_rect(self.vp, Scene.BA_SHOWN - 1).y
            return (round(b.x + b.w + pad), round(top - 30 * k), round(a.x + a.w - b.x - b.w - pad),
                    round(26 * k))
        return None

    def _text(self, name, text, rect):
        pg = self.pg
        x, y, w, h = rect
        if name == "countdown":
            pg.draw.circle(self.screen, PANEL, (x + w // 2, y + h // 2), w // 2)
            pg.draw.circle(self.screen, GOLD, (x + w // 2, y + h // 2), w // 2,
                           width=max(2, w // 40))
            img = self.huge.render(text, True, GOLD)
            self.screen.blit(img, img.get_rect(center=(x + w // 2, y + h // 2)))
            return
        font = self.font if name == "status" else self.small
        colour = TEXT
        if name == "status":
            on_tatami = self.vp.territories or self.vp.solo
            img = font.render(text, True, (30, 30, 24) if on_tatami else TEXT)
            if img.get_width() > w:
                img = pg.transform.smoothscale(img, (w, max(1, img.get_height() * w // img.get_width())))
            self.screen.blit(img, img.get_rect(center=(x + w // 2, y + h // 2)))
            return
        yy = y
        for line in text.split("\n"):
            img = font.render(line, True, colour)
            if img.get_width() > w - 4:
                img = pg.transform.smoothscale(img, (w - 4, max(1, img.get_height() * (w - 4)
                                                                // img.get_width())))
            self.screen.blit(img, (x + 2, yy))
            yy += font.get_linesize()

    # -- a frame ------------------------------------------------------------------------------
    def dirty(self, scene: Scene, now: float) -> list:
        """What changed since the last frame: the rects to repaint (``paint`` each, then put
        it on screen).  At most one strip of a pending full redraw is added per frame."""
        pg = self.pg
        boxes = scene.boxes()
        sig = (id(boxes), scene.dim, tuple(scene.frames.items()), tuple(scene.texts.items()),
               scene.drag, scene.backs, id(scene.kimariji), id(self.overlay))
        if sig == self._sig and not scene.anims and not self.pending_full and not self._had_anims:
            return []  # nothing changed: no work this frame
        self._sig, self._had_anims = sig, bool(scene.anims)
        items = self._items(scene, now)
        dirty = []
        for key in set(self.drawn) | set(items):
            old, new = self.drawn.get(key), items.get(key)
            if old is not None and new is not None and old[0] == new[0] and old[1] == new[1]:
                continue
            # (a pixel of margin: a card drawn at a fractional rect may round one wider)
            if old is not None:
                dirty.append(pg.Rect(old[0]).inflate(2, 2))
            if new is not None:
                dirty.append(pg.Rect(new[0]).inflate(2, 2))
        if self.pending_full:
            dirty.append(self.pending_full.pop(0))
        self.drawn = {k: (v[0], v[1]) for k, v in items.items()}
        self._order = sorted(items.items(), key=lambda kv: (
            {"card": 0, "ba": 0, "text": 1, "anim": 2, "drag": 3}[kv[0][0]],
            kv[0][1] if kv[0][0] == "ba" else 0))
        self._rects = [pg.Rect(v[0]) for _, v in self._order]
        return _dedupe(dirty) if dirty else []

    def paint(self, d) -> None:
        """Repaint rect ``d`` of the screen: background, the items over it, the overlay."""
        self.screen.set_clip(d)
        self.screen.blit(self.bg, d, d)
        for i in d.collidelistall(self._rects):  # (in drawing order)
            self._order[i][1][2]()
        if self.overlay is not None:
            self.screen.blit(self.overlay, d, d)
        self.screen.set_clip(None)

    def frame(self, scene: Scene, now: float):
        """Repaint what changed; returns the rects (for one ``display.update``)."""
        rects = self.dirty(scene, now)
        for d in rects:
            self.paint(d)
            self.between()
        return rects


def _dedupe(rects):
    """The dirty rects without repeats (a card that changed its look in place gives the same
    rect twice) and without rects inside another one (a strip of a full redraw).  Linear-ish:
    merging overlaps pairwise cost ~1 ms a frame with 50 cards changing."""
    seen = set()
    out = []
    for r in sorted(rects, key=lambda r: -r.w * r.h):
        t = tuple(r)
        if t in seen:
            continue
        seen.add(t)
        if out and r.w * r.h < 20000 and r.collidelist([o for o in out if o.contains(r)]) >= 0:
            continue
        out.append(r)
    return out
