"""A practice match on this machine as a table (``reader.practice.table``): the session's
rules, the reading on this machine's sound, the log saved after every read.

The reading plays through the output given (``reader.reading.player.open_output``) from a
live ``PlanCursor``; kyogi waits after each 上の句 for the take.  A touch stamped at ``t`` is
the plan frame heard at that instant (``reader.input.taps.TapMapper``, DAC times), the
calibration subtracted — exactly as the speed drill times a tap.  Before the reading a "get
ready" (``SettleGate``) holds it until the output's DAC times have settled, then counts down
(``TableView.countdown``); touches meanwhile are ignored.
"""
from __future__ import annotations

from collections.abc import Callable

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import view as V
from reader.practice.session import PracticeSession, memorize_minutes
from reader.practice.table import SessionTable

__all__ = ["LocalTable", "LogWriter", "freeze_heap"]


def freeze_heap() -> None:
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


class Saver:
    """The log saved after a read, off the caller's thread (an fsync can take 100+ ms on a
    busy disk, and input would wait): the text is made here, written by ``LogWriter``."""

    def __init__(self, log_file):
        self.log_file = log_file
        self._writer = None

    def save(self, m) -> None:
        if self.log_file is not None:
            if self._writer is None:
                self._writer = LogWriter(self.log_file)
            self._writer.put(m.log_text())

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()  # the last save is on disk before we return


class LocalTable(SessionTable):
    """A match ``m`` played at this machine: its humans here (two at one board: ``player_at``
    tells whose half a touch is on).  ``output``: an opened output; ``calibration_ms``: this
    device's delay; ``clock``: the clock input is stamped on; ``log_file``: saved after every
    read; ``db``/``session_id``: the stats database (``record_stats``)."""

    def __init__(self, m, output, *, log_file=None, hints: bool = False,
                 memorize_min: float | None = None, calibration_ms: float = 0.0,
                 clock: Clock = SYSTEM_CLOCK, db=None, session_id: str | None = None,
                 on_news: Callable[[str, object], None] | None = None):
        memorize = memorize_minutes(m.game, m.index, memorize_min)
        session = PracticeSession(m, memorize_s=60.0 * memorize, hints=hints,
                                  on_event=self._news, release=self._release)
        super().__init__(session, here=session.humans, viewer="A", on_news=on_news)
        self.hints = hints
        self.output = output
        self.calibration_ms = float(calibration_ms)
        self.clock = clock
        self.db = db
        self.session_id = session_id
        self.rate = m.plan.sample_rate
        self.cursor = None
        self.mapper = None
        self.gate = None  # the "get ready" before the reading (reader.input.taps.SettleGate)
        self._saver = Saver(log_file)
        self._countdown = ""
        self._gate_line: str | None = None

    @property
    def log_file(self):
        return self._saver.log_file

    # -- the session's news -------------------------------------------------------------------
    def _news(self, name, data):
        if name == "phase" and data == "reading":
            self._saver.save(self.m)  # (the board as arranged is in the log before read 1)
            self._start_reading()
        elif name == "phase" and data == "over":
            if self.cursor is not None:
                self.cursor.stop()
        elif name == "closed" and data.owed is not None:
            self._saver.save(self.m)
        super()._news(name, data)
        if name == "done":
            self._saver.save(self.m)

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
        freeze_heap()

    # -- time on the plan ---------------------------------------------------------------------
    def heard(self, t: float | None = None) -> float | None:
        """The plan frame heard at instant ``t`` (default: now), calibration applied."""
        if self.mapper is None:
            return None
        ns = self.clock.ns() if t is None else round(t * 1e9)
        pf = self.mapper.plan_frame(ns)
        if pf is None:
            return None
        return pf - self.calibration_ms * self.rate / 1000.0

    @property
    def arranging(self) -> bool:
        return self.phase == "arrange"

    @property
    def getting_ready(self) -> bool:
        """The "get ready" before the reading: touches are ignored, ``tick`` is wanted every
        turn of the loop (it polls the output's DAC times)."""
        return self.phase == "reading" and self.gate is not None and self.gate.waiting

    # -- input --------------------------------------------------------------------------------
    def open(self, now: float) -> None:
        """(The reading starts with the phase ``reading``.)"""

    def touch(self, player: str, card: int, t: float, source: str = "") -> None:
        if self.getting_ready:
            return
        self.session.touch(player, card, self.heard(t))

    def pick(self, player: str, card: int) -> None:
        self.session.pick(player, card)

    def send_default(self, player: str | None = None) -> None:
        self.session.send_default()

    def go(self, now: float) -> None:
        """Space, Enter or START: arranged (the memorisation starts), memorised (the reading
        starts), or a send owed (the highlighted one)."""
        s = self.session
        if s.phase == "arrange":
            s.start_memorize(now)
        elif s.phase == "memorize":
            s.start_reading()
        elif s.phase == "reading":
            s.send_default()

    def skip(self) -> None:
        """The reading starts now (the memorisation skipped; a test: the arrangement too)."""
        self.session.start_reading()

    # -- the loop -----------------------------------------------------------------------------
    def tick(self, now: float) -> tuple[V.TableView, list[V.Event]]:
        if self.getting_ready:
            self.gate.poll()
            text = self.gate.pop_message()
            if text is not None:
                if text.isdigit():  # 3-2-1: a large numeral in the middle of the board
                    self._countdown = text
                else:
                    self._gate_line = text
            if not self.gate.waiting:
                self._countdown = ""
        else:
            heard = self.heard()
            st = self.cursor.state if self.cursor is not None else None
            waiting_on = st.segment.poem if st and st.waiting and st.segment is not None \
                else None
            self.session.tick(now, heard, waiting_on,
                              finished=self.cursor is not None and self.cursor.finished)
        return self.view(now, self._countdown), self.events()

    def line(self, now: float):
        if self._gate_line is not None:
            if self.getting_ready:
                return V.Notice(self._gate_line), None
            self._gate_line = None
        return super().line(now)

    def close(self) -> None:
        """The reading stopped, the output stopped, the last save on disk."""
        if self.cursor is not None:
            self.cursor.stop()
        try:
            self.output.stop()
        finally:
            if self.cursor is not None:
                self.cursor.close()
            self._saver.close()

    def ready_line(self) -> str | None:
        """How long the "get ready" before the reading took (None: the reading never began)."""
        return None if self.gate is None else self.gate.describe()
