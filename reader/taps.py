"""Taps: input sources that stamp each event as it is taken in, and the mapping of a stamp
onto the reading's timeline.

Sources (all stamp with ``time.perf_counter_ns()`` the moment an event is taken in):

  ``TerminalTaps``  a small helper process (``_HELPER``) ``select()``s the tty (cbreak, no
                    echo) with a 1 ms timeout and stamps each read as it wakes; a thread here
                    decodes the keys onto a queue.  A process of its own: a thread of the app
                    waits for the GIL before it can stamp (measured 1-6 ms late for ~1 tap in
                    10 on a busy 2-core machine).  Falls back to stamping on the thread.
  ``WindowTaps``    the pygame window.  SDL's event functions must run on the thread that made
                    the window, so the window's own loop calls ``pump()`` about every 1 ms and
                    draws at 60 fps in between (``WindowLoop``): a tap waits at most one poll
                    gap or one draw.  Keys, mouse buttons and touches (FINGERDOWN) all count.

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

__all__ = ["TapEvent", "PollStats", "TerminalTaps", "WindowTaps", "TapMapper"]


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
        """The stamp in ``time.perf_counter()`` seconds."""
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
#: asks for realtime priority (SCHED_FIFO) where allowed, else a better nice value.
#: Frames to the parent: kind (K keys, E end of input, P poll intervals as float32 ms),
#: perf_counter_ns, payload length, payload.
_HELPER = r"""
import os, select, struct, sys, time
fd, poll_s = int(sys.argv[1]), float(sys.argv[2])
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except (AttributeError, OSError):
    try:
        os.nice(-10)
    except OSError:
        pass
out, head = sys.stdout.fileno(), struct.Struct("<cqI")
def send(kind, ns, payload=b""):
    os.write(out, head.pack(kind, ns, len(payload)) + payload)
polls, last, flushed = [], None, time.perf_counter_ns()
try:
    while True:
        ready, _, _ = select.select([fd, 0], [], [], poll_s)
        ns = time.perf_counter_ns()
        if last is not None:
            polls.append((ns - last) / 1e6)
        last = ns
        if fd in ready:
            try:
                data = os.read(fd, 256)
            except OSError:
                data = b""
            send(b"E" if not data else b"K", ns, data)
            if not data:
                break
        if 0 in ready:
            break
        if ns - flushed > 250_000_000 and polls:
            send(b"P", ns, struct.pack(f"<{len(polls)}f", *polls))
            polls, flushed = [], ns
    if polls:
        send(b"P", last, struct.pack(f"<{len(polls)}f", *polls))
except (BrokenPipeError, KeyboardInterrupt):
    pass
