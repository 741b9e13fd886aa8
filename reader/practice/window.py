"""The practice board window: the live match loop (``karuta practice`` with a human seat).

Phases::

    arrange ──space / START──> memorize ──time up, s, SKIP──> reading ──match over──> over
    (drag your own cards)      (countdown; kyogi 15 min,      (jo-ka, then the plan;   (score,
                                goshiki 30 s)                  send picking)            who took what)

Reading: the match's plan plays through the existing outputs (``reader.reading.player.open_output``,
sounddevice by default) from a live ``PlanCursor``; kyogi waits after each 上の句 for the take
(the wait ends once the take is settled and any send is made, or ``take_ms`` after the 上の句
with no take), goshiki reads on.  Input is polled about every 1 ms on the window's thread
between frames (``reader.drills.taps.WindowLoop``/``WindowTaps``): a click or touch is stamped as it
is taken in, mapped to the plan frame heard at that instant (``reader.drills.taps.TapMapper``, DAC
times), the calibration subtracted — exactly as the speed drill times a tap — and handed to
the match (``PracticeMatch.touch``), which judges it by ``reader.match.rules``.  Bots' touches
(``bot_touches``) are delivered when the heard frame reaches theirs.  A read closes when the
next 上の句 starts (goshiki) or when the kyogi wait ends; the log is saved after every read.

``--vs human``: two players on one screen; a touch belongs to the player on whose half of the
board it starts (the bottom half is A).  Sends: a human who owes a card picks it on the board
(the bot's choice is highlighted: Enter or space sends it).

``--hints``: as each mora of the 上の句 is heard (its onset on the voice's mora timeline, mapped
through the DAC clock), the cards on the board that no longer match what was heard dim.

Drawing: only what changed is redrawn (``Painter``): each card's look is a key; a frame
redraws the rects whose key changed (cards, animations, texts), and a full redraw (a phase
change, the end screen) is spread over a few frames in strips, so input is never held up by a
long screen update.  Card faces come from ``reader.ui.torifuda.CardPainter`` (cached).
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import poems
from reader.practice import board as B

__all__ = ["Scene", "Painter", "BoardWindow", "DEFAULT_MEMORIZE_MIN", "ruled_in", "morae_heard"]

NO_DISPLAY = ("no display for the practice board: run it on a screen, or play bots against "
              "each other with --bot-vs-bot A,B")
#: memorisation, minutes (rules.md: kyogi 15 min; goshiki about 30 s, seed 004)
DEFAULT_MEMORIZE_MIN = {"kyogi": 15.0, "goshiki": 0.5}
SIZE = (1280, 720)

TATAMI = (198, 184, 120)
TATAMI_DARK = (176, 162, 100)
PANEL = (32, 44, 40)
TEXT = (240, 236, 220)
DIMTEXT = (170, 176, 166)
GOLD = (235, 190, 60)
RED = (210, 50, 40)
BLUE = (70, 140, 230)
SEND = (60, 170, 230)

#: how often the reading loop looks at the match (bots, hints, closing), s
TICK_S = 0.008
#: pixels put on screen per display.update call (about 4 cards at 1280x720)
UPDATE_PX = 25_000
#: a taken card's read closes this long after the take (and the simultaneous window): the
#: gold frame shows, and a touch that came in just after is still judged (dead)
SETTLE_S = 0.4
ANIM_TAKE_S = 0.35
ANIM_SEND_S = 0.5
#: a fault (お手つき): the touched card shakes in place, framed red, then keeps its red frame
ANIM_FAULT_S = 0.5
FAULT_SHAKES = 3


# ------------------------------------------------------------------------------ live narrowing
def morae_heard(morae: tuple[int, ...], start: int, heard: float) -> int:
    """How many morae of a 上の句 have begun by plan frame ``heard`` (``morae``: their onset
    frames, from the voice's layout)."""
    if heard < start:
        return 0
    return sum(1 for f in morae if f <= heard)


def ruled_in(cards, read_poem: int, k: int) -> frozenset[int]:
    """The cards of ``cards`` that can still be ``read_poem`` once its first ``k`` morae were
    heard: those whose 上の句 opens with the same ``k`` sounds (as heard: を→お, あふ→おお ...).
    ``--hints`` dims the others."""
    said = _opening(read_poem)[:k]
    return frozenset(c for c in cards if _opening(c)[:k] == said)


@lru_cache(maxsize=None)
def _opening(no: int) -> tuple[str, ...]:
    from poems.kimariji import sound_morae

    return sound_morae(poems.poem(no).kami_reading)


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
    looks of cards (dim, frames), animations, texts.  ``boxes()`` gives every card's px rect."""

    rules: str
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

    def boxes(self) -> list[B.CardBox]:
        key = (tuple(sorted(self.territories.items())), tuple(sorted(self.on_board.items())),
               tuple(sorted(self.goshiki_hands.items())))
        if getattr(self, "_boxes_key", None) == key:
            return self._boxes
        self._boxes_key, self._boxes = key, self._make_boxes()
        return self._boxes

    def _make_boxes(self) -> list[B.CardBox]:
        if self.rules == "kyogi":
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
            if self.vp.kyogi:
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
            rect = self._text_rect(name)
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

        if self.vp.kyogi:
            return GREEN
        return GOSHIKI_RGB.get(poems.poem(poem).color, GREEN)

    def _text_rect(self, name):
        a, k = self.vp.area, self.vp.design_scale
        mid = self.vp.middle_strip()
        b = self.vp.board
        if name == "status":
            if not self.vp.kyogi and not self.vp.solo:
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
        font = self.font if name == "status" else self.small
        colour = TEXT
        if name == "status":
            on_tatami = self.vp.kyogi or self.vp.solo
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


# ------------------------------------------------------------------------------ the live loop
def _freeze_heap() -> None:
    """Collect, then move every object alive now (fonts, card surfaces, poems, the plan, the
    modules) out of the garbage collector's reach (``gc.freeze``): a full collection over all
    of them held the window's thread for 20-30 ms; later ones only walk what was made since."""
    import gc

    gc.collect()
    gc.freeze()


class LogWriter:
    """Writes the newest log text on a thread of its own (``atomic_write_text``: temp file,
    fsync, rename), so the window's loop never waits for the disk.  ``put`` keeps only the
    newest text if the disk is slower than the reads; ``close`` writes what is left and
    re-raises a write error (an ``OutputError`` line) on the caller's thread."""

    def __init__(self, path):
        import threading

        self.path = path
        self._text: str | None = None
        self._cv = threading.Condition()
        self._closed = False
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="karuta-log", daemon=True)
        self._thread.start()

    def put(self, text: str) -> None:
        with self._cv:
            self._text = text
            self._cv.notify()

    def _run(self):
        from reader.base.files import atomic_write_text

        while True:
            with self._cv:
                while self._text is None and not self._closed:
                    self._cv.wait()
                text, self._text = self._text, None
                if text is None and self._closed:
                    return
            try:
                atomic_write_text(self.path, text)
            except Exception as e:  # kept for close(): the loop must not die
                self.error = e

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error


