"""The practice board window: it draws a practice table's view and reports the player's input.
It never reaches into the match: a table (``reader.practice.table``) is the match as this
screen sees it — a match on this machine (``reader.practice.local.LocalTable``), an online
host's or a guest's (``reader.practice.netwindow``) — and the window is the same for all.

Phases (the table's)::

    arrange ──space / START──> memorize ──time up, s, SKIP──> reading ──match over──> over
    (drag your own cards)      (countdown; kyogi 15 min,      (jo-ka, then the plan;   (score,
                                goshiki 30 s)                  send picking)            who took what)

Input is polled about every 1 ms on the window's thread between frames
(``reader.input.taps.WindowLoop``/``WindowTaps``): a click or touch is stamped as it is taken
in and handed to the table with its instant (``Table.touch``: the table maps it to the plan
frame heard then).  Every ``TICK_S`` the table is ticked (``Table.tick``): it returns the
view to draw (``reader.practice.view.TableView``: the cards and where they lie, marks, dimmed
cards, the status line, the panels) and what happened (events: a fault shakes its card, a
read done moves the cards).

``--vs human``: two players on one screen; a touch belongs to the player on whose half of the
board it starts (the bottom half is A).  Sends: a human who owes a card picks it on the board
(the bot's choice is highlighted: Enter or space sends it).

Drawing: ``reader.practice.paint`` (only what changed is redrawn); the end screen's table:
``reader.practice.report``.  One clock (``clock``, ``reader.base.clock.SYSTEM_CLOCK`` by default,
the clock input events are stamped on) times everything here.
"""
from __future__ import annotations

from collections.abc import Callable

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import board as B
from reader.practice import report
from reader.practice import view as V
from reader.practice.local import LocalTable, LogWriter, freeze_heap
from reader.practice.paint import (ANIM_FAULT_S, ANIM_SEND_S, ANIM_TAKE_S, DIMTEXT, GOLD,
                                   MARKS, RED, SEND, TEXT, Anim, Painter, Scene)
from reader.practice.session import result_lines

__all__ = ["BoardWindow", "LogWriter", "NO_DISPLAY", "SIZE"]

NO_DISPLAY = ("no display for the practice board: run it on a screen, or play bots against "
              "each other with --bot-vs-bot A,B")
SIZE = (1280, 720)

#: how often the reading loop ticks the table (bots, hints, closing), s
TICK_S = 0.008
#: pixels put on screen per display.update call (about 4 cards at 1280x720)
UPDATE_PX = 25_000

#: the events' names as ``on_event`` tells them (tests, benchmarks)
_NAMES = {"phase": "phase", "read": "read", "judged": "touch", "closed": "closed",
          "done": "done", "moved": "moved"}