"""


class TerminalTaps:
    """Keys from a tty (or any readable fd), read on a dedicated thread.

    ``with TerminalTaps() as taps: ev = taps.get(timeout)``.  The tty is put in cbreak mode
    (no echo, keys one by one) and restored on exit, Ctrl-C included.  UTF-8 characters are
    decoded whole (kana typed through an IME or tmux arrive as one event each).  End of input
    gives a ``quit`` event.
    """

    def __init__(self, stream=None, fd: int | None = None, poll_ms: float = 1.0):
        import sys

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
            self.q.put(TapEvent(time.perf_counter_ns(), "quit", source="tty"))
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
            proc = subprocess.Popen([sys.executable, "-S", "-c", _HELPER, str(fd),
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
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _run_inline(self) -> None:
        fd = self.fd
        self._pending = b""
        while not self._halt.is_set():
            ready, _, _ = select.select([fd], [], [], self.poll_s)
            ns = time.perf_counter_ns()
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
class WindowTaps:
    """Events of the pygame window, stamped as taken off SDL's queue.

    Call ``pump()`` from the window's thread about every 1 ms (``WindowLoop`` does): it drains
    the queue and returns the new ``TapEvent`` s (also kept on ``q``).  KEYDOWN (with its
    unicode text), MOUSEBUTTONDOWN (left button), FINGERDOWN (touch; position scaled to the
    window) and QUIT are kept; everything else is dropped.
    """

    def __init__(self, drag: bool = False):
        import pygame

        self._pg = pygame
        prompt_gil()
        self.q: queue.Queue[TapEvent] = queue.Queue()
        self.stats = PollStats()
        #: also keep moves and releases ("move" / "up" kinds, with ``pos``): the practice board
        #: drags cards before memorisation
        self.drag = drag
        pygame.event.set_allowed(None)
        allowed = [pygame.KEYDOWN, pygame.MOUSEBUTTONDOWN, pygame.FINGERDOWN, pygame.QUIT]
        if drag:
            allowed += [pygame.MOUSEMOTION, pygame.MOUSEBUTTONUP]
        pygame.event.set_allowed(allowed)

    def pump(self) -> list[TapEvent]:
        pg = self._pg
        events = pg.event.get()
        ns = time.perf_counter_ns()
        self.stats.tick(ns)
        out = []
        for ev in events:
            if ev.type == pg.KEYDOWN:
                out.append(TapEvent(ns, "key", char=getattr(ev, "unicode", "") or "", key=ev.key,
                                    source="window"))
            elif ev.type == pg.MOUSEBUTTONDOWN and getattr(ev, "button", 1) == 1:
                if getattr(ev, "touch", False):  # SDL's mouse copy of a touch: FINGERDOWN has it
                    continue
                out.append(TapEvent(ns, "mouse", pos=tuple(ev.pos), source="window"))
            elif self.drag and ev.type in (pg.MOUSEMOTION, pg.MOUSEBUTTONUP):
                out.append(TapEvent(ns, "move" if ev.type == pg.MOUSEMOTION else "up",
                                    pos=tuple(ev.pos), source="window"))
            elif ev.type == pg.FINGERDOWN:
                surf = pg.display.get_surface()
                w, h = surf.get_size() if surf is not None else (1, 1)
                out.append(TapEvent(ns, "touch", pos=(int(ev.x * w), int(ev.y * h)),
                                    source="window"))
            elif ev.type == pg.QUIT:
                out.append(TapEvent(ns, "quit", source="window"))
        for e in out:
            self.q.put(e)
        return out

    def get(self, timeout: float = 0.0) -> TapEvent | None:
        try:
            return self.q.get_nowait()
        except queue.Empty:
            return None


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
        self._next_frame = time.perf_counter_ns()
        self.frames = 0
        self.frame_times: deque[int] = deque(maxlen=600)
        self.draw_ms = PollStats(2000)  # durations of draws (ticked in pairs)
        self._draw_durations: deque[float] = deque(maxlen=2000)

    def step(self) -> list[TapEvent]:
        evs = self.taps.pump()
        now = time.perf_counter_ns()
        if now >= self._next_frame:
            self._pg_flip(self.draw())
            end = time.perf_counter_ns()
            self._draw_durations.append((end - now) / 1e6)
            self.frames += 1
            self.frame_times.append(end)
            self._next_frame += self.period_ns
            if self._next_frame < end:  # fell behind: do not try to catch up
                self._next_frame = end + self.period_ns // 4
            evs += self.taps.pump()  # what came in while drawing
        # sleep to the next poll (never past the next frame)
        now = time.perf_counter_ns()
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
        after its end), so reaction times stay true; otherwise the standing frame."""
        s = self.stream_frame(ns)
        if s is None:
            return None
        s = max(0.0, s)
        anchors = self.cursor.anchors
        k = bisect.bisect_right([a.stream_frame for a in anchors], math.floor(s)) - 1
        a = anchors[max(k, 0)]
        if a.advancing:
            return a.plan_frame + max(0.0, s - a.stream_frame)
        if continuous and a.insert is None:
            return a.plan_frame + max(0.0, s - a.stream_frame)
        return float(a.plan_frame)


#: the longest "get ready" while an output's timing settles, seconds
WARMUP_MAX_S = 20.0


class SettleGate:
    """Hold a live cursor in its lead silence until the output's DAC times have settled.

    PortAudio's reported DAC times of a new PulseAudio stream wander by up to ±5 ms for its
    first 3-15 s while the sound keeps a steady schedule (``Output.timing_settled``), so a
    drill or a calibration waits ("get ready") before anything is timed; at most ``max_s``
    (default ``KARUTA_WARMUP_MAX_S`` or ``WARMUP_MAX_S``; 0 = no wait).  Call ``start()``
    before ``output.play(cursor)`` and ``poll()`` in the loop: it returns True once, when the
    wait ends.  While ``waiting``, taps are to be ignored.  ``clock`` is passed in.
    """

    def __init__(self, output, cursor, max_s: float | None = None, clock=time.perf_counter):
        self.output = output
        self.cursor = cursor
        self.clock = clock
        if max_s is None:
            max_s = float(os.environ.get("KARUTA_WARMUP_MAX_S", WARMUP_MAX_S))
        self.max_s = max_s
        self.until: float | None = None
        self.started = 0.0
        self.waited_s = 0.0
        self._next_check = 0.0

    def _settled(self) -> bool:
        return getattr(self.output, "timing_settled", lambda: True)()

    @property
    def waiting(self) -> bool:
        return self.until is not None

    def start(self) -> bool:
        """Hold the cursor if the timing is not settled yet; True if it is now waiting."""
        self.started = self.clock()
        if self.max_s > 0 and not self._settled():
            self.cursor.hold()
            self.until = self.started + self.max_s
        return self.waiting

    def poll(self) -> bool:
        if self.until is None:
            return False
        now = self.clock()
        if now < self._next_check:
            return False
        self._next_check = now + 0.1
        if now >= self.until or self._settled():
            self.until = None
            self.waited_s = now - self.started
            self.cursor.resume()
            return True
        return False
