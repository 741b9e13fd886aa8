"""The audio process: a PortAudio stream in a process of its own, fed through shared memory.

Run by ``AudioProcessOutput`` as ``python audio_process.py SHM DEVICE RATE BLOCKSIZE
CHANNELS DTYPE LATENCY LEAD [SOURCE]``; imports only numpy and sounddevice.  Why a process: a
sounddevice callback is Python, so in the app's process it needs the app's GIL every block;
a redraw, a garbage collection or any C call that keeps the GIL for longer than the device's
buffer then starves the device.  Here the only Python that runs is the callback, a clock
pairing every 0.1 s and a line reader on stdin.

Shared memory (``SharedLayout``, made by the parent): a ring of ``NBLOCKS`` blocks the
parent's feeder writes ahead (``ctl[W]`` blocks written, ``ctl[R]`` read), counters, the DAC
timeline (one frame / DAC time / callback time triple per buffer) and the clock pairing
(``clk``: stream clock − ``perf_counter``, its pair width, when).  One writer per field; the
counters are published after the data they cover (x86-64 keeps stores in order).

A timeline source (``SOURCE``: a JSON object naming a second block, ``TimelineLayout``; made
by ``timed.TimelineOutput``) is played instead of the ring: each buffer is made in the
callback from its DAC time (``TimelineFill``: the timeline's anchors, the speech's samples in
a pool the parent fills ahead), into buffers made once.

Protocol on the pipes: child -> ``open LATENCY`` (or ``error MESSAGE``) once the stream is
open; parent -> ``start``; child -> ``done`` when the end mark was played (a timeline source:
its plan's end); parent -> ``reopen`` closes the stream and plays on in a new one (a timeline
source); parent -> ``abort`` (or EOF on stdin) stops at once.  Whether the process ended by
itself is for the parent to decide (``process.AudioProcess``): it says ``lost`` when the
stream ended before the reading did.
"""
from __future__ import annotations

import bisect
import math
import os
import sys
import threading
import time

import numpy as np

# ctl fields (int64)
W, R, UNDERFLOWS, XRUNS, BUFFERS, TL_N, LEAD_XRUNS = range(7)
CTL = 8
# clk fields (float64)
OFFSET, WIDTH, WHEN = range(3)
CLK = 4
END = -(1 << 62)  # the frame value of the end mark
TL_SIZE = 1 << 16
NBLOCKS = 512  # 5.1 s of 480-frame blocks: the parent's feeder may run seconds ahead


class _Carver:
    """Numpy arrays cut one after another out of a shared buffer, each on a 64-byte line
    (``take(shape, dtype)``; ``off``: the bytes used so far)."""

    def __init__(self, buf):
        self.buf, self.off = buf, 0

    def __call__(self, shape, t) -> np.ndarray:
        t = np.dtype(t)
        n = int(np.prod(shape)) * t.itemsize
        a = np.ndarray(shape, dtype=t, buffer=self.buf, offset=self.off)
        self.off += (n + 63) // 64 * 64
        return a


