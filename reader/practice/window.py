"""The practice board window: ``karuta practice`` with a human seat.  It draws the match and
takes input; the match's live rules are ``reader.practice.session.PracticeSession``'s (the same
session ``--bot-vs-bot`` plays on the plan's frames).

Phases (the session's)::

    arrange ──space / START──> memorize ──time up, s, SKIP──> reading ──match over──> over
    (drag your own cards)      (countdown; kyogi 15 min,      (jo-ka, then the plan;   (score,
                                goshiki 30 s)                  send picking)            who took what)

Reading: the match's plan plays through the existing outputs (``reader.reading.player.open_output``,
sounddevice by default) from a live ``PlanCursor``; kyogi waits after each 上の句 for the take.
Input is polled about every 1 ms on the window's thread between frames
(``reader.input.taps.WindowLoop``/``WindowTaps``): a click or touch is stamped as it is taken
in, mapped to the plan frame heard at that instant (``reader.input.taps.TapMapper``, DAC
times), the calibration subtracted — exactly as the speed drill times a tap — and handed to the
session (``PracticeSession.touch``).  Every ``TICK_S`` the session is told the time, the frame
heard and whether the reading waits (``PracticeSession.tick``): it delivers the bots' touches,
dims cards (``--hints``) and closes reads; the window moves the cards when a read is done and
saves the log (off its thread: ``LogWriter``).

``--vs human``: two players on one screen; a touch belongs to the player on whose half of the
board it starts (the bottom half is A).  Sends: a human who owes a card picks it on the board
(the bot's choice is highlighted: Enter or space sends it).

Drawing: ``reader.practice.paint`` (only what changed is redrawn); the end screen's table:
``reader.practice.report``.  One clock (``clock``, ``reader.base.clock.SYSTEM_CLOCK`` by default,
the clock input events are stamped on) times and dates everything here.
"""
from __future__ import annotations

from collections.abc import Callable

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import board as B
from reader.practice import report
from reader.practice.paint import (ANIM_FAULT_S, ANIM_SEND_S, ANIM_TAKE_S, DIMTEXT, GOLD,
                                   MARKS, RED, SEND, TEXT, Anim, Painter, Scene)
from reader.practice.session import PracticeSession, memorize_minutes, result_lines

__all__ = ["BoardWindow", "LogWriter", "NO_DISPLAY", "SIZE"]

NO_DISPLAY = ("no display for the practice board: run it on a screen, or play bots against "
              "each other with --bot-vs-bot A,B")
SIZE = (1280, 720)