class BoardWindow:
    """A practice table in a window.  ``run()`` plays it to the end (or until the player
    quits).

    ``table``: a ``reader.practice.table.Table``; or a match and its opened output, for a
    ``LocalTable`` made here (``local``: its options: ``log_file``, ``hints``,
    ``memorize_min``, ``calibration_ms``, ``db``, ``session_id``).  ``on_event(name, data)``:
    tells tests and benchmarks what happens once the window has drawn it ("phase" with the
    phase's name; "read", "touch", "closed", "done", "moved" with the view's events; and
    "window"); ``clock``: the clock (``reader.base.clock.Clock``) the input is stamped on.
    ``quit = True`` ends ``run`` at its next turn."""

    def __init__(self, table, output=None, *, show_kimariji: bool = False, size=SIZE,
                 fullscreen: bool = False,
                 on_event: Callable[[str, object], None] | None = None,
                 clock: Clock = SYSTEM_CLOCK, **local):
        if output is not None or local:  # a match on this machine
            table = LocalTable(table, output, clock=clock, **local)
        self.table = table
        self.show_kimariji = show_kimariji
        self.size = size
        self.fullscreen = fullscreen
        self.notify = on_event or (lambda name, data: None)
        self.clock = clock
        self.quit = False
        self.view: V.TableView | None = None
        self._drag = None
        self._events: list = []  # input taken in while drawing
        self._last_poll_ns = 0
        self._next_tick = 0.0
        self._marks: dict = {}  # the marks the scene shows
        self._version = None  # the board's version laid out
        self._kim_index = None

    @property
    def m(self):
        """The match (read only: its log, its end table)."""
        return self.table.m

    @property
    def phase(self) -> str:
        return self.table.phase

    @property
    def over(self) -> bool:
        return self.table.over

    @property
    def here(self) -> tuple[str, ...]:
        return self.table.here

    def now(self) -> float:
        """The window's clock, s."""
        return self.clock.seconds()

    # -- set-up -------------------------------------------------------------------------------
    def open(self):
        """Open the window and lay out the board (``run`` does it first)."""
        from reader.base.errors import DeviceError
        from reader.input.taps import WindowLoop, WindowTaps
        from reader.ui.window import import_pygame, open_window

        try:
            screen = open_window(self.size, "karuta · practice")
        except DeviceError as e:
            raise DeviceError(f"{NO_DISPLAY} ({str(e).rpartition('(')[2].rstrip(')')})") from None
        pg = import_pygame()
        if self.fullscreen:
            screen = pg.display.set_mode((0, 0), pg.FULLSCREEN)
        self.pg = pg
        self.screen = screen
        self.vp = self.m.game.viewport(screen.get_size(), self.m.state.solo)
        self.scene = Scene(self.m.game, self.vp, viewer=self.table.viewer)
        self.painter = Painter(screen, self.vp)
        self.painter.between = self._poll_between
        self.view = self.table.view(self.now())
        self._draw_view(self.view)
        self._prerender()
        self.taps = WindowTaps(drag=True, clock=self.clock)
        self.loop = WindowLoop(self.taps, self._draw, fps=60.0)
        self.table.open(self.now())
        freeze_heap()

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
            if self.table.hints:
                cp.face(c.poem, upside_down=ud, dim=True, edge=edge, kimariji=k)
            for fr in (GOLD, RED, SEND):
                cp.face(c.poem, upside_down=ud, frame=fr, edge=edge, kimariji=k)
        # first calls that load or fill something, made now rather than during the reading:
        # numpy's median (the DAC-time model of every heard frame: ~12 ms the first time) and
        # each card's opening sounds (the hints and the bots)
        import numpy

        from poems.kimariji import kami_heard

        numpy.median(numpy.zeros(3))
        for n in self.m.plan.universe:
            kami_heard(n)

    def _lay_out(self, board: V.BoardState):
        """The cards where the table says they lie (a resumed match as it stood)."""
        sc = self.scene
        if self.m.game.territories:
            sc.territories = dict(board.territories)
        else:
            sc.goshiki_hands = dict(board.hands)
            sc.on_board = dict(board.on_board)
            sc.ba = tuple(board.ba)
        self._refresh_kimariji()

    def _refresh_kimariji(self):
        if not self.show_kimariji or self._kim_index == self.m.index:
            return
        from poems.kimariji import kimariji

        self._kim_index = self.m.index
        k = kimariji(self.m.plan.universe, self.m.order[:self.m.index])
        self.scene.kimariji = {n: v.card for n, v in k.items()}

    # -- drawing ------------------------------------------------------------------------------
    def _poll_between(self):
        now = self.clock.ns()
        if now - self._last_poll_ns > 400_000:
            self._events += self.taps.pump()
            self._last_poll_ns = now

    def _draw(self):
        """One frame: repaint the changed rects and put them on screen in a few
        ``display.update`` calls of at most ``UPDATE_PX`` pixels, polling input between them
        (one update is a round trip to the X server: one per rect costs more, one for 50
        cards holds input up for several ms)."""
        pg = self.pg
        self._last_poll_ns = self.clock.ns()
        chunk, area = [], 0
        dirty = self.painter.dirty(self.scene, self._last_poll_ns / 1e9)
        self._poll_between()
        for d in dirty:
            self.painter.paint(d)
            self._poll_between()
            chunk.append(d)
            area += d.w * d.h
            if area >= UPDATE_PX:
                pg.display.update(chunk)
                self._events += self.taps.pump()
                self._last_poll_ns = self.clock.ns()
                chunk, area = [], 0
        if chunk:
            pg.display.update(chunk)
        return []

    def _draw_view(self, view: V.TableView, events=()) -> None:
        """Put a view on the scene: the cards' places (when they moved: the events' flights),
        marks, dimmed cards, the status line, the panels and the ba's count."""
        sc = self.scene
        if view.version != self._version:
            before = {c.poem: c for c in sc.boxes()} if self._version is not None else {}
            self._version = view.version
            self._lay_out(view.board)
            for ev in events:
                if isinstance(ev, V.Done):
                    self._fly(ev, before)
        marks = view.board.marks
        if marks != self._marks:
            self._marks = dict(marks)
            sc.frames = {c: MARKS[k] for c, k in marks.items()}
        sc.dim = view.board.dim
        sc.texts["status"] = V.status_text(view.line, view.verdict)
        sc.texts["countdown"] = view.countdown
        sc.texts.update(V.panel_texts(view))
        sc.texts["ba"] = f"場 (ba) {len(sc.ba)}" if sc.ba else ""

    def _fly(self, done: V.Done, boxes: dict) -> None:
        """A read done (sends included): the taken card flies to its taker's pile, sent cards
        to their new places, the 場's cards to and from it."""
        sc = self.scene
        now = self.now()

        def fly(poem, a, b, dur, upside_down):
            sc.anims = [x for x in sc.anims if x.poem != poem]
            sc.anims.append(Anim(poem, a, b, now, dur, upside_down))

        new = {b.poem: b for b in sc.boxes()}
        if self.m.game.territories:
            # every card stays where it lies: the taken one leaves its place empty, a sent one
            # goes into a free place across (the match keeps the places: PracticeMatch.layout)
            if done.poem in boxes and done.poem not in new and done.taker is not None:
                c = boxes[done.poem]
                fly(c.poem, c.rect, sc.pile_rect(done.taker), ANIM_TAKE_S, c.upside_down)
            for c in done.sent:
                if c in boxes and c in new:
                    fly(c, boxes[c].rect, new[c].rect, ANIM_SEND_S, new[c].upside_down)
        else:
            if done.poem in boxes and done.taker is not None:
                c = boxes[done.poem]
                sc.anims.append(Anim(c.poem, c.rect, sc.pile_rect(done.taker), now, ANIM_TAKE_S,
                                     c.upside_down))
            if done.from_ba is not None:  # the ba: a taker's card from it, faults' into it
                p, c = done.from_ba
                sc.anims.append(Anim(c, sc.ba_rect(), sc.pile_rect(p), now, ANIM_SEND_S, False))
            for p, c in done.into_ba:
                sc.anims.append(Anim(c, sc.pile_rect(p), sc.ba_rect(), now, ANIM_SEND_S, False))

    def _shake(self, poem: int) -> None:
        """A fault shows as the touched card shaking in place (framed red) for a moment."""
        sc = self.scene
        box = next((c for c in sc.boxes() if c.poem == poem), None)
        if box is None or any(a.poem == poem for a in sc.anims):
            return
        sc.anims.append(Anim(poem, box.rect, box.rect, self.now(), ANIM_FAULT_S,
                             box.upside_down, shake=0.12 * box.rect.w, frame=RED))

    def _finish(self):
        self.painter.overlay = self._end_screen()
        self.painter.full()

    def record_stats(self):
        """The match's takes and faults into the stats database (the table's, once the
        window is closed)."""
        record = getattr(self.table, "record_stats", None)
        if record is not None:
            record()

    # -- input --------------------------------------------------------------------------------
    def _player_at(self, y: float) -> str | None:
        here = self.here
        if len(here) == 2:
            return "A" if self.vp.half_of(y) == "near" else "B"
        return here[0] if here else None

    def handle(self, ev):
        """One input event (a ``reader.input.taps.TapEvent``)."""
        pg, t = self.pg, self.table
        phase = t.phase
        if ev.kind == "quit" or (ev.kind == "key" and (ev.key == pg.K_ESCAPE
                                                       or ev.char in ("q", "Q"))):
            self.quit = True
        elif phase == "over" and ev.kind in ("key", "mouse", "touch"):
            self.quit = True
        elif ev.kind == "key":
            go = ev.key in (pg.K_SPACE, pg.K_RETURN)
            if go:
                t.go(self.now())
            elif phase == "memorize" and ev.char in ("s", "S"):
                t.skip()
            elif ev.char in ("u", "U") and self.m.game.card_backs:
                self.scene.backs = not self.scene.backs  # the card backs show the 上の句
        elif ev.pos is not None:
            x, y = ev.pos
            if phase == "arrange":
                self._arrange_input(ev, x, y)
            elif phase == "memorize" and ev.kind in ("mouse", "touch") and self._in_status(x, y):
                t.skip()
            elif phase == "reading" and ev.kind in ("mouse", "touch"):
                hit = self.touched(x, y)
                if hit is not None:
                    t.touch(*hit, ev.ns / 1e9, getattr(ev, "source", ""))

    def touched(self, x: float, y: float) -> tuple[str, int] | None:
        """A click at window pixel (x, y) while reading: (the player whose half it lands on —
        two at one board — or the one human, the card under it with the hit margin), or None."""
        player = self._player_at(y)
        c = B.hit(self.scene.boxes(), x, y, B.HIT_MARGIN_MM * self.vp.scale)
        return None if player is None or c is None else (player, c.poem)

    def _in_status(self, x, y) -> bool:
        """On the status line ("click here: start"), where it is drawn (goshiki with an
        opponent: the left panel)."""
        rx, ry, rw, rh = self.painter.text_rect("status")
        return B.Rect(rx, ry, rw, rh).contains(x, y, margin=self.vp.scale * 5)

    def _arrange_input(self, ev, x, y):
        here = self.here
        own = [c for c in self.scene.boxes() if c.owner in here and not c.upside_down]
        if ev.kind in ("mouse", "touch"):
            if self._in_status(x, y):
                self.table.go(self.now())
                return
            if not self.m.game.territories or not self.table.arranging:
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
            owner = next((p for p in here if poem in self.scene.territories[p]), None)
            if owner != self.scene.viewer:
                return  # (only the near player's cards are dragged)
            mx, my = self.vp.to_mm(x, y)
            if my < B.TERRITORY_D + B.MIDDLE_GAP - B.ROW_GAP:
                return  # dropped outside the territory: the card goes back
            row, side, index = B.drop_target(self.scene.territories[owner], mx, my)
            if self.table.arrange(owner, poem, row, side, index):
                self.refresh()

    # -- the end screen -----------------------------------------------------------------------
    def end_lines(self) -> list[str]:
        """The terminal's lines after the window (the table's from the fourth: ``report``)."""
        return report.end_lines(self.m)

    def result(self) -> list[str]:
        """The end screen's two lines, said to the person (``session.result_lines``)."""
        return result_lines(self.m, self.here)

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
        font = self.painter.small
        head, second = result_lines(self.m, self.here)
        img = self.painter.font.render(head, True, GOLD)  # "you won by 3", to the person
        surf.blit(img, img.get_rect(midtop=(w // 2, y)))
        y += self.painter.font.get_linesize()
        img = font.render(second, True, TEXT)
        surf.blit(img, img.get_rect(midtop=(w // 2, y)))
        y += font.get_linesize()
        y += font.get_linesize() // 2
        rows = report.end_rows(self.m)
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
        table's tick (every ``TICK_S``; every turn while the table gets ready)."""
        evs = self.loop.step()
        if self._events:
            evs = sorted(self._events + evs, key=lambda e: e.ns)
            self._events = []
        for ev in evs:
            self.handle(ev)
            if self.quit:
                return
        now = self.now()
        if now >= self._next_tick or self.table.getting_ready:
            # (a touch is stamped and mapped as it comes in; a bot's touch carries its frame)
            self._next_tick = now + TICK_S
            self._tick(now)

    def _tick(self, now: float) -> None:
        self._poll_between()  # (a frame may have just been drawn in this turn of the loop)
        view, events = self.table.tick(now)
        self._poll_between()
        self._show(view, events)
        if self.table.ended:
            self.quit = True  # (the caller says why)

    def refresh(self) -> None:
        """Tick the table now and draw what it shows."""
        self._tick(self.now())

    def _show(self, view: V.TableView, events) -> None:
        self.view = view
        self._draw_view(view, events)
        for ev in events:
            if isinstance(ev, V.Judged) and ev.verdict == "fault":
                self._shake(ev.card)
            elif isinstance(ev, V.Phase):
                if ev.phase == "memorize":
                    self.scene.drag = None
                elif ev.phase == "over":
                    self._finish()
            self.notify(_NAMES[ev.kind], ev.phase if isinstance(ev, V.Phase) else ev)

    def run(self):
        self.open()
        self.notify("window", self)
        try:
            while not self.quit:
                self.step()
        except KeyboardInterrupt:
            pass
        finally:
            try:
                self.table.close()
            finally:
                self.pg.display.quit()
        return self.m

    def ready_line(self) -> str | None:
        """How long the "get ready" before the reading took (None: the reading never began)."""
        ready = getattr(self.table, "ready_line", None)
        return None if ready is None else ready()

    def stats(self) -> str:
        d = self.taps.stats.describe()
        audio = (f"; audio: {getattr(getattr(self.table, 'output', None), 'underflows', 0)} underflows, "
                 f"{getattr(getattr(self.table, 'output', None), 'xruns', 0)} xruns")
        return (f"window {self.loop.fps_measured():.1f} fps; input polled every "
                f"{d.get('median_ms', 0):.2f} ms (median), p99 {d.get('p99_ms', 0):.1f} ms, "
                f"max {d.get('max_ms', 0):.1f} ms{audio}")