class SharedLayout:
    """Numpy views of the shared block: ``ctl``, ``clk``, ``ring_frames``, ``ring``,
    ``tl_frames``, ``tl_times``, ``tl_cur``."""

    def __init__(self, buf, blocksize: int, dtype: str, nblocks: int = NBLOCKS,
                 tl_size: int = TL_SIZE):
        dt = np.dtype(np.int16 if dtype == "int16" else np.float32)
        self.nblocks, self.blocksize, self.tl_size = nblocks, blocksize, tl_size
        take = _Carver(buf)

        self.ctl = take((CTL,), np.int64)
        self.clk = take((CLK,), np.float64)
        self.ring_frames = take((nblocks,), np.int64)
        self.ring = take((nblocks, blocksize), dt)
        self.tl_frames = take((tl_size,), np.int64)
        self.tl_times = take((tl_size,), np.float64)
        self.tl_cur = take((tl_size,), np.float64)
        self.nbytes = take.off

    @classmethod
    def size(cls, blocksize: int, dtype: str, nblocks: int = NBLOCKS,
             tl_size: int = TL_SIZE) -> int:
        itemsize = 2 if dtype == "int16" else 4
        parts = [CTL * 8, CLK * 8, nblocks * 8, nblocks * blocksize * itemsize,
                 tl_size * 8, tl_size * 8, tl_size * 8]
        return sum((n + 63) // 64 * 64 for n in parts)

    def release(self) -> None:
        for k in ("ctl", "clk", "ring_frames", "ring", "tl_frames", "tl_times", "tl_cur"):
            setattr(self, k, None)


def narrowest_pair(stream, pairs: int = 5, *, enough: float = 0.0,
                   skip_errors: bool = False) -> tuple[float, float]:
    """(width, stream clock − perf_counter) from the narrowest of ``pairs`` paired readings
    (perf, ``stream.time``, perf; the midpoint is off by up to half the width), stopping early
    at one narrower than ``enough``.  ``skip_errors``: a reading PortAudio refuses ("Error
    getting stream time": the stream is starting, stopping or its device hiccupped) is skipped
    (``(inf, 0.0)`` when all were); otherwise its error is raised."""
    from sounddevice import PortAudioError

    best_w, best_off = math.inf, 0.0
    for _ in range(pairs):
        a = time.perf_counter()
        try:
            st = float(stream.time)
        except PortAudioError:
            if not skip_errors:
                raise
            continue
        b = time.perf_counter()
        if b - a < best_w:
            best_w, best_off = b - a, st - (a + b) / 2.0
            if best_w < enough:
                break
    return best_w, best_off


def realtime_priority() -> bool:
    """Realtime priority (``SCHED_FIFO``) for the calling thread where allowed (root,
    CAP_SYS_NICE, an rtprio limit), else a better nice value, else as it is; threads it
    creates later inherit it.  True if realtime."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        return True
    except (AttributeError, OSError):
        try:
            os.nice(-10)
        except OSError:
            pass
        return False


def keep_paired(stream, clk, halt: threading.Event, period: float = 0.1) -> None:
    """Publish stream clock − perf_counter from the narrowest of 5 paired readings, every
    ``period`` s (the narrowest of the last second wins: the clocks drift by ppm only)."""
    kept: list[tuple[float, float, float]] = []
    while not halt.is_set():
        # a refused reading: the next pairing (or the next period) serves
        best_w, best_off = narrowest_pair(stream, 5, skip_errors=True)
        if best_w == math.inf:
            halt.wait(period)
            continue
        now = time.perf_counter()
        kept = [k for k in kept if now - k[2] <= 1.0] + [(best_w, best_off, now)]
        w, off, when = min(kept)
        clk[OFFSET] = off
        clk[WIDTH] = w
        clk[WHEN] = when
        halt.wait(period)


# ----------------------------------------------------------------- playing from a timeline
# tctl fields (int64) of a ``TimelineLayout``
ASEQ, NANCH, T_BUFFERS, T_UNDERRUNS, T_LATE, NPLACED, WANT, HOLDS = range(8)
TCTL = 8
# tf fields (float64)
T_OFFSET, MADE_TO = range(2)
TF = 4
MAXA = 1024  # anchors kept (the latest: older ones were heard long ago)
MAXP = 4096  # speech onsets placed (``placed``: the benchmark's)
PLACED_COLS = 8
#: a buffer whose DAC time is this far from where the last one ended slipped (s)
SLIP_S = 0.002


class TimelineLayout:
    """Numpy views of a timeline source's shared block (made by the parent, ``timed.py``):

    ``tctl``/``tf``  counters (``WANT``: the first frame the last buffer held, else the one
                     heard a second later; ``HOLDS``: the first it held, -1: none) and two
                     numbers: the timeline's clock − ``perf_counter``
                     (``tf[T_OFFSET]``, NaN: not known yet) and the instant up to which
                     buffers were made (``tf[MADE_TO]``)
    ``a_at``, ``a_fr`` the anchors (instant on the timeline's clock, plan frame heard then),
                     ``tctl[NANCH]`` of them, written under ``tctl[ASEQ]`` (odd while the
                     parent writes: a seqlock)
    ``w_end``        each wait's end frame (the count stands there until the next anchor)
    ``s_start``, ``s_end`` each speech segment's plan frames; ``s_slot`` the pool slot its
                     samples are in (-1: not fetched), ``s_len`` how many
    ``pool``         ``nslots`` slots of ``slotlen`` float32 samples
    ``placed``       (plan frame, perf s, DAC, callback time, pairing offset, width, age,
                     timeline − perf) of each speech segment's first frame as placed"""

    def __init__(self, buf, nseg: int, nwait: int, nslots: int, slotlen: int):
        self.nseg, self.nwait, self.nslots, self.slotlen = nseg, nwait, nslots, slotlen
        take = _Carver(buf)

        self.tctl = take((TCTL,), np.int64)
        self.tf = take((TF,), np.float64)
        self.a_at = take((MAXA,), np.float64)
        self.a_fr = take((MAXA,), np.int64)
        self.w_end = take((max(1, nwait),), np.int64)
        self.s_start = take((max(1, nseg),), np.int64)
        self.s_end = take((max(1, nseg),), np.int64)
        self.s_slot = take((max(1, nseg),), np.int64)
        self.s_len = take((max(1, nseg),), np.int64)
        self.pool = take((max(1, nslots), max(1, slotlen)), np.float32)
        self.placed = take((MAXP, PLACED_COLS), np.float64)
        self.nbytes = take.off

    @classmethod
    def size(cls, nseg: int, nwait: int, nslots: int, slotlen: int) -> int:
        parts = [TCTL * 8, TF * 8, MAXA * 8, MAXA * 8, max(1, nwait) * 8] + \
            [max(1, nseg) * 8] * 4 + [max(1, nslots) * max(1, slotlen) * 4,
                                     MAXP * PLACED_COLS * 8]
        return sum((n + 63) // 64 * 64 for n in parts)

    def release(self) -> None:
        for k in ("tctl", "tf", "a_at", "a_fr", "w_end", "s_start", "s_end", "s_slot",
                  "s_len", "pool", "placed"):
            setattr(self, k, None)


def _first_at(t0: float, x: float, n: int, rate: float) -> int:
    """The first sample ``i`` in ``[0, n]`` whose instant ``t0 + i / rate`` is at or after
    ``x`` (``n``: none), by the same arithmetic a per-sample array of instants would use."""
    if x <= t0:
        return 0
    if x == math.inf:
        return n
    i = min(max(int(math.ceil((x - t0) * rate)), 0), n)
    while i > 0 and t0 + (i - 1) / rate >= x:
        i -= 1
    while i < n and t0 + i / rate < x:
        i += 1
    return i


class TimelineFill:
    """A timeline source's buffers, made in the audio process's callback from its DAC time:
    frame F of the plan is put where the timeline's anchors say it is heard (each anchor
    counting on at the sample rate, standing at the end of the first wait it reaches until
    the next), the speech's samples from the shared pool, silence elsewhere.  Everything it
    uses is made here once (``buf``, the anchors' copies, the runs): the callback allocates
    no buffer (``tests/test_netsound.py`` holds it to that with tracemalloc).

    ``fill(n, dac, current, underflow)``: the next ``n`` samples into ``buf[:n]``, for a
    buffer PortAudio will play at ``dac`` (its stream clock; ``clk[OFFSET]``: that clock
    minus ``perf_counter``); False once the plan has played out (``tail_s`` after its last
    frame).  Counts, in ``tctl``: ``T_UNDERRUNS``, buffers PortAudio said it played late or
    whose DAC time slipped more than ``SLIP_S`` from where the last one ended (the stream's
    timing moved under what was queued), once the reading has begun; ``T_LATE``, buffers
    whose speech was not in the pool in time (silence there)."""

    MAXRUNS = 8

    def __init__(self, lay: TimelineLayout, clk, rate: int, frames: int,
                 maxframes: int = 1 << 15, tail_s: float = 0.25):
        self.lay, self.clk = lay, clk
        self.rate = float(rate)
        self.frames = int(frames)
        self.tail_s = float(tail_s)
        # fixed for a play: Python lists (bisect without numpy)
        self.starts = [int(x) for x in lay.s_start[:lay.nseg]]
        self.ends = [int(x) for x in lay.s_end[:lay.nseg]]
        self.w_end = [int(x) for x in lay.w_end[:lay.nwait]]
        self.buf = np.zeros(maxframes, np.float32)
        self.maxframes = maxframes
        # two copies of the anchors (one being read into, one in use)
        self._at = [[0.0] * MAXA, [0.0] * MAXA]
        self._fr = [[0] * MAXA, [0] * MAXA]
        self._use = 0
        self.na = 0
        self._seq = -1
        self.run_i = [0] * self.MAXRUNS
        self.run_f = [0] * self.MAXRUNS
        self.run_n = [0] * self.MAXRUNS
        self.end_raw: float | None = None  # where the last buffer ended (stream clock)
        self.last_placed = -1

    # ------------------------------------------------------------------ the anchors
    def _anchors(self) -> None:
        """Take the parent's anchors if they changed (and were not being written)."""
        tctl = self.lay.tctl
        seq = int(tctl[ASEQ])
        if seq == self._seq or seq & 1:
            return
        n = min(int(tctl[NANCH]), MAXA)
        k = 1 - self._use
        at, fr = self._at[k], self._fr[k]
        a_at, a_fr = self.lay.a_at, self.lay.a_fr
        for j in range(n):
            at[j] = float(a_at[j])
            fr[j] = int(a_fr[j])
        if int(tctl[ASEQ]) == seq:  # not torn: use it
            self._use, self.na, self._seq = k, n, seq

    def _wait_end(self, frame: int) -> int | None:
        """The end of the first wait after ``frame`` (the count stands there), or None."""
        w = self.w_end
        j = bisect.bisect_right(w, frame)
        return w[j] if j < len(w) else None

    def _top(self, frame: int) -> int:
        """Where the count from ``frame`` stops: that wait's end, or the plan's end."""
        w = self._wait_end(frame)
        return self.frames if w is None else w

    def heard(self, t: float) -> float | None:
        """The plan frame heard at ``t`` (timeline clock) on the anchors taken: counting on
        from the last anchor at or before ``t``, standing at a wait's end (None: none)."""
        at, fr = self._at[self._use], self._fr[self._use]
        k = bisect.bisect_right(at, t, 0, self.na) - 1
        if k < 0:
            return None
        f = fr[k] + (t - at[k]) * self.rate
        w = self._wait_end(fr[k])
        return float(w) if w is not None and f > w else f

    def runs(self, t0: float, n: int) -> int:
        """The runs of plan frames heard at ``n`` samples from ``t0`` (timeline clock):
        ``run_i[k]`` the first sample, ``run_f[k]`` its frame, ``run_n[k]`` how many
        (consecutive frames); how many runs."""
        rate, na = self.rate, self.na
        at, fr = self._at[self._use], self._fr[self._use]
        nr = 0
        # from the anchor the buffer begins on (or the first), while they begin in it
        k = max(0, bisect.bisect_right(at, t0, 0, na) - 1)
        end = t0 + n / rate
        while k < na and at[k] < end:
            i_lo = _first_at(t0, at[k], n, rate)
            i_hi = _first_at(t0, at[k + 1], n, rate) if k + 1 < na else n
            if i_hi > i_lo:
                f_lo = fr[k] + int(math.floor((t0 + i_lo / rate - at[k]) * rate + 0.5))
                cnt = min(i_hi - i_lo, self._top(fr[k]) - f_lo)
                if cnt > 0 and nr < self.MAXRUNS:
                    self.run_i[nr], self.run_f[nr], self.run_n[nr] = i_lo, f_lo, cnt
                    nr += 1
            k += 1
        return nr

    def frames_at(self, t0: float, n: int) -> np.ndarray:
        """The plan frame at each of ``n`` samples from ``t0`` (-1: none), as ``fill`` places
        them (allocates: tests and diagnostics, never the callback)."""
        self._anchors()
        out = np.full(n, -1, dtype=np.int64)
        for k in range(self.runs(t0, n)):
            i, f, c = self.run_i[k], self.run_f[k], self.run_n[k]
            out[i:i + c] = np.arange(f, f + c)
        return out

    # ------------------------------------------------------------------ the samples
    def _copy(self, i: int, f: int, left: int) -> bool:
        """Plan frames ``f`` on into ``buf[i:]``; False if some speech was not fetched."""
        lay, buf, starts, ends = self.lay, self.buf, self.starts, self.ends
        j = max(0, bisect.bisect_right(starts, f) - 1)
        ok = True
        while left > 0 and j < len(starts):
            s0, s1 = starts[j], ends[j]
            if f >= s1:
                j += 1
                continue
            if f < s0:
                d = min(left, s0 - f)
                i, f, left = i + d, f + d, left - d
                continue
            m = min(left, s1 - f)
            slot = int(lay.s_slot[j])
            if slot < 0:
                ok = False
            else:
                size, o = int(lay.s_len[j]), f - s0
                c = min(m, size - o) if size > o else 0
                if c > 0:
                    buf[i:i + c] = lay.pool[slot, o:o + c]
                if c < m and size > 0:  # (shorter than its segment: its last sample held)
                    buf[i + c:i + m] = lay.pool[slot, size - 1]
            i, f, left = i + m, f + m, left - m
            j += 1
        return ok

    def _place(self, i: int, f: int, c: int, dac: float, raw: float, cur: float,
               offset: float) -> None:
        """Note where each speech segment that begins in this run was placed (a sync point
        between two samples rounds its first frame away: a segment beginning one frame
        before the run's first is placed one sample before it)."""
        starts, lay = self.starts, self.lay
        k = bisect.bisect_left(starts, f - 1)
        while k < len(starts) and starts[k] < f + c:
            s = starts[k]
            k += 1
            n = int(lay.tctl[NPLACED])
            if s == self.last_placed or n >= MAXP:
                continue
            j = i + (s - f)
            row = lay.placed[n]
            clk = self.clk
            row[0] = s
            row[1] = dac + j / self.rate
            row[2] = raw
            row[3] = cur
            row[4] = clk[OFFSET]
            row[5] = clk[WIDTH]
            row[6] = time.perf_counter() - clk[WHEN]
            row[7] = offset
            self.last_placed = s
            lay.tctl[NPLACED] = n + 1

    def fill(self, n: int, raw: float, cur: float = math.nan,
             underflow: bool = False) -> bool:
        lay, buf, rate = self.lay, self.buf, self.rate
        tctl = lay.tctl
        buf[:n] = 0.0
        tctl[T_BUFFERS] += 1
        slipped = self.end_raw is not None and abs(raw - self.end_raw) > SLIP_S
        self.end_raw = raw + n / rate
        off, toff = float(self.clk[OFFSET]), float(lay.tf[T_OFFSET])
        if off != off or toff != toff:  # (NaN: no pairing yet, or the clock's offset unknown)
            return True
        dac = raw - off  # perf_counter
        t = dac + toff  # the timeline's clock
        lay.tf[MADE_TO] = t + n / rate
        self._anchors()
        na = self.na
        if na == 0:
            return True
        at, fr = self._at[self._use], self._fr[self._use]
        if (underflow or slipped) and at[0] <= t:
            tctl[T_UNDERRUNS] += 1  # (a stream's first buffers may underflow: not the reading's)
        late = False
        nr = self.runs(t, n)
        for k in range(nr):
            i, f, c = self.run_i[k], self.run_f[k], self.run_n[k]
            if not self._copy(i, f, c):
                late = True
            self._place(i, f, c, dac, raw, cur, t - dac)
        if late:
            tctl[T_LATE] += 1
        # what the parent fetches ahead of: the first frame heard here, else the one heard
        # in a second
        tctl[HOLDS] = self.run_f[0] if nr else -1
        if nr:
            tctl[WANT] = self.run_f[0]
        else:
            nxt = self.heard(t + 1.0)
            if nxt is not None:
                tctl[WANT] = int(nxt)
        last = na - 1
        top = self._top(fr[last])
        return not (top >= self.frames
                    and t >= at[last] + (self.frames - fr[last]) / rate + self.tail_s)


def main(argv: list[str]) -> int:
    import json
    import signal
    from multiprocessing import resource_tracker, shared_memory

    # a Ctrl-C at the terminal reaches this process too: the parent decides what it means and
    # stops the stream itself ("abort", or EOF on stdin when the parent is gone)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    name, device, rate, blocksize, channels, dtype, latency, lead_frames = argv[:8]
    source = json.loads(argv[8]) if len(argv) > 8 else None  # a timeline source's block
    lead_frames = int(lead_frames)
    device, rate, blocksize, channels = int(device), int(rate), int(blocksize), int(channels)
    latency = latency if latency in ("low", "high") else float(latency)

    def attach(block_name):
        shm = shared_memory.SharedMemory(name=block_name)
        try:  # the parent owns (and unlinks) the block
            resource_tracker.unregister(shm._name, "shared_memory")
        except Exception:  # noqa: BLE001 - the tracker's private API; harmless if absent
            pass
        return shm

    shm = attach(name)
    lay = SharedLayout(shm.buf, blocksize, dtype)
    ctl, ring, ring_frames = lay.ctl, lay.ring, lay.ring_frames
    tl_frames, tl_times, tl_cur = lay.tl_frames, lay.tl_times, lay.tl_cur
    nblocks, tl_size = lay.nblocks, lay.tl_size
    tshm = tlay = fill = None
    if source is not None:
        tshm = attach(source["name"])
        tlay = TimelineLayout(tshm.buf, source["nseg"], source["nwait"], source["nslots"],
                              source["slotlen"])
        fill = TimelineFill(tlay, lay.clk, rate, source["frames"],
                            maxframes=max(blocksize, 8192), tail_s=source["tail"])
    # realtime priority where allowed (root, CAP_SYS_NICE, an rtprio limit), else a better
    # nice value, else as it is: the stream's thread (created later) inherits it.  Only this
    # small process runs at that priority; it sleeps between callbacks.
    realtime_priority()
    out = sys.stdout
    try:
        import sounddevice as sd
    except OSError as e:
        out.write(f"error {e}\n")
        out.flush()
        return 1
    wake = threading.Event()  # the stream in use ended, or a command came
    aborted = threading.Event()
    reopen = threading.Event()
    t0 = [0.0]
    wait_frames = [0]
    normal_end = [False]  # the reading played to its end (else the device stopped the stream)

    def callback(outdata, frames, time_info, status):
        if status.output_underflow:
            # in the lead-in silence (no reading frame played yet) a device start-up hiccup
            # is heard as nothing: counted apart
            ctl[XRUNS if int(ctl[BUFFERS]) * blocksize > lead_frames else LEAD_XRUNS] += 1
        if not t0[0]:
            t0[0] = time.perf_counter()
        r = int(ctl[R])
        if r >= int(ctl[W]):  # empty (W below R only for a moment: the parent's truncate)
            if not clockless(r):
                outdata.fill(0)
                ctl[UNDERFLOWS] += 1
                return
        k = r % nblocks
        f = int(ring_frames[k])
        if f == END:
            outdata.fill(0)
            normal_end[0] = True
            raise sd.CallbackStop
        if channels == 1:
            outdata[:, 0] = ring[k]
        else:
            outdata[:] = ring[k][:, None]
        ctl[R] = r + 1
        n = int(ctl[TL_N])
        j = n % tl_size
        tl_frames[j] = f
        tl_times[j] = time_info.outputBufferDacTime
        tl_cur[j] = time_info.currentTime
        ctl[TL_N] = n + 1
        ctl[BUFFERS] += 1

    def timeline_callback(outdata, frames, time_info, status):
        """A timeline source's buffer: made here from its DAC time (``TimelineFill``)."""
        go = fill.fill(frames, time_info.outputBufferDacTime, time_info.currentTime,
                       status.output_underflow)
        np.copyto(outdata[:, 0], fill.buf[:frames])
        if not go:
            normal_end[0] = True
            raise sd.CallbackStop

    def clockless(r: int) -> bool:
        """A device without a clock (ALSA null/file: takes audio far faster than real time,
        nobody hears it) has no deadline: wait for the parent there (≤ 1 s, and not once the
        stream is stopped: PortAudio's abort waits for this callback, and a quit waited the
        whole second, twice).  A real device never holds more than its buffer beyond the
        elapsed time, so it never waits."""
        played = int(ctl[BUFFERS]) * blocksize
        if played <= wait_frames[0] or \
                played / rate <= 4.0 * (time.perf_counter() - t0[0]):
            return False
        end = time.perf_counter() + 1.0
        while int(ctl[W]) <= r and time.perf_counter() < end and not wake.is_set():
            time.sleep(0.0002)
        return int(ctl[W]) > r

    def open_stream():
        gen = object()
        current[0] = gen

        def finished():  # (a stream closed for a reopen is not the one in use)
            if current[0] is gen:
                wake.set()

        return sd.OutputStream(samplerate=rate, blocksize=blocksize, device=device,
                               channels=channels, dtype=dtype, latency=latency,
                               callback=callback if fill is None else timeline_callback,
                               finished_callback=finished)

    current = [None]
    started = [False]
    try:
        stream = open_stream()
    except sd.PortAudioError as e:
        out.write("error " + " ".join(str(e).split()) + "\n")
        out.flush()
        return 1
    wait_frames[0] = int(2.0 * float(stream.latency) * rate)
    halt = threading.Event()
    pairing = threading.Thread(target=keep_paired, args=(stream, lay.clk, halt), daemon=True)
    out.write(f"open {float(stream.latency)!r}\n")
    out.flush()

    def commands():
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "start":
                started[0] = True
                pairing.start()
                stream.start()
            elif cmd == "reopen" and started[0]:
                reopen.set()
                wake.set()
            elif cmd == "abort":
                break
        aborted.set()
        wake.set()

    threading.Thread(target=commands, daemon=True).start()
    while True:
        wake.wait()
        wake.clear()
        if aborted.is_set() or not reopen.is_set():
            break
        # the stream opened again (the same source, the same shared memory): a sound
        # server that fed it silence for long may place it off its DAC times
        reopen.clear()
        halt.set()
        pairing.join()
        current[0] = None
        try:
            stream.abort()
            stream.close()
            stream = open_stream()
        except sd.PortAudioError:
            break  # (said as the stream's end by itself)
        if fill is not None:
            fill.end_raw = None
        # the new stream's clock paired before it plays (the old one's pairing is not its)
        w, off = narrowest_pair(stream, 5, skip_errors=True)
        if w < math.inf:
            lay.clk[OFFSET], lay.clk[WIDTH], lay.clk[WHEN] = off, w, time.perf_counter()
        halt = threading.Event()
        pairing = threading.Thread(target=keep_paired, args=(stream, lay.clk, halt),
                                   daemon=True)
        pairing.start()
        stream.start()
    halt.set()
    try:
        if aborted.is_set():
            stream.abort()
        stream.close()
    except sd.PortAudioError:
        pass
    if not aborted.is_set():
        # "lost": the stream ended by itself before the reading did (device or sound server gone)
        out.write("done\n" if normal_end[0] else "lost\n")
        out.flush()
    lay.release()
    del ctl, ring, ring_frames, tl_frames, tl_times, tl_cur
    fill = None
    for block, layout in ((shm, lay), (tshm, tlay)):
        if layout is not None:
            layout.release()
        if block is not None:
            try:
                block.close()
            except BufferError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