#: how often the reading loop ticks the session (bots, hints, closing), s
TICK_S = 0.008
#: pixels put on screen per display.update call (about 4 cards at 1280x720)
UPDATE_PX = 25_000


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
    ``on_event(name, data)``: tells tests and benchmarks what happens (the session's "phase",
    "read", "touch", "closed", "done" — after the window has drawn it — and "window",
    "moved"); ``clock``: the clock (``reader.base.clock.Clock``) the input is stamped on.  ``quit = True`` ends
    ``run`` at its next turn.
    """

    def __init__(self, m, output, *, log_file=None, hints: bool = False,
                 memorize_min: float | None = None, calibration_ms: float = 0.0,
                 show_kimariji: bool = False, size=SIZE, fullscreen: bool = False,
                 on_event: Callable[[str, object], None] | None = None, db=None,
                 session_id: str | None = None,
                 clock: Clock = SYSTEM_CLOCK):
        self.m = m
        self.output = output
        self.log_file = log_file
        self.hints = hints
        self.calibration_ms = float(calibration_ms)
        self.show_kimariji = show_kimariji
        self.size = size
        self.fullscreen = fullscreen
        self.notify = on_event or (lambda name, data: None)
        self.db = db
        self.session_id = session_id
        self.clock = clock
        memorize = memorize_minutes(m.game, m.index, memorize_min)
        self.session = PracticeSession(m, memorize_s=60.0 * memorize, hints=hints,
                                       on_event=self._on_session, release=self._release)
        self.humans = self.session.humans
        self.viewer = "A"  # whose side is drawn near (an online guest: "B")
        self.quit = False
        self.rate = m.plan.sample_rate
        self.cursor = None
        self.mapper = None
        self.gate = None  # the "get ready" before the reading (reader.input.taps.SettleGate)
        self._drag = None
        self._events: list = []  # input taken in while drawing
        self._writer = None
        self._last_poll_ns = 0
        self._next_tick = 0.0
        self._marks: dict = {}  # the session's marks the scene shows

    @property
    def phase(self) -> str:
        return self.session.phase

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
        self.scene = Scene(self.m.game, self.vp, viewer=self.viewer)
        self._layout_board()
        self.painter = Painter(screen, self.vp)
        self.painter.between = self._poll_between
        self._prerender()
        self.taps = WindowTaps(drag=True, clock=self.clock)
        self.loop = WindowLoop(self.taps, self._draw, fps=60.0)
        self.show(panels=True)
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
        # first calls that load or fill something, made now rather than during the reading:
        # numpy's median (the DAC-time model of every heard frame: ~12 ms the first time) and
        # each card's opening sounds (the hints and the bots)
        import numpy

        from poems.kimariji import kami_heard

        numpy.median(numpy.zeros(3))
        for n in self.m.plan.universe:
            kami_heard(n)

    def _layout_board(self):
        """The cards where the match says they lie (``PracticeMatch.layout``: a resumed match
        as it stood)."""
        m, sc = self.m, self.scene
        if m.game.territories:
            sc.territories = dict(m.layout())
        else:
            sc.goshiki_hands = dict(m.layout())
            sc.on_board = dict(m.board)
        self._refresh_kimariji()

    def _refresh_kimariji(self):
        if not self.show_kimariji:
            return
        from poems.kimariji import kimariji

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

    def show(self, status: str | None = None, panels: bool = False):
        """Put what the session says on the scene: marks, dimmed cards, the status line
        (``status``: another text), and with ``panels`` the side panels and the ba's count
        (they change only when a read is done)."""
        s, sc = self.session, self.scene
        if s.marks != self._marks:
            self._marks = dict(s.marks)
            sc.frames = {c: MARKS[k] for c, k in s.marks.items()}
        sc.dim = s.dim
        sc.texts["status"] = s.status if status is None else status
        if panels:
            sc.texts.update(s.panels())
            sc.texts["ba"] = f"場 (ba) {len(sc.ba)}" if sc.ba else ""

    # -- the session's news -------------------------------------------------------------------
    def _on_session(self, name, data):
        if name == "phase":
            if data == "memorize":
                self.scene.drag = None
            elif data == "reading":
                self._save()  # (the board as arranged is in the log before the first read)
                self._start_reading()
            elif data == "over":
                self._finish()
        elif name == "touch" and data.verdict == "fault":
            self._shake(data.card)
        elif name == "closed" and data.owed is not None:
            self._save()
        elif name == "done":
            self._after_close(data)
        self.notify(name, data)

    def _release(self):
        if self.cursor is not None:
            self.cursor.release()

    def _start_reading(self):
        from audio.render import PlanCursor
        from reader.input.taps import SettleGate, TapMapper

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
        self.gate = SettleGate(self.output, self.cursor, clock=self.clock)
        self.gate.start()
        self.output.play(self.cursor)
        _freeze_heap()

    def heard(self, ns: int | None = None) -> float | None:
        """The plan frame heard now (or at stamp ``ns``), calibration applied."""
        if self.mapper is None:
            return None
        pf = self.mapper.plan_frame(self.clock.ns() if ns is None else ns)
        if pf is None:
            return None
        return pf - self.calibration_ms * self.rate / 1000.0

    def _after_close(self, closed):
        """A read is done (sends included): move the cards, save."""
        m, sc = self.m, self.scene
        now = self.now()
        boxes = {c.poem: c for c in sc.boxes()}
        took = closed.event.took
        taker = took if took in ("A", "B") else None
        if took == "both":
            taker = m.deal.owner(closed.poem) if not m.game.territories else next(
                (p for p in m.players if closed.poem in sc.territories.get(p, B.Territory())), None)

        def fly(poem, a, b, dur, upside_down):
            sc.anims = [x for x in sc.anims if x.poem != poem]
            sc.anims.append(Anim(poem, a, b, now, dur, upside_down))

        board = m.board
        if m.game.territories:
            # every card stays where it lies: the taken one leaves its place empty, a sent one
            # goes into a free place across (the match keeps the places: PracticeMatch.layout)
            sc.territories = dict(m.layout())
            new = {b.poem: b for b in sc.boxes()}
            if closed.poem in boxes and closed.poem not in new and taker is not None:
                c = boxes[closed.poem]
                fly(c.poem, c.rect, sc.pile_rect(taker), ANIM_TAKE_S, c.upside_down)
            for c in self.m.game.sent(closed.event):
                if c in boxes and c in new:
                    fly(c, boxes[c].rect, new[c].rect, ANIM_SEND_S, new[c].upside_down)
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
            sc.on_board = dict(board)
        self._refresh_kimariji()
        self._save()
        self.show(panels=True)

    def _shake(self, poem: int) -> None:
        """A fault shows as the touched card shaking in place (framed red) for a moment."""
        sc = self.scene
        box = next((c for c in sc.boxes() if c.poem == poem), None)
        if box is None or any(a.poem == poem for a in sc.anims):
            return
        sc.anims.append(Anim(poem, box.rect, box.rect, self.now(), ANIM_FAULT_S,
                             box.upside_down, shake=0.12 * box.rect.w, frame=RED))

    def record_stats(self):
        """Every human take and fault of the match goes into the stats database (``karuta
        stats`` and the memory drill learn from matches).  Called once the window is closed:
        SQLite commits wait for the disk, and the match log has everything meanwhile."""
        if self.db is None or self.session_id is None:
            return
        from reader.memory.deck import MemoryDeck
        from reader.practice.record import record_read

        deck = MemoryDeck.from_json(self.db.memory_cards())
        now = self.clock.now()
        for closed in self.m.closed:
            record_read(self.db, self.session_id, self.m, closed, now, players=self.humans,
                        deck=deck)

    def _save(self):
        """Save the log after a read, off the window's thread (an fsync can take 100+ ms on a
        busy disk, and input would wait): the text is made here, written by ``LogWriter``."""
        if self.log_file is not None:
            if self._writer is None:
                self._writer = LogWriter(self.log_file)
            self._writer.put(self.m.log_text())

    def _finish(self):
        if self.cursor is not None:
            self.cursor.stop()
        self.painter.overlay = self._end_screen()
        self.painter.full()

    # -- input --------------------------------------------------------------------------------
    def _player_at(self, y: float) -> str | None:
        if len(self.humans) == 2:
            return "A" if self.vp.half_of(y) == "near" else "B"
        return self.humans[0] if self.humans else None

    def handle(self, ev):
        """One input event (a ``reader.input.taps.TapEvent``)."""
        pg, s = self.pg, self.session
        if ev.kind == "quit" or (ev.kind == "key" and (ev.key == pg.K_ESCAPE
                                                       or ev.char in ("q", "Q"))):
            self.quit = True
        elif s.phase == "over" and ev.kind in ("key", "mouse", "touch"):
            self.quit = True
        elif ev.kind == "key":
            go = ev.key in (pg.K_SPACE, pg.K_RETURN)
            if s.phase == "arrange" and go:
                s.start_memorize(self.now())
            elif s.phase == "memorize" and (go or ev.char in ("s", "S")):
                s.start_reading()
            elif s.phase == "reading" and go:
                s.send_default()
            elif ev.char in ("u", "U") and self.m.game.card_backs:
                self.scene.backs = not self.scene.backs  # the card backs show the 上の句
        elif ev.pos is not None:
            x, y = ev.pos
            if s.phase == "arrange":
                self._arrange_input(ev, x, y)
            elif s.phase == "memorize" and ev.kind in ("mouse", "touch") and self._in_status(x, y):
                s.start_reading()
            elif (s.phase == "reading" and ev.kind in ("mouse", "touch")
                  and not (self.gate and self.gate.waiting)):
                hit = self.touched(x, y)
                if hit is not None:
                    self.touch(*hit, ev.ns)

    def touched(self, x: float, y: float) -> tuple[str, int] | None:
        """A click at window pixel (x, y) while reading: (the player whose half it lands on —
        two at one board — or the one human, the card under it with the hit margin), or None."""
        player = self._player_at(y)
        c = B.hit(self.scene.boxes(), x, y, B.HIT_MARGIN_MM * self.vp.scale)
        return None if player is None or c is None else (player, c.poem)

    def touch(self, player: str, poem: int, ns: int) -> None:
        """A click on ``poem`` by ``player``, stamped ``ns``: to the session, at the frame
        heard then (an online window sends it to the judge instead)."""
        self.session.touch(player, poem, self.heard(ns))

    def _in_status(self, x, y) -> bool:
        """On the status line ("click here: start"), where it is drawn (goshiki with an
        opponent: the left panel)."""
        rx, ry, rw, rh = self.painter.text_rect("status")
        return B.Rect(rx, ry, rw, rh).contains(x, y, margin=self.vp.scale * 5)

    def _arrange_input(self, ev, x, y):
        own = [c for c in self.scene.boxes() if c.owner in self.humans and not c.upside_down]
        if ev.kind in ("mouse", "touch"):
            if self._in_status(x, y):
                self.session.start_memorize(self.now())
                return
            if not self.m.game.territories:
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
            self.m.arrange(owner, B.move(t, poem, row, side, index))
            self.scene.territories[owner] = self.m.layout()[owner]
            self.notify("moved", (poem, row, side, index))

    # -- the end screen -----------------------------------------------------------------------
    def end_lines(self) -> list[str]:
        """The terminal's lines after the window (the table's from the fourth: ``report``)."""
        return report.end_lines(self.m)

    def result(self) -> list[str]:
        """The end screen's two lines, said to the person (``session.result_lines``)."""
        return result_lines(self.m, self.humans)

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
        head, second = result_lines(self.m, self.humans)
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
        session's tick (while reading, every ``TICK_S``)."""
        evs = self.loop.step()
        if self._events:
            evs = sorted(self._events + evs, key=lambda e: e.ns)
            self._events = []
        for ev in evs:
            self.handle(ev)
            if self.quit:
                return
        now = self.now()
        if self.phase == "reading" and self.gate is not None and self.gate.waiting:
            self.gate.poll()
            text = self.gate.pop_message()
            if text is not None:
                if text.isdigit():  # 3-2-1: a large numeral in the middle of the board
                    self.scene.texts["countdown"] = text
                else:
                    self.scene.texts["status"] = text
            if not self.gate.waiting:
                self.scene.texts["countdown"] = ""
        elif now >= self._next_tick:
            # (a touch is stamped and mapped as it comes in; a bot's touch carries its frame)
            self._next_tick = now + TICK_S
            self._tick(now)

    def _tick(self, now: float) -> None:
        self._poll_between()  # (a frame may have just been drawn in this turn of the loop)
        heard = self.heard()
        self._poll_between()
        st = self.cursor.state if self.cursor is not None else None
        waiting_on = st.segment.poem if st and st.waiting and st.segment is not None else None
        self.session.tick(now, heard, waiting_on,
                          finished=self.cursor is not None and self.cursor.finished)
        self.show()

    def run(self):
        self.open()
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
