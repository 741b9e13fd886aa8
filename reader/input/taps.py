"""Taps: input sources that stamp each event as it is taken in, and the mapping of a stamp
onto the reading's timeline.

Sources (all stamp the moment an event is taken in, on the one monotonic clock: a
``reader.base.clock.Clock``'s ``ns()``, ``SYSTEM_CLOCK`` unless one is passed in; the stamping
processes, which run apart with the standard library only, read ``time.perf_counter_ns()``,
the same clock):

  ``TerminalTaps``  a small helper process (``tty_stamper.py``) ``select()``s the tty (cbreak, no
                    echo) with a 1 ms timeout and stamps each read as it wakes; a thread here
                    decodes the keys onto a queue.  A process of its own: a thread of the app
                    waits for the GIL before it can stamp (measured 1-6 ms late for ~1 tap in
                    10 on a busy 2-core machine).  Falls back to stamping on the thread.
  ``WindowTaps``    the pygame window.  Under X11 a small stamping process (``XStamper``)
                    stamps key and button presses as the X server delivers them (XInput2 raw
                    events), so a redraw on the window thread delays no stamp; SDL's events
                    (which must be taken on the window's thread, ``pump()`` about every 1 ms
                    in ``WindowLoop``) get the matching stamp.  Touches, and events sent to
                    the window without the X input devices, are stamped by ``pump()``.

Mapping (``TapMapper``): a stamp → the output stream frame heard at that instant
(``Output.frame_at_perf``: with sounddevice, per-buffer ``outputBufferDacTime`` converted from
PortAudio's clock, which follows the wall clock, with a paired reading; with pygame, the
moment a chunk was seen to start plus the mixer buffer — an estimate, ~10 ms constant offset
absorbed by calibration, jitter up to a few ms) → the plan frame
(``PlanCursor.plan_frame_at``), kept fractional.

Accuracy (tests/test_taps.py, scripts/bench_grab.py): sounddevice on a PulseAudio null sink,
a tap injected at a known DAC frame maps back within a fraction of a millisecond.
"""
from __future__ import annotations

import bisect
import math
import os
import queue
import select
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.procs import end_helper

__all__ = ["TapEvent", "PollStats", "TerminalTaps", "WindowTaps", "TapMapper", "timing_moved",
           "sound_gap_ms", "MAX_SHIFT_MS"]


@dataclass(frozen=True)
class TapEvent:
    """An input event, stamped when taken in.

    ``kind``: "key" (``char`` set for a terminal key or a text key; ``key`` the pygame key
    code), "mouse" (``pos``), "touch" (``pos`` in window pixels), "quit".
    """

    ns: int
    kind: str
    char: str = ""
    key: int | None = None
    pos: tuple[int, int] | None = None
    source: str = ""

    @property
    def t(self) -> float:
        """The stamp in seconds (the clock's ``seconds()``)."""
        return self.ns / 1e9


class PollStats:
    """Intervals between successive polls (the last ``size``), in ms."""

    def __init__(self, size: int = 20000):
        self._d: deque[float] = deque(maxlen=size)
        self._last: int | None = None

    def tick(self, ns: int) -> None:
        if self._last is not None:
            self._d.append((ns - self._last) / 1e6)
        self._last = ns

    def reset(self) -> None:
        self._d.clear()
        self._last = None

    def describe(self) -> dict:
        xs = sorted(self._d)
        if not xs:
            return {"n": 0}

        def q(p):
            return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3)

        return {"n": len(xs), "median_ms": q(0.5), "p99_ms": q(0.99), "max_ms": round(xs[-1], 3),
                "mean_ms": round(sum(xs) / len(xs), 3)}


def prompt_gil(interval_s: float = 0.0005) -> None:
    """Let an input thread get the GIL within ``interval_s`` when another Python thread (the
    audio feeder, PortAudio's callback) holds it: Python's default switch interval is 5 ms,
    which showed as 5-12 ms late stamps.  Process-wide; only ever lowered."""
    import sys

    if sys.getswitchinterval() > interval_s:
        sys.setswitchinterval(interval_s)