class BoardWindow:
    """A match in a window.  ``run()`` plays it to the end (or until the player quits).

    ``output``: an opened output (``open_output``); ``calibration_ms``: this device's delay;
    ``on_event(name, data)``: tells tests and benchmarks what happens ("phase", "read",
    "touch", "closed", "drawn").
    """

    def __init__(self, m, output, *, log_file=None, hints: bool = False,
                 memorize_min: float | None = None, calibration_ms: float = 0.0,
                 show_kimariji: bool = False, size=SIZE, fullscreen: bool = False,
                 on_event: Callable[[str, object], None] | None = None, db=None,
                 session_id: str | None = None):
        self.m = m
        self.output = output
        self.log_file = log_file
        self.hints = hints
        self.memorize_s = 60.0 * (DEFAULT_MEMORIZE_MIN[m.rules] if memorize_min is None
                                  else memorize_min)
        self.calibration_ms = float(calibration_ms)
        self.show_kimariji = show_kimariji
        self.size = size
        self.fullscreen = fullscreen
        self.notify = on_event or (lambda name, data: None)
        self.db = db
        self.session_id = session_id
        self.humans = [p for p, s in m.seats.items() if s.kind == "human"]
        self.phase = "arrange" if m.index == 0 else "memorize"
        self.quit = False
        self.rate = m.plan.sample_rate
        self.take_s = m.plan.settings.get("take_ms", 3000) / 1000.0
        seed = m.extra.get("seed", 0)
        self.rng = random.Random(f"{seed}/place")
        self.cursor = None
        self.mapper = None
        self.gate = None  # the "get ready" before the reading (reader.drills.taps.SettleGate)
        self._read_index = None
        self._bots: list = []
        self._bot_i = 0
        self._wait_since = None
        self._heard_k = -1
        self._memo_end = None
        self._send_pick: list[int] = []
        self._drag = None
        self._message = ""
        self._events: list = []  # input taken in while drawing
        self._writer = None
        self._done: set[int] = set()  # poems whose read is closed (and sends made)
        self._status_at = None
        self._last_poll_ns = 0
        self._next_tick = 0.0

    # -- set-up -------------------------------------------------------------------------------
    def _open(self):
        from reader.drills.taps import WindowLoop, WindowTaps
        from reader.ui.window import import_pygame, open_window

        from reader.base.errors import DeviceError

        try:
            screen = open_window(self.size, "karuta · practice")
        except DeviceError as e:
            raise DeviceError(f"{NO_DISPLAY} ({str(e).rpartition('(')[2].rstrip(')')})") from None
        pg = import_pygame()
        if self.fullscreen:
            screen = pg.display.set_mode((0, 0), pg.FULLSCREEN)
        self.pg = pg
        self.screen = screen
        if self.m.rules == "kyogi":
            self.vp = B.kyogi_viewport(screen.get_size(), solo=self.m.state.solo)
        else:
            self.vp = B.goshiki_viewport(screen.get_size(), solo=self.m.state.solo)
        self.scene = Scene(self.m.rules, self.vp, viewer="A")
        self._layout_board()
        self.painter = Painter(screen, self.vp)
        self.painter.between = self._poll_between
        self._prerender()
        self.taps = WindowTaps(drag=True)
        self.loop = WindowLoop(self.taps, self._draw, fps=60.0)
        _freeze_heap()

    def _prerender(self):
        """Make every card surface the match can show before the loop starts (text rendering
        is the slow part of drawing a card: ~1-3 ms each)."""
        cp = self.painter.cards
        kim = self.scene.kimariji or {}
        for c in self.scene.boxes():
            edge = self.painter.edge(c.poem)
            k = kim.get(c.poem)
            ud = c.upside_down
            cp.face(c.poem, upside_down=ud, edge=edge, kimariji=k)
            if self.hints:
                cp.face(c.poem, upside_down=ud, dim=True, edge=edge, kimariji=k)
            for fr in (GOLD, RED, SEND):
                cp.face(c.poem, upside_down=ud, frame=fr, edge=edge, kimariji=k)
            _opening(c.poem)
        # first calls that load or fill something, made now rather than during the reading:
        # numpy's median (the DAC-time model of every heard frame: ~12 ms the first time) and
        # the bots' view of each card's opening sounds
        import numpy

        from reader.practice.bot import sounds_of

        numpy.median(numpy.zeros(3))
        for n in self.m.plan.universe:
            sounds_of(n)

    def _layout_board(self):
        m, sc = self.m, self.scene
        board = m.board
        if m.rules == "kyogi":
            read = m.order[:m.index]
            for p in m.players:
                sc.territories[p] = B.place(board[p], self.rng, universe=m.plan.universe,
                                            read=read)
        else:
            hands = {p: list(m.deal.hands[p]) for p in m.players}
            for h in hands.values():
                self.rng.shuffle(h)
            sc.goshiki_hands = {p: tuple(h) for p, h in hands.items()}
            sc.on_board = dict(board)
        self._refresh_kimariji()

    def _refresh_kimariji(self):
        if not self.show_kimariji:
            return
        from poems.kimariji import kimariji

        k = kimariji(self.m.plan.universe, self.m.order[:self.m.index])
        self.scene.kimariji = {n: v.card for n, v in k.items()}

    # -- drawing ------------------------------------------------------------------------------
    def _poll_between(self):
        now = time.perf_counter_ns()
        if now - self._last_poll_ns > 400_000:
            self._events += self.taps.pump()
            self._last_poll_ns = now

    def _draw(self):
        """One frame: repaint the changed rects and put them on screen in a few
        ``display.update`` calls of at most ``UPDATE_PX`` pixels, polling input between them
        (one update is a round trip to the X server: one per rect costs more, one for 50
        cards holds input up for several ms)."""
        pg = self.pg
        self._last_poll_ns = time.perf_counter_ns()
        chunk, area = [], 0
        dirty = self.painter.dirty(self.scene, time.perf_counter())
        self._poll_between()
        for d in dirty:
            self.painter.paint(d)
            self._poll_between()
            chunk.append(d)
            area += d.w * d.h
            if area >= UPDATE_PX:
                pg.display.update(chunk)
                self._events += self.taps.pump()
                self._last_poll_ns = time.perf_counter_ns()
                chunk, area = [], 0
        if chunk:
            pg.display.update(chunk)
        return []

    def _set_text(self, name, text):
        self.scene.texts[name] = text

    def _panels(self):
        m = self.m
        st = m.state
        for p, name in (("A", "near"), ("B", "far")):
            seat = m.seats[p]
            if st.solo:
                if p == "A":
                    taken, missed, faults = st.solo_score()
                    self._set_text(name, f"alone\n{self._left()} left\n{taken} taken\n"
                                         f"{missed} missed\n{faults} fault"
                                         f"{'s' if faults != 1 else ''}")
                continue
            who = {"human": "you" if len(self.humans) == 1 else f"player {p}",
                   "bot": f"bot {seat.level}", "none": "(empty)"}[seat.kind]
            if m.rules == "kyogi":
                line = f"{p} · {who}\n{st.count(p)} left"
            else:
                line = f"{p} · {who}\n{st.count(p)} taken"
            self._set_text(name, line)

    def _left(self) -> int:
        """Alone: your cards still to be read (kyogi: those left in your territory)."""
        m = self.m
        if m.rules == "kyogi":
            return m.state.count("A")
        return sum(1 for c in m.deal.hands["A"] if c not in m.state.read_poems)

    # -- phases -------------------------------------------------------------------------------
    def _set_phase(self, phase):
        self.phase = phase
        self.notify("phase", phase)

    def _start_memorize(self):
        self._set_phase("memorize")
        self._memo_end = time.perf_counter() + self.memorize_s
        self.scene.drag = None

    def _start_reading(self):
        from audio.render import PlanCursor
        from reader.drills.taps import TapMapper

        self._set_phase("reading")
        start = 0
        if self.m.index > 0:  # resumed: start at the 間 before the current read's 上の句
            cur = self.m.current()
            segs = self.m.plan.segments
            k = next(i for i, s in enumerate(segs) if s is cur.kami or (
                s.kind == "kami" and s.poem == cur.poem))
            start = k - 1 if k > 0 and segs[k - 1].kind == "ma" else k
        self.cursor = PlanCursor(self.m.plan, self.m.voice, live=True, start_segment=start)
        self.mapper = TapMapper(self.output, self.cursor)
        # "get ready", as the drills do: silence until the output's DAC times have settled,
        # then a countdown; the reading (and every touch) waits for it
        from reader.drills.taps import SettleGate

        self.gate = SettleGate(self.output, self.cursor)
        self.gate.start()
        self.output.play(self.cursor)
        _freeze_heap()

    def heard(self, ns: int | None = None) -> float | None:
        """The plan frame heard now (or at stamp ``ns``), calibration applied."""
        if self.mapper is None:
            return None
        pf = self.mapper.plan_frame(time.perf_counter_ns() if ns is None else ns)
        if pf is None:
            return None
        return pf - self.calibration_ms * self.rate / 1000.0

    # -- input --------------------------------------------------------------------------------
    def _player_at(self, y: float) -> str | None:
        if len(self.humans) == 2:
            return "A" if self.vp.half_of(y) == "near" else "B"
        return self.humans[0] if self.humans else None

    def _handle(self, ev):
        pg = self.pg
        if ev.kind == "quit" or (ev.kind == "key" and ev.key in (pg.K_ESCAPE,)) or (
                ev.kind == "key" and ev.char in ("q", "Q")):
            self.quit = True
            return
        if ev.kind == "key":
            self._key(ev)
            return
        if ev.pos is None:
            return
        x, y = ev.pos
        if self.phase == "arrange":
            self._arrange_input(ev, x, y)
        elif self.phase == "memorize":
            if ev.kind in ("mouse", "touch") and self._in_status(x, y):
                self._start_reading()
        elif self.phase == "reading":
            if ev.kind in ("mouse", "touch") and not (self.gate and self.gate.waiting):
                self._touch(ev, x, y)
        elif self.phase == "over" and ev.kind in ("mouse", "touch"):
            self.quit = True

    def _key(self, ev):
        pg = self.pg
        if self.phase == "arrange" and ev.key in (pg.K_SPACE, pg.K_RETURN):
            self._start_memorize()
        elif self.phase == "memorize" and (ev.char in ("s", "S") or ev.key in (pg.K_SPACE, pg.K_RETURN)):
            self._start_reading()
        elif self.phase == "reading" and self.m.owed_send() is not None and ev.key in (
                pg.K_SPACE, pg.K_RETURN):
            owed = self.m.owed_send()
            self._send(owed.sender, self.m.suggest_send(owed.sender, owed.count))
        elif ev.char in ("u", "U") and self.m.rules == "goshiki":
            self.scene.backs = not self.scene.backs  # the card backs show the 上の句
        elif self.phase == "over":
            self.quit = True

    def _in_status(self, x, y) -> bool:
        """On the status line ("click here: start"), where it is drawn (goshiki with an
        opponent: the left panel)."""
        rx, ry, rw, rh = self.painter._text_rect("status")
        return B.Rect(rx, ry, rw, rh).contains(x, y, margin=self.vp.scale * 5)

    def _arrange_input(self, ev, x, y):
        own = [c for c in self.scene.boxes() if c.owner in self.humans and not c.upside_down]
        if ev.kind in ("mouse", "touch"):
            if self._in_status(x, y):
                self._start_memorize()
                return
            if self.m.rules != "kyogi":
                return
            c = B.hit(own, x, y, B.HIT_MARGIN_MM * self.vp.scale)
            if c is not None:
                self._drag = c.poem
                self.scene.drag = (c.poem, x, y)
        elif ev.kind == "move" and self._drag is not None:
            self.scene.drag = (self._drag, x, y)
        elif ev.kind == "up" and self._drag is not None:
            poem, self._drag = self._drag, None
            self.scene.drag = None
            owner = next(p for p in self.humans if poem in self.scene.territories[p])
            if owner != self.scene.viewer:
                return  # (only the near player's cards are dragged)
            mx, my = self.vp.to_mm(x, y)
            if my < B.TERRITORY_D + B.MIDDLE_GAP - B.ROW_GAP:
                return  # dropped outside the territory: the card goes back
            t = self.scene.territories[owner]
            row, side, index = B.drop_target(t, mx, my)
            self.scene.territories[owner] = B.move(t, poem, row, side, index)
            self.notify("moved", (poem, row, side, index))

    def _touch(self, ev, x, y):
        m = self.m
        player = self._player_at(y)
        if player is None:
            return
        owed = m.owed_send()
        boxes = self.scene.boxes()
        c = B.hit(boxes, x, y, B.HIT_MARGIN_MM * self.vp.scale)
        if c is None:
            return
        if owed is not None:
            if player == owed.sender and c.owner == owed.sender:
                self._send_pick.append(c.poem)
                if len(self._send_pick) >= owed.count:
                    picked, self._send_pick = self._send_pick[:owed.count], []
                    self._send(owed.sender, picked)
            return
        frame = self.heard(ev.ns)
        if frame is None:
            return
        j = m.touch(player, c.poem, int(round(frame)))
        self._judged(j)

    def _judged(self, j):
        self.notify("touch", j)
        sc = self.scene
        if j.verdict == "take":
            sc.frames[j.card] = GOLD
        elif j.verdict == "fault":
            sc.frames[j.card] = RED
            self._shake(j.card)
        if j.verdict in ("take", "fault", "miss"):
            who = "you" if (len(self.humans) == 1 and j.player in self.humans) else j.player
            react = "" if j.reaction_ms is None else f" {j.reaction_ms / 1000:+.2f} s"
            self._message = f"{who}: {j.verdict}{react}"

    def _shake(self, poem: int) -> None:
        """A fault shows as the touched card shaking in place (framed red) for a moment."""
        sc = self.scene
        box = next((c for c in sc.boxes() if c.poem == poem), None)
        if box is None or any(a.poem == poem for a in sc.anims):
            return
        sc.anims.append(Anim(poem, box.rect, box.rect, time.perf_counter(), ANIM_FAULT_S,
                             box.upside_down, shake=0.12 * box.rect.w, frame=RED))

    # -- sends --------------------------------------------------------------------------------
    def _send(self, sender, cards):
        closed = self.m.send(sender, cards)
        self._after_close(closed)

    # -- the reading --------------------------------------------------------------------------
    def _tick_reading(self):
        m = self.m
        self._poll_between()  # (a frame may have just been drawn in this turn of the loop)
        now = time.perf_counter()
        heard = self.heard()
        self._poll_between()
        # the kyogi wait after a 上の句 whose read is already closed (taken, sends made): go on
        st = self.cursor.state
        if (st.waiting and st.segment is not None and st.segment.poem in self._done
                and m.owed_send() is None and m.outcome() is None):
            self.cursor.release()
        cur = m.current()
        if cur is None:
            owed = m.owed_send()
            if owed is not None:
                default = m.suggest_send(owed.sender, owed.count)
                self.scene.frames = {c: SEND for c in default}
                self._set_text("status", f"{'you owe' if len(self.humans) == 1 else owed.sender + ' owes'}"
                               f" {owed.count} card{'s' if owed.count > 1 else ''}: pick on your "
                               "side (Enter: the highlighted one)")
                return
            self._finish()
            return
        if cur.index != self._read_index:
            self._new_read(cur)
        if self._status_at is not None and heard is not None and heard >= self._status_at:
            self._status_at = None
            self._set_text("status", f"read {cur.index + 1}/{len(m.order)}")
        # bots
        while (self._bot_i < len(self._bots) and heard is not None
               and self._bots[self._bot_i][2] <= heard):
            p, card, f = self._bots[self._bot_i]
            self._bot_i += 1
            if cur.closes is None or f < cur.closes:
                self._judged(m.touch(p, card, f))
        self._poll_between()
        # hints: dim what no longer fits the morae heard
        if self.hints and heard is not None:
            k = morae_heard(cur.morae, cur.start, heard)
            if k != self._heard_k:
                self._heard_k = k
                on = [c for cs in m.board.values() for c in cs]
                self.scene.dim = frozenset(on) - ruled_in(on, cur.poem, k)
        self._poll_between()
        # close the read?
        st = self.cursor.state
        seg = st.segment
        waiting = st.waiting and seg is not None and seg.poem == cur.poem
        close_at = None
        settled = m.settled_at()  # kyogi: the take plus the simultaneous window
        if cur.closes is not None and heard is not None and heard >= cur.closes:
            close_at = cur.closes
        elif settled is not None and heard is not None and heard >= settled + SETTLE_S * self.rate:
            # taken: later touches are dead, so the read closes (a send can be picked while
            # the 上の句 is still being read out); the wait after it is released once it is done
            close_at = int(heard)
        elif waiting or (cur.closes is None and self.cursor.finished):
            if self._wait_since is None:
                self._wait_since = now
            pending_bot = (self._bot_i < len(self._bots) and heard is not None
                           and self._bots[self._bot_i][2] <= heard + 0.5 * self.rate)
            if now - self._wait_since >= self.take_s and not pending_bot and settled is None:
                close_at = int(heard) if heard is not None else None
        if close_at is not None:
            closed = m.close_read(close_at)
            self.notify("closed", closed)
            if closed.owed is None:
                self._after_close(closed)
            else:
                self._save()

    def _new_read(self, cur):
        self._read_index = cur.index
        self._bots = self.m.bot_touches()
        self._bot_i = 0
        self._wait_since = None
        self._heard_k = -1
        self.scene.dim = frozenset()
        self.scene.frames = {}
        self._status_at = cur.start  # the last read's line stays until this 上の句 is heard
        self.notify("read", cur)

    def _after_close(self, closed):
        """A read is done (sends included): move the cards, save, go on reading."""
        m, sc = self.m, self.scene
        now = time.perf_counter()
        self._done.add(closed.poem)
        ev = closed.event
        boxes = {c.poem: c for c in sc.boxes()}
        took = getattr(ev, "took", None)
        taker = None
        if took in ("A", "B"):
            taker = took
        elif took == "both":
            taker = m.deal.owner(closed.poem) if m.rules != "kyogi" else (
                next((p for p in m.players if closed.poem in sc.territories.get(p, B.Territory())), None))
        board = m.board
        if m.rules == "kyogi":
            read = m.order[:m.index]
            for p in m.players:
                t = sc.territories[p]
                for c in t.cards:
                    if c not in board[p]:
                        t = B.remove(t, c)
                        if c == closed.poem and c in boxes and taker is not None:
                            sc.anims = [a for a in sc.anims if a.poem != c]
                            sc.anims.append(Anim(c, boxes[c].rect, sc.pile_rect(taker), now,
                                                 ANIM_TAKE_S, boxes[c].upside_down))
                sc.territories[p] = t
            for p in m.players:
                t = sc.territories[p]
                for c in board[p]:
                    if c not in t:
                        t = B.add(t, c, self.rng, universe=m.plan.universe, read=read)
                        sc.territories[p] = t
                        new = {b.poem: b for b in sc.boxes()}.get(c)
                        if c in boxes and new is not None:
                            sc.anims = [a for a in sc.anims if a.poem != c]
                            sc.anims.append(Anim(c, boxes[c].rect, new.rect, now, ANIM_SEND_S,
                                                 new.upside_down))
        else:
            if closed.poem in boxes and taker is not None:
                c = boxes[closed.poem]
                sc.anims.append(Anim(c.poem, c.rect, sc.pile_rect(taker), now, ANIM_TAKE_S,
                                     c.upside_down))
            res = closed.result
            if res is not None:  # the ba: a taker's card from it, each fault's card into it
                if res.from_ba is not None and res.took is not None:
                    sc.anims.append(Anim(res.from_ba, sc.ba_rect(), sc.pile_rect(res.took), now,
                                         ANIM_SEND_S, False))
                for p, c in res.into_ba:
                    sc.anims.append(Anim(c, sc.pile_rect(p), sc.ba_rect(), now, ANIM_SEND_S,
                                         False))
            sc.ba = tuple(m.state.ba)
            self._set_text("ba", f"場 (ba) {len(sc.ba)}" if sc.ba else "")
            sc.on_board = dict(board)
        sc.frames = {}
        self._refresh_kimariji()
        self._save()
        self._panels()
        # what the read was, now that it is over (never while it is live: that would tell)
        kim = closed.timing.get("kimariji", "") if closed.timing else ""
        who = {"A": "A took it", "B": "B took it", "both": "simultaneous: to the owner"}.get(
            took, "空札 (karafuda)" if m.deal.owner(closed.poem) is None
            else "nobody took it")
        sends = getattr(ev, "send", None)
        sent = f" · sent {', '.join(map(str, sends))}" if sends else ""
        self._set_text("status", f"read {closed.index + 1}: {closed.poem} {kim} · {who}{sent}")
        if m.outcome() is None and self.cursor is not None and self.cursor.state.waiting:
            self.cursor.release()

    def record_stats(self):
        """Every human take and fault of the match goes into the stats database (``karuta
        stats`` and the memory drill learn from matches).  Called once the window is closed:
        SQLite commits wait for the disk, and the match log has everything meanwhile."""
        if self.db is None or self.session_id is None:
            return
        from datetime import datetime, timezone

        from reader.drills.memory import MemoryDeck
        from reader.practice.record import record_read

        deck = MemoryDeck.from_json(self.db.memory_cards())
        now = datetime.now(timezone.utc)
        for closed in self.m.closed:
            record_read(self.db, self.session_id, self.m, closed, now, deck=deck)

    def _save(self):
        """Save the log after a read, off the window's thread (an fsync can take 100+ ms on a
        busy disk, and input would wait): the text is made here, written by ``LogWriter``."""
        if self.log_file is not None:
            if self._writer is None:
                self._writer = LogWriter(self.log_file)
            self._writer.put(self.m.log_text())

    def _finish(self):
        if self.phase == "over":
            return
        if self.cursor is not None:
            self.cursor.stop()
        self._set_phase("over")
        self.painter.overlay = self._end_screen()
        self.painter.full()

    # -- the end screen -----------------------------------------------------------------------
    def end_lines(self) -> list[str]:
        """The end screen's text: the score, then a line per read that touched the board."""
        m = self.m
        out = m.outcome()
        lines = []
        st = m.state
        solo = st.solo
        if solo:
            taken, missed, faults = st.solo_score()
            lines.append(f"alone: {taken} taken, {missed} missed, {faults} fault"
                         f"{'s' if faults != 1 else ''} ({len(m.closed)} reads)")
        elif out is not None:
            win = getattr(out, "winner", None)
            lines.append(f"winner: {win}" if win else "draw")
        else:
            lines.append(f"not finished ({len(m.closed)} reads)")
        if solo:
            second = f"left on the board: {self._left()}"
        elif m.rules == "kyogi":
            second = "left on the board: " + ", ".join(f"{p} {st.count(p)}" for p in m.players)
        else:
            second = "taken: " + ", ".join(f"{p} {st.count(p)}" for p in m.players)
        # a bot's form this match (reader.practice.bot.match_skill), told once it is over
        forms = [f"bot {m.seats[p].level} played like a {x:.1f}" for p, x in sorted(m.skill.items())]
        lines.append(" · ".join([second] + forms))
        lines.append("")
        players = self._table_players()
        lines.append("card     kimariji  took  " + "  ".join(f"{p:>9}" for p in players) + "  faults")
        for c in m.closed:
            touches = c.timing.get("touches", []) if c.timing else []
            took = getattr(c.event, "took", None)
            if not touches and took is None:
                continue
            react = {}
            for t in touches:
                if t["player"] not in react and t["verdict"] in ("take", "fault", "miss", "dead"):
                    react[t["player"]] = t["reaction_ms"]
            faults = [t["player"] for t in touches if t["verdict"] == "fault"]
            cols = "  ".join(f"{react[p] / 1000:+8.2f}s" if p in react else f"{'—':>9}"
                             for p in players)
            lines.append(f"{c.poem:>3} {c.timing.get('kimariji', ''):<8} {took or '-':>4}  {cols}"
                         f"  {' '.join(faults) if faults else ''}")
        return lines

    def _table_players(self) -> tuple[str, ...]:
        """The players with a column in the end tables (alone: only A)."""
        m = self.m
        return ("A",) if m.state.solo else tuple(m.players)

    def end_rows(self) -> list[tuple[str, ...]]:
        """The end screen's table: a header, then per read that touched the board: card,
        kimariji at read time, who took it, each player's first reaction, faults."""
        m = self.m
        players = self._table_players()
        out = [("card", "kimariji", "took", *(f"{p} react" for p in players), "faults")]
        for c in m.closed:
            touches = c.timing.get("touches", []) if c.timing else []
            took = getattr(c.event, "took", None)
            if not touches and took is None:
                continue
            react = {}
            for t in touches:
                if t["player"] not in react and t["verdict"] in ("take", "fault", "miss", "dead"):
                    react[t["player"]] = t["reaction_ms"]
            faults = sorted({t["player"] for t in touches if t["verdict"] == "fault"})
            out.append((str(c.poem), c.timing.get("kimariji", "") if c.timing else "",
                        took or "—", *(f"{react[p] / 1000:+.2f} s" if p in react else "—"
                                       for p in players),
                        ("× " + " ".join(faults)) if faults else ""))
        return out

    def _end_screen(self):
        pg = self.pg
        w, h = self.screen.get_size()
        surf = pg.Surface((w, h), pg.SRCALPHA)
        surf.fill((20, 26, 24, 235))
        k = self.vp.design_scale
        y = round(20 * k)
        title = self.painter.big.render("終わり · match over", True, GOLD)
        surf.blit(title, title.get_rect(midtop=(w // 2, y)))
        y += title.get_height() + round(10 * k)
        lines = self.end_lines()
        font = self.painter.small
        for ln in lines[:2]:
            img = font.render(ln, True, TEXT)
            surf.blit(img, img.get_rect(midtop=(w // 2, y)))
            y += font.get_linesize()
        y += font.get_linesize() // 2
        rows = self.end_rows()
        widths = [round(x * k) for x in (44, 118, 44) + (78,) * (len(rows[0]) - 4) + (60,)]
        # card, kimariji, took, A (and B), faults
        block = sum(widths) + round(24 * k)
        per_col = max(1, (h - y - round(30 * k)) // font.get_linesize())
        ncols = max(1, min(3, -(-(len(rows) - 1) // max(1, per_col - 1))))
        left0 = (w - ncols * block) // 2
        body = rows[1:]
        for col in range(ncols):
            part = [rows[0]] + body[col * (per_col - 1):(col + 1) * (per_col - 1)]
            for i, cells in enumerate(part):
                cx = left0 + col * block
                cy = y + i * font.get_linesize()
                for cell, cw in zip(cells, widths):
                    img = font.render(cell, True, DIMTEXT if i == 0 else (
                        RED if cell.startswith("×") else TEXT))
                    surf.blit(img, (cx, cy))
                    cx += cw
        hint = font.render("click or any key to close", True, DIMTEXT)
        surf.blit(hint, hint.get_rect(midbottom=(w // 2, h - round(8 * k))))
        return surf

    # -- the loop -----------------------------------------------------------------------------
    def step(self) -> None:
        """One turn of the loop: input (polled ~every 1 ms), a frame when one is due, the
        phase's work (the match every ``TICK_S``)."""
        evs = self.loop.step()
        if self._events:
            evs = sorted(self._events + evs, key=lambda e: e.ns)
            self._events = []
        for ev in evs:
            self._handle(ev)
            if self.quit:
                return
        if self.phase == "arrange":
            self._set_text("status", "drag your cards · space or click here: start")
        elif self.phase == "memorize":
            left = self._memo_end - time.perf_counter() if self._memo_end else 0
            if left <= 0:
                self._start_reading()
            else:
                self._set_text("status", f"暗記 memorisation {int(left) // 60}:"
                               f"{int(left) % 60:02d} · s: skip")
        elif self.phase == "reading" and self.gate is not None and self.gate.waiting:
            self.gate.poll()
            text = self.gate.pop_message()
            if text is not None:
                self._set_text("status", text or "")
        elif self.phase == "reading" and time.perf_counter() >= self._next_tick:
            # the match, bots, hints and closing: every few ms is enough (a touch is
            # stamped and mapped as it comes in; a bot's touch carries its own frame)
            self._next_tick = time.perf_counter() + TICK_S
            self._tick_reading()
            if self._message and self.phase == "reading":
                st = self.scene.texts.get("status", "").split(" · ")[0]
                self._set_text("status", f"{st} · {self._message}")
                self._message = ""

    def run(self):
        self._open()
        self._panels()
        self.notify("window", self)
        try:
            while not self.quit:
                self.step()
        except KeyboardInterrupt:
            pass
        finally:
            if self.cursor is not None:
                self.cursor.stop()
            try:
                self.output.stop()
            finally:
                if self.cursor is not None:
                    self.cursor.close()
                self.pg.display.quit()
                if self._writer is not None:
                    self._writer.close()  # the last save is on disk before we return
        return self.m

    def ready_line(self) -> str | None:
        """How long the "get ready" before the reading took (None: the reading never began)."""
        return None if self.gate is None else self.gate.describe()

    def stats(self) -> str:
        d = self.taps.stats.describe()
        audio = (f"; audio: {getattr(self.output, 'underflows', 0)} underflows, "
                 f"{getattr(self.output, 'xruns', 0)} xruns")
        return (f"window {self.loop.fps_measured():.1f} fps; input polled every "
                f"{d.get('median_ms', 0):.2f} ms (median), p99 {d.get('p99_ms', 0):.1f} ms, "
                f"max {d.get('max_ms', 0):.1f} ms{audio}")
