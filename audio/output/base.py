"""The interface every backend implements, with the one ``play`` / ``wait`` / ``stop`` /
close sequence they all share; a backend fills in only its hooks (``_start``, ``_abort``,
``_release``, ``_convert``)."""
from __future__ import annotations

import math
import threading
import time

from audio.output.feeder import Feeder
from audio.output.timeline import Timeline
from reader.base.errors import DeviceError

__all__ = ["Output", "NO_DEVICE", "underrun_line"]

NO_DEVICE = ("no sound device found: use `karuta render --out reading.wav` to write the "
             "reading to a file")


class Output:
    """The interface every backend implements.

    ``play(cursor)``  start playing (returns at once; one cursor per ``play``)
    ``wait(timeout)`` block until playback has ended; True if it has.  Re-raises an error
                      from the feeder (e.g. a voice that failed).
    ``is_active``     playing now
    ``stop()``        stop at once (idempotent); also stops the cursor
    ``latency``       the backend's reported output latency, seconds
    ``underflows``    buffers the device asked for before the feeder had one (silence was
                      played instead: the realtime side never waits), this ``play``
    ``xruns``         underruns the device itself reported (PortAudio's flags), this ``play``
    ``underruns``     both, over every ``play`` of this output (what commands report)
    ``now()``         the backend's clock, seconds
    ``frame_at(t)``   the stream frame (``PlanCursor.emitted`` timeline) heard at ``now()``-
                      clock time ``t``; None before anything played
    ``frame_now()``   ``frame_at(now())``
    ``frame_at_perf(t)`` the same for a ``time.perf_counter()`` time (key presses)

    Backend hooks: ``_make_feeder(cursor)`` (the thread feeding this ``play``),
    ``_convert(block)`` (float32 block -> what the device takes, on the feeder
    thread), ``_start()`` (begin consuming ``self._feeder.q``; set ``self._done`` at the end),
    ``_abort()`` (stop the device at once), ``_release()`` (free the device after playback).
    """

    sample_rate: int
    blocksize: int
    queue_ms: float = 100.0
    #: audio made ahead of the device beyond ``queue_ms`` where the backend can drop and remake
    #: it on a command (the audio process); 0: ``queue_ms`` only
    ahead_ms: float = 0.0
    tail_ms: float = 0.0
    lead_ms: float = 0.0
    #: ``timeline`` holds the time each buffer is played as the device (or its own schedule)
    #: has it, so a gap in the sound shows as a jump of its line (not an estimate: pygame)
    dac_timeline: bool = False

    def _init_state(self) -> None:
        self._done = threading.Event()
        self._done.set()
        self._halt = threading.Event()
        self._feeder: Feeder | None = None
        self._cursor = None
        self._thread: threading.Thread | None = None
        self.underflows = 0
        self.xruns = 0
        self._underruns_before = 0
        self.timeline = Timeline(self.sample_rate)

    # ------------------------------------------------------------------ shared sequence
    def _blocks(self, ms: float) -> int:
        return math.ceil(ms * self.sample_rate / 1000.0 / self.blocksize)

    def play(self, cursor) -> None:
        """Start playing ``cursor``; returns once the feeder has queued ~``queue_ms`` and the
        device runs.  Raises ``DeviceError`` if the device cannot be opened."""
        if self.is_active:
            raise RuntimeError("already playing: stop() or wait() first")
        if cursor.sample_rate != self.sample_rate:
            raise DeviceError(f"the reading runs at {cursor.sample_rate} Hz but the output was "
                              f"opened at {self.sample_rate} Hz")
        self._underruns_before += self.underflows + self.xruns
        self.underflows = self.xruns = 0
        self.timeline = Timeline(self.sample_rate)
        self._cursor = cursor
        self._feeder = self._make_feeder(cursor)
        self._halt.clear()
        self._prepare()
        self._done.clear()
        self._feeder.start()
        self._feeder.prefilled.wait()
        self._start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the reading has played out (True) or ``timeout`` s passed (False)."""
        if not self._done.wait(timeout):
            return False
        self._close()
        if self._feeder is not None and self._feeder.error is not None:
            err, self._feeder.error = self._feeder.error, None
            raise err
        return True

    def stop(self) -> None:
        """Stop at once (idempotent): the cursor, the feeder, the device, the player thread."""
        if self._cursor is not None:
            self._cursor.stop()
        self._halt.set()
        if self._feeder is not None:
            self._feeder.halt.set()
        self._abort()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._done.set()
        self._close()

    def _close(self) -> None:
        if self._feeder is not None:
            self._feeder.halt.set()
            if self._feeder.is_alive() and self._feeder is not threading.current_thread():
                self._feeder.join(timeout=2.0)
        self._release()
        if self._cursor is not None:
            self._cursor.close()

    @property
    def is_active(self) -> bool:
        return not self._done.is_set()

    @property
    def underruns(self) -> int:
        """Underruns over every ``play`` of this output: buffers filled with silence because
        the feeder was late, plus the device's own underrun reports."""
        self._sync_counters()
        return self._underruns_before + self.underflows + self.xruns

    # ------------------------------------------------------------------ hooks
    def _make_feeder(self, cursor):
        """The thread that feeds the device from ``cursor`` for this ``play`` (``Feeder``; a
        timeline source has its own: ``timed.TimelineFeeder``)."""
        return Feeder(cursor, self.blocksize, max(2, self._blocks(self.queue_ms)),
                      self._convert, self._blocks(self.tail_ms) if self.tail_ms else 0,
                      self._blocks(self.lead_ms) if self.lead_ms else 0,
                      self._blocks(self.ahead_ms) if self.ahead_ms else 0)

    def _convert(self, block):
        return block

    def _prepare(self) -> None:
        """Open the device for this ``play`` (before the feeder starts)."""

    def _start(self) -> None:
        raise NotImplementedError

    def _abort(self) -> None:
        pass

    def _sync_counters(self) -> None:
        """Bring ``underflows`` / ``xruns`` up to date (a backend counting elsewhere)."""

    def _release(self) -> None:
        pass

    # ------------------------------------------------------------------ timing
    @property
    def latency(self) -> float:
        return 0.0

    def now(self) -> float:
        return time.perf_counter()

    def frame_at(self, t: float) -> float | None:
        return self.timeline.frame_at(t)

    def frame_now(self) -> float | None:
        return self.frame_at(self.now())

    def perf_to_now(self, t_perf: float) -> float:
        """Convert a ``time.perf_counter()`` time to this backend's clock (paired readings)."""
        return t_perf

    def frame_at_perf(self, t_perf: float) -> float | None:
        return self.frame_at(self.perf_to_now(t_perf))

    def timing_settled(self) -> bool:
        """Whether ``frame_at`` can be trusted yet (a stream's first seconds may not be)."""
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def underrun_line(output, *, stopped: bool = False) -> str | None:
    """The line a command prints at its end about the audio: how many underruns (silence the
    device played because audio was late), and what that means.  None for an object that is
    not an output, and for underruns when the user stopped the sound (``stopped``: ``q``,
    Ctrl-C): a stop cuts the sound short on purpose, and a count that reads as an error then
    (issue 34: ``karuta: audio: 105 underruns`` after a Ctrl-C) tells the user nothing."""
    n = getattr(output, "underruns", None)
    if n is None:
        return None
    if n == 0:
        return "audio: no underruns"
    if stopped:
        return None
    return (f"karuta: audio: {n} underrun{'s' if n != 1 else ''} (gaps of silence in the "
            f"sound: the machine was too busy to keep the sound device fed{' once' if n == 1 else ''})")