# ---------------------------------------------------------------------------- terminal
def _decode_one(buf: bytes) -> tuple[str, int]:
    """(first UTF-8 character, bytes used); ("", 0) if incomplete, ("", 1) for a bad byte."""
    b = buf[0]
    need = 1 if b < 0x80 else 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else \
        4 if 0xF0 <= b <= 0xF4 else 0
    if not need:
        return "", 1
    if len(buf) < need:
        return "", 0
    try:
        return buf[:need].decode("utf-8"), need
    except UnicodeDecodeError:
        return "", 1


#: The terminal's stamping process.  A stamp taken on a thread of the app waits for the GIL
#: after ``select()`` wakes (the feeder, PortAudio's callback and the UI hold it): measured
#: 1-6 ms late for ~1 tap in 10 on a busy 2-core machine, 50-90 ms with the thread at realtime
#: priority (priority inversion on the GIL).  A process of its own has no GIL to wait for; it
#: asks for realtime priority (SCHED_FIFO) where allowed, else a better nice value.  The
#: program: ``tty_stamper.py`` (its frames to the parent in its doc).
_HELPER = Path(__file__).with_name("tty_stamper.py")


class TerminalTaps:
    """Keys from a tty (or any readable fd), read on a dedicated thread.

    ``with TerminalTaps() as taps: ev = taps.get(timeout)``.  The tty is put in cbreak mode
    (no echo, keys one by one) and restored on exit, Ctrl-C included.  UTF-8 characters are
    decoded whole (kana typed through an IME or tmux arrive as one event each).  End of input
    gives a ``quit`` event.
    """

    def __init__(self, stream=None, fd: int | None = None, poll_ms: float = 1.0,
                 clock: Clock = SYSTEM_CLOCK):
        import sys

        self.clock = clock
        self.stream = stream if stream is not None else sys.stdin
        self.fd = fd
        self.poll_s = poll_ms / 1000.0
        self.q: queue.Queue[TapEvent] = queue.Queue()
        self.stats = PollStats()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved = None
        self._proc = None
        self._pending = b""

    def __enter__(self) -> "TerminalTaps":
        prompt_gil()
        if self.fd is None:
            try:
                self.fd = self.stream.fileno()
            except (AttributeError, OSError, ValueError):
                self.fd = None
        if self.fd is not None and os.isatty(self.fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        self._thread = threading.Thread(target=self._run, name="karuta-taps", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._halt.set()
        proc = self._proc
        if proc is not None:
            try:
                proc.stdin.close()  # the helper ends at EOF on its stdin
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def _run(self) -> None:
        if self.fd is None:
            self.q.put(TapEvent(self.clock.ns(), "quit", source="tty"))
            return
        try:
            self._run_helper()
        except OSError:  # no helper process: stamp on this thread (GIL-bound, see the class)
            self._run_inline()

    def _emit(self, ns: int, data: bytes) -> bool:
        """Queue the keys of ``data`` (stamped ``ns``); False at end of input."""
        if not data:
            self.q.put(TapEvent(ns, "quit", source="tty"))
            return False
        self._pending += data
        while self._pending:
            ch, used = _decode_one(self._pending)
            if not used:  # an incomplete UTF-8 sequence: wait for its other bytes
                break
            self._pending = self._pending[used:]
            if ch:
                self.q.put(TapEvent(ns, "key", char=ch, source="tty"))
        return True

    def _run_helper(self) -> None:
        import struct
        import subprocess
        import sys

        fd = os.dup(self.fd)  # not 0-2: the helper's stdin/stdout are its pipes to us
        try:
            proc = subprocess.Popen([sys.executable, "-S", str(_HELPER), str(fd),
                                     repr(self.poll_s)], pass_fds=(fd,),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        finally:
            os.close(fd)
        self._proc = proc
        out = proc.stdout.fileno()
        head = struct.Struct("<cqI")
        buf = b""
        self._pending = b""
        try:
            while True:
                chunk = os.read(out, 65536)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= head.size:
                    kind, ns, n = head.unpack_from(buf)
                    if len(buf) < head.size + n:
                        break
                    payload, buf = buf[head.size:head.size + n], buf[head.size + n:]
                    if kind == b"P":
                        for x in struct.unpack(f"<{n // 4}f", payload):
                            self.stats._d.append(x)
                    elif not self._emit(ns, payload):
                        return
        finally:
            end_helper(proc)

    def _run_inline(self) -> None:
        fd = self.fd
        self._pending = b""
        while not self._halt.is_set():
            ready, _, _ = select.select([fd], [], [], self.poll_s)
            ns = self.clock.ns()
            self.stats.tick(ns)
            if not ready:
                continue
            try:
                data = os.read(fd, 256)
            except OSError:
                data = b""
            if not self._emit(ns, data):
                return

    def get(self, timeout: float = 0.0) -> TapEvent | None:
        try:
            return self.q.get(timeout=timeout) if timeout else self.q.get_nowait()
        except queue.Empty:
            return None


# ---------------------------------------------------------------------------- window
#: The window's stamping process (X11): its own connection to the X server, XInput2 raw key
#: and button presses selected on the root window, each stamped with ``perf_counter_ns`` the
#: moment it arrives and sent to the app at once (no round trip to the X server first: a
#: starved X server made that late).  Raw events are not per window: ``WindowTaps`` pairs a
#: stamp only with a press SDL delivered to our window, and only a stamp made since the window
#: thread's previous look at SDL's queue (an older press would have been in that look: it went
#: to another window).  No GIL and no drawing in its way: the app's window thread
#: may be in a redraw when the press arrives.  Asks for realtime priority (SCHED_FIFO) where
#: allowed, else a better nice value.  Touches too: where the server speaks XInput 2.2 (asked
#: for directly: python-xlib's own query announces 2.0), raw touch begins are selected as well.
#: The program: ``x_stamper.py`` (its frames to the parent in its doc).
_XHELPER = Path(__file__).with_name("x_stamper.py")


def x_stamp_frames(fd: int):
    """The frames ``x_stamper.py`` writes to ``fd``, as ``(kind, ns, detail)`` (kind ``b"R"``
    ready (``detail`` 1: touches selected too), ``b"K"`` a key press, ``b"B"`` a button press
    with its button as ``detail``, ``b"T"`` a touch begin), until the pipe ends."""
    import struct

    head = struct.Struct("<cqI")
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return
        if not chunk:
            return
        buf += chunk
        while len(buf) >= head.size:
            yield head.unpack_from(buf)
            buf = buf[head.size:]


class XStamper:
    """Runs ``x_stamper.py`` for window ``wid`` and keeps its stamps: ``take(kind, before_ns,
    after_ns)`` pops the oldest unmatched stamp of ``kind`` ("key" / "mouse" / "touch") not
    after ``before_ns`` and not before ``after_ns`` (older ones are dropped: presses that went
    elsewhere).  ``ok`` once the helper is listening."""

    #: the oldest stamp ``take`` pairs when no ``after_ns`` is given
    MATCH_NS = 300_000_000

    def __init__(self, wid: int):
        import subprocess
        import sys

        self.q = {"key": deque(), "mouse": deque(), "touch": deque()}
        #: the X server gives touches too (XInput 2.2): they are stamped here, not on the
        #: window thread
        self.touch = False
        #: every press stamp received, in order (benchmarks: X delivered -> stamped)
        self.received: deque[int] = deque(maxlen=20000)
        # per kind: a press at or before this was given the window thread's stamp (its X
        # stamp came too late); an X stamp that old arriving now belongs to it, not to the next
        self.floor: dict[str, int] = {}
        self.ok = threading.Event()
        self.ended = threading.Event()
        self.proc = subprocess.Popen([sys.executable, str(_XHELPER), str(wid)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        self._thread = threading.Thread(target=self._read, name="karuta-xstamps", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            self._read_frames()
        finally:
            self.ended.set()

    def _read_frames(self) -> None:
        for kind, ns, detail in x_stamp_frames(self.proc.stdout.fileno()):
            if kind == b"R":
                self.touch = bool(detail)
                self.ok.set()
                continue
            q = {b"K": "key", b"B": "mouse" if detail == 1 else None, b"T": "touch"}.get(kind)
            if q is not None:
                self.q[q].append(ns)
                self.received.append(ns)

    def take(self, kind: str, before_ns: int, after_ns: int | None = None) -> int | None:
        q = self.q.get(kind)
        floor = self.floor.get(kind, 0)
        oldest = before_ns - self.MATCH_NS if after_ns is None else after_ns
        while q:
            ns = q[0]
            if ns < oldest or ns <= floor:
                q.popleft()  # a press meant for nothing we saw (e.g. a key SDL dropped)
                continue
            if ns <= before_ns:
                return q.popleft()
            return None
        return None

    def close(self) -> None:
        end_helper(self.proc)


class WindowTaps:
    """Events of the pygame window.

    Call ``pump()`` from the window's thread about every 1 ms (``WindowLoop`` does): it drains
    SDL's queue and returns the new ``TapEvent`` s (also kept on ``q``).  KEYDOWN (with its
    unicode text), MOUSEBUTTONDOWN (left button), FINGERDOWN (touch; position scaled to the
    window) and QUIT are kept; everything else is dropped.

    Stamps: under X11 a stamping process (``XStamper``) stamps key and button presses, and
    touches where the server speaks XInput 2.2, as the X server delivers them, off this
    thread (a press that arrives while the window thread draws keeps its true time);
    ``pump()`` gives each SDL press the matching stamp (``source="window-x"``): a stamp made
    after the ``pump()`` before the one that saw the press (less ``SLACK_NS`` for the X
    server's delivery), however late that pump was — a window thread stalled for a redraw or
    by a busy machine still gets the true time.  A press whose X stamp has not come within
    ``HOLD_NS`` (events sent to the window without an input device; touches on a server
    without XInput 2.2; other video drivers; a stamping process kept off the CPU) keeps the
    time it was taken off SDL's queue (``source="window"``); a press is delivered at most that
    much later, its stamp unchanged.  ``stamper=False`` (or ``KARUTA_WINDOW_STAMPER=0``): no
    stamping process.  ``lag`` holds, per X-stamped press, how much later the window thread
    took it in (ms); ``close()`` ends the process.
    """

    HOLD_NS = 150_000_000
    SLACK_NS = 20_000_000
    #: the stamping process may read a press a moment after SDL did (it was off the CPU):
    #: such a stamp still belongs to the press, and the earlier of the two times is kept
    LATE_NS = 5_000_000

    def __init__(self, stamper: bool | None = None, drag: bool = False,
                 clock: Clock = SYSTEM_CLOCK):
        import pygame

        self._pg = pygame
        self.clock = clock
        prompt_gil()
        self.q: queue.Queue[TapEvent] = queue.Queue()
        self.stats = PollStats()
        self.lag: deque[float] = deque(maxlen=5000)
        self.counts = {"x": 0, "queue": 0}
        self._held: list[tuple[int, int, object]] = []  # (seen, previous pump, event)
        self._prev_pump_ns = 0
        #: also keep moves and releases ("move" / "up" kinds, with ``pos``): the practice board
        #: drags cards before memorisation
        self.drag = drag
        pygame.event.set_allowed(None)
        allowed = [pygame.KEYDOWN, pygame.MOUSEBUTTONDOWN, pygame.FINGERDOWN, pygame.QUIT]
        if drag:
            allowed += [pygame.MOUSEMOTION, pygame.MOUSEBUTTONUP]
        pygame.event.set_allowed(allowed)
        if stamper is None:
            stamper = os.environ.get("KARUTA_WINDOW_STAMPER", "1") != "0"
        self.stamper: XStamper | None = None
        if stamper:
            self.stamper = self._start_stamper()

    def _start_stamper(self) -> XStamper | None:
        pg = self._pg
        try:
            if pg.display.get_driver() != "x11":
                return None
            wid = pg.display.get_wm_info().get("window")
        except pg.error:
            return None
        if not wid:
            return None
        try:
            st = XStamper(int(wid))
        except OSError:
            return None
        end = SYSTEM_CLOCK.seconds() + 5.0  # (a real wait for a real process)
        while not st.ok.wait(0.01):
            if st.ended.is_set() or SYSTEM_CLOCK.seconds() > end:
                st.close()  # no python-xlib, no XInput2: stamp on this thread
                return None
        return st

    def close(self) -> None:
        if self.stamper is not None:
            self.stamper.close()
            self.stamper = None

    def _event(self, ev, ns: int) -> TapEvent | None:
        pg = self._pg
        if ev.type == pg.KEYDOWN:
            return TapEvent(ns, "key", char=getattr(ev, "unicode", "") or "", key=ev.key,
                            source="window")
        if ev.type == pg.MOUSEBUTTONDOWN and getattr(ev, "button", 1) == 1:
            if getattr(ev, "touch", False):  # SDL's mouse copy of a touch: FINGERDOWN has it
                return None
            return TapEvent(ns, "mouse", pos=tuple(ev.pos), source="window")
        if self.drag and ev.type in (pg.MOUSEMOTION, pg.MOUSEBUTTONUP):
            return TapEvent(ns, "move" if ev.type == pg.MOUSEMOTION else "up",
                            pos=tuple(ev.pos), source="window")
        if ev.type == pg.FINGERDOWN:
            surf = pg.display.get_surface()
            w, h = surf.get_size() if surf is not None else (1, 1)
            return TapEvent(ns, "touch", pos=(int(ev.x * w), int(ev.y * h)), source="window")
        if ev.type == pg.QUIT:
            return TapEvent(ns, "quit", source="window")
        return None

    def pump(self) -> list[TapEvent]:
        events = self._pg.event.get()
        ns = self.clock.ns()
        self.stats.tick(ns)
        prev = self._prev_pump_ns
        self._prev_pump_ns = ns
        for ev in events:
            e = self._event(ev, ns)
            if e is not None:
                self._held.append((ns, prev, e))
        out = []
        keep = []
        for seen, before, e in self._held:
            if self.stamper is not None and (e.kind in ("key", "mouse")
                                             or e.kind == "touch" and self.stamper.touch):
                x = self.stamper.take(e.kind, seen + self.LATE_NS,
                                      before - self.SLACK_NS if before else None)
                if x is not None:
                    x = min(x, seen)
                if x is None and ns - seen < self.HOLD_NS:
                    keep.append((seen, before, e))  # its X stamp may still be on its way
                    continue
                if x is not None:
                    self.lag.append((seen - x) / 1e6)
                    self.counts["x"] += 1
                    e = TapEvent(x, e.kind, char=e.char, key=e.key, pos=e.pos,
                                 source="window-x")
                else:
                    self.counts["queue"] += 1
                    self.stamper.floor[e.kind] = seen
            out.append(e)
        self._held = keep
        for e in out:
            self.q.put(e)
        return out

    def get(self, timeout: float = 0.0) -> TapEvent | None:
        try:
            return self.q.get_nowait()
        except queue.Empty:
            return None

    def describe_stamping(self) -> str:
        """One line: how many presses the stamping process stamped, and how late the window
        thread would have been (the lag it saved), median / max."""
        xs = sorted(self.lag)
        if not xs:
            return (f"stamps: {self.counts['queue']} from the window thread"
                    + ("" if self.stamper is not None else " (no X stamping process)"))
        return (f"stamps: {self.counts['x']} by the X stamping process, {self.counts['queue']} "
                f"from the window thread; window thread behind by {xs[len(xs) // 2]:.2f} ms "
                f"(median), {xs[-1]:.2f} ms (max)")


class WindowLoop:
    """Interleave input polling (~every ``poll_ms``) with drawing (``fps``) on one thread.

    ``step()`` runs one slice: pumps input, and draws when a frame is due (``draw()`` returns
    None for a full flip, or the list of changed rects: under X11 a full 960x640 flip costs
    ~5 ms, a small rect ~0.1 ms, and input waits while drawing); it sleeps to the next poll.  Returns the new events.  ``frames`` counts
    drawn frames (``fps_measured()`` over the last second's frames).
    """

    def __init__(self, taps: WindowTaps, draw, fps: float = 60.0, poll_ms: float = 1.0):
        self.taps = taps
        self.draw = draw
        self.period_ns = int(1e9 / fps)
        self.poll_ns = int(poll_ms * 1e6)
        self._next_frame = taps.clock.ns()
        self.frames = 0
        self.frame_times: deque[int] = deque(maxlen=600)
        self.draw_ms = PollStats(2000)  # durations of draws (ticked in pairs)
        self._draw_durations: deque[float] = deque(maxlen=2000)

    def step(self) -> list[TapEvent]:
        evs = self.taps.pump()
        clock = self.taps.clock
        now = clock.ns()
        if now >= self._next_frame:
            self._pg_flip(self.draw())
            end = clock.ns()
            self._draw_durations.append((end - now) / 1e6)
            self.frames += 1
            self.frame_times.append(end)
            self._next_frame += self.period_ns
            if self._next_frame < end:  # fell behind: do not try to catch up
                self._next_frame = end + self.period_ns // 4
            evs += self.taps.pump()  # what came in while drawing
        # sleep to the next poll (never past the next frame)
        now = clock.ns()
        wake = min(now + self.poll_ns, self._next_frame)
        delay = (wake - now) / 1e9
        if delay > 0.0002:
            time.sleep(delay - 0.0001)
        return evs

    def _pg_flip(self, rects):
        import pygame

        if rects is None:
            pygame.display.flip()
        elif rects:
            pygame.display.update(rects)

    def fps_measured(self) -> float:
        ts = list(self.frame_times)
        if len(ts) < 2:
            return 0.0
        return (len(ts) - 1) / ((ts[-1] - ts[0]) / 1e9)

    def draw_stats(self) -> dict:
        xs = sorted(self._draw_durations)
        if not xs:
            return {"n": 0}
        return {"n": len(xs), "median_ms": round(xs[len(xs) // 2], 3),
                "max_ms": round(xs[-1], 3)}


# ---------------------------------------------------------------------------- mapping
class TapMapper:
    """Stamp → stream frame heard (``output.frame_at_perf``) → plan frame (``cursor``).

    ``plan_frame(ns)`` returns a float plan frame, or None before anything played.  Where the
    cursor advances, the fraction of a frame is kept; in a live wait or hold the plan stands
    still and the frame is where it stands.
    """

    def __init__(self, output, cursor):
        self.output = output
        self.cursor = cursor

    def stream_frame(self, ns: int) -> float | None:
        return self.output.frame_at_perf(ns / 1e9)

    def plan_frame(self, ns: int, *, continuous: bool = True) -> float | None:
        """The plan frame heard at stamp ``ns``.

        ``continuous`` (default): inside a live wait or hold, where the plan stands still, time
        counts on from where it stopped (a tap 400 ms into the wait after a 上の句 is 400 ms
        after its end), so reaction times stay true; otherwise the standing frame.  A hold
        before anything of the plan was heard (the "get ready") always stands."""
        s = self.stream_frame(ns)
        if s is None:
            return None
        s = max(0.0, s)
        anchors = self.cursor.anchors
        k = bisect.bisect_right([a.stream_frame for a in anchors], math.floor(s)) - 1
        a = anchors[max(k, 0)]
        if a.advancing:
            return a.plan_frame + max(0.0, s - a.stream_frame)
        if continuous and a.insert is None and self._heard_before(anchors, max(k, 0)):
            return a.plan_frame + max(0.0, s - a.stream_frame)
        return float(a.plan_frame)

    @staticmethod
    def _heard_before(anchors, k: int) -> bool:
        """Whether the plan was heard moving before anchor ``k``.  A hold before anything was
        read — the "get ready" — stands at its frame: counting on through it would put the
        ear seconds into the reading for the moment between the end of the wait and the sound
        (a board then closed read 1 at once after a long get-ready)."""
        return any(anchors[j].advancing and anchors[j + 1].stream_frame > anchors[j].stream_frame
                   for j in range(k))


# ---------------------------------------------------------------------------- gaps in the sound
#: the sound's timing may move by this much between two instants (``timing_moved``): more is a
#: gap in the sound (the device or sound server stalled) or DAC times that jumped
MAX_SHIFT_MS = 2.0


def _line_moves(timeline, stream_frames, rate: int, around_s: float) -> list[float | None]:
    """For each stream frame after the first: how far (ms) the DAC line (DAC time −
    frame/rate) moved from the ``around_s`` before the previous frame to the ``around_s``
    after this one (medians; the last three buffers up to it when fewer than three after it
    are known yet, as when a tap has just been made).  None: not judged (a frame not played,
    too few DAC times)."""
    import numpy as np

    frames, times = timeline.pairs()
    if frames.shape[0] < 3:
        return [None] * max(0, len(stream_frames) - 1)
    line = times - frames / rate
    span = around_s * rate

    def median(mask):
        return float(np.median(line[mask])) if np.count_nonzero(mask) >= 3 else None

    def after(s):
        got = median((frames > s - 1) & (frames <= s + span))
        if got is None:
            upto = np.flatnonzero(frames <= s)[-3:]
            got = float(np.median(line[upto])) if upto.size == 3 else None
        return got

    moves: list[float | None] = []
    before_prev = None
    for k, s in enumerate(stream_frames):
        if k:
            a = after(s) if s is not None else None
            moves.append(None if before_prev is None or a is None
                         else (a - before_prev) * 1000.0)
        before_prev = None if s is None else median((frames > s - span) & (frames <= s))
    return moves


def timing_moved(timeline, stream_frames, rate: int, *, around_s: float = 0.1,
                 max_shift_ms: float = MAX_SHIFT_MS) -> int | None:
    """The first of ``stream_frames`` (1-based) before which the sound's timing moved: the DAC
    line (median of DAC time − frame/rate over the buffers of the ``around_s`` after it)
    differs from that before the previous one by more than ``max_shift_ms``.  A gap in the
    sound (the device or the sound server stalled: it played silence, then the rest later)
    moves the line by the gap's length; so does a jump of the DAC times.  Whatever was timed
    across it is off by that much: a player tapping by rhythm taps the old beat
    (``karuta calibrate``), a reaction measured across it is short by the gap (the drill,
    ``sound_gap_ms``).  ``stream_frames``: None for one not played.  None: steady (or too
    few DAC times to judge)."""
    for k, m in enumerate(_line_moves(timeline, stream_frames, rate, around_s)):
        if m is not None and abs(m) > max_shift_ms:
            return k + 2
    return None


def sound_gap_ms(output, cursor, since_plan_frame: float, tap_ns: int, *,
                 max_shift_ms: float = MAX_SHIFT_MS) -> float | None:
    """The gap in the sound (ms: how far its timing moved, ``timing_moved``) between plan
    frame ``since_plan_frame`` (a 上の句's start) and the tap stamped ``tap_ns``, if above
    ``max_shift_ms``; None when the sound was steady in between (or the output keeps no DAC
    timeline, or the 上の句 had not started yet)."""
    if not getattr(output, "dac_timeline", False):
        return None
    since = cursor.stream_frame_at(int(since_plan_frame))
    tap = output.frame_at_perf(tap_ns / 1e9)
    if since is None or tap is None or tap <= since:
        return None
    move = _line_moves(output.timeline, [since, tap], output.sample_rate, 0.1)[0]
    return None if move is None or abs(move) <= max_shift_ms else round(move, 1)


#: the longest "get ready" while an output's timing settles, seconds (a fallback: it says so)
WARMUP_MAX_S = 20.0
#: the countdown once the timing has settled: ``COUNTDOWN`` steps of ``COUNTDOWN_STEP_S``
COUNTDOWN = 3
COUNTDOWN_STEP_S = 0.4


class SettleGate:
    """Hold a live cursor in its lead silence until the output's DAC times have settled, then
    count down, then let it go ("get ready").

    PortAudio's reported DAC times of a new PulseAudio stream wander by a few ms for its
    first seconds while the sound keeps a steady schedule (``Output.timing_settled``: the
    recent DAC-time residuals within 0.2 ms for a second), so a drill or a calibration waits
    before anything is timed: usually 1.5-3 s, then a countdown (3, 2, 1: ``COUNTDOWN`` ×
    ``COUNTDOWN_STEP_S``).  ``max_s`` (default ``KARUTA_WARMUP_MAX_S`` or ``WARMUP_MAX_S``;
    0 = no wait) is only a fallback: reaching it sets ``fallback`` and says so.

    Call ``start()`` before ``output.play(cursor)`` and ``poll()`` in the loop: it returns True
    once, when the wait ends.  ``pop_message()`` returns the text to show when it changed
    ("get ready…", "3", "2", "1", the fallback's note, "" at the end), else None.  While
    ``waiting``, taps are to be ignored.  ``clock``: a ``reader.base.clock.Clock`` (its
    ``seconds()``).
    """

    def __init__(self, output, cursor, max_s: float | None = None, clock: Clock = SYSTEM_CLOCK,
                 countdown: int = COUNTDOWN, step_s: float = COUNTDOWN_STEP_S):
        self.output = output
        self.cursor = cursor
        self.clock = clock
        if max_s is None:
            max_s = float(os.environ.get("KARUTA_WARMUP_MAX_S", WARMUP_MAX_S))
        self.max_s = max_s
        self.countdown = max(0, int(countdown))
        self.step_s = step_s
        self.until: float | None = None
        self.started = 0.0
        self.waited_s = 0.0  # the whole "get ready", countdown included
        self.settle_s: float | None = None  # how long the timing took to settle
        self.fallback = False
        self._count_from: float | None = None
        self._next_check = 0.0
        self._message: str | None = None
        self._shown: str | None = None

    def _settled(self) -> bool:
        return getattr(self.output, "timing_settled", lambda: True)()

    @property
    def waiting(self) -> bool:
        return self.until is not None

    def start(self) -> bool:
        """Hold the cursor if the timing is not settled yet; True if it is now waiting."""
        self.started = self.clock.seconds()
        if self.max_s > 0 and not self._settled():
            self.cursor.hold()
            self.until = self.started + self.max_s
            self._message = "get ready…"
        return self.waiting

    def pop_message(self) -> str | None:
        if self._message == self._shown:
            return None
        self._shown = self._message
        return self._message

    def poll(self) -> bool:
        if self.until is None:
            return False
        now = self.clock.seconds()
        if self._count_from is not None:  # counting down
            k = int((now - self._count_from) / self.step_s)
            if k < self.countdown:
                self._message = str(self.countdown - k)
                return False
            return self._end(now)
        if now < self._next_check:
            return False
        self._next_check = now + 0.1
        if self._settled():
            self.settle_s = now - self.started
        elif now >= self.until:
            self.fallback = True
            self.settle_s = None
            self._message = (f"timing did not settle within {self.max_s:.0f} s: starting "
                             f"anyway (taps may be off by a few ms)")
            return self._end(now, keep_message=True)
        else:
            return False
        if self.countdown:
            self._count_from = now
            self._message = str(self.countdown)
            return False
        return self._end(now)

    def _end(self, now: float, keep_message: bool = False) -> bool:
        self.until = None
        self._count_from = None
        self.waited_s = now - self.started
        if not keep_message:
            self._message = ""
        self.cursor.resume()
        return True

    def describe(self) -> str:
        """One line for the end of a command: how long the "get ready" took and why."""
        if self.fallback:
            return f"get ready: {self.waited_s:.1f} s (timing not settled: the {self.max_s:.0f} s cap)"
        if self.max_s <= 0:
            return "get ready: off (no wait for the timing to settle)"
        if self.settle_s is None:
            return "get ready: none (timing already settled)"
        return (f"get ready: {self.waited_s:.1f} s (timing settled after {self.settle_s:.1f} s, "
                f"then a countdown)")
