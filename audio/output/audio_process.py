"""The audio process: a PortAudio stream in a process of its own, fed through shared memory.

Run by ``AudioProcessOutput`` as ``python audio_process.py SHM DEVICE RATE
BLOCKSIZE CHANNELS DTYPE LATENCY``; imports only numpy and sounddevice.  Why a process: a
sounddevice callback is Python, so in the app's process it needs the app's GIL every block;
a redraw, a garbage collection or any C call that keeps the GIL for longer than the device's
buffer then starves the device.  Here the only Python that runs is the callback, a clock
pairing every 0.1 s and a line reader on stdin.

Shared memory (``SharedLayout``, made by the parent): a ring of ``NBLOCKS`` blocks the
parent's feeder writes ahead (``ctl[W]`` blocks written, ``ctl[R]`` read), counters, the DAC
timeline (one frame / DAC time / callback time triple per buffer) and the clock pairing
(``clk``: stream clock − ``perf_counter``, its pair width, when).  One writer per field; the
counters are published after the data they cover (x86-64 keeps stores in order).

Protocol on the pipes: child -> ``open LATENCY`` (or ``error MESSAGE``) once the stream is
open; parent -> ``start``; child -> ``done`` when the end mark was played; parent ->
``abort`` (or EOF on stdin) stops at once.
"""
from __future__ import annotations

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


class SharedLayout:
    """Numpy views of the shared block: ``ctl``, ``clk``, ``ring_frames``, ``ring``,
    ``tl_frames``, ``tl_times``, ``tl_cur``."""

    def __init__(self, buf, blocksize: int, dtype: str, nblocks: int = NBLOCKS,
                 tl_size: int = TL_SIZE):
        dt = np.dtype(np.int16 if dtype == "int16" else np.float32)
        self.nblocks, self.blocksize, self.tl_size = nblocks, blocksize, tl_size
        off = 0

        def take(shape, t):
            nonlocal off
            t = np.dtype(t)
            n = int(np.prod(shape)) * t.itemsize
            a = np.ndarray(shape, dtype=t, buffer=buf, offset=off)
            off += (n + 63) // 64 * 64
            return a

        self.ctl = take((CTL,), np.int64)
        self.clk = take((CLK,), np.float64)
        self.ring_frames = take((nblocks,), np.int64)
        self.ring = take((nblocks, blocksize), dt)
        self.tl_frames = take((tl_size,), np.int64)
        self.tl_times = take((tl_size,), np.float64)
        self.tl_cur = take((tl_size,), np.float64)
        self.nbytes = off

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


def main(argv: list[str]) -> int:
    import signal
    from multiprocessing import resource_tracker, shared_memory

    # a Ctrl-C at the terminal reaches this process too: the parent decides what it means and
    # stops the stream itself ("abort", or EOF on stdin when the parent is gone)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    name, device, rate, blocksize, channels, dtype, latency, lead_frames = argv
    lead_frames = int(lead_frames)
    device, rate, blocksize, channels = int(device), int(rate), int(blocksize), int(channels)
    latency = latency if latency in ("low", "high") else float(latency)
    shm = shared_memory.SharedMemory(name=name)
    try:  # the parent owns (and unlinks) the block
        resource_tracker.unregister(shm._name, "shared_memory")
    except Exception:  # noqa: BLE001 - the tracker's private API; harmless if absent
        pass
    lay = SharedLayout(shm.buf, blocksize, dtype)
    ctl, ring, ring_frames = lay.ctl, lay.ring, lay.ring_frames
    tl_frames, tl_times, tl_cur = lay.tl_frames, lay.tl_times, lay.tl_cur
    nblocks, tl_size = lay.nblocks, lay.tl_size
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
    finished = threading.Event()
    t0 = [0.0]
    wait_frames = [0]

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
        while int(ctl[W]) <= r and time.perf_counter() < end and not finished.is_set():
            time.sleep(0.0002)
        return int(ctl[W]) > r

    normal_end = [False]  # the reading played to its end (else the device stopped the stream)
    try:
        stream = sd.OutputStream(samplerate=rate, blocksize=blocksize, device=device,
                                 channels=channels, dtype=dtype, latency=latency,
                                 callback=callback, finished_callback=finished.set)
    except sd.PortAudioError as e:
        out.write("error " + " ".join(str(e).split()) + "\n")
        out.flush()
        return 1
    wait_frames[0] = int(2.0 * float(stream.latency) * rate)
    halt = threading.Event()
    pairing = threading.Thread(target=keep_paired, args=(stream, lay.clk, halt), daemon=True)
    out.write(f"open {float(stream.latency)!r}\n")
    out.flush()
    aborted = threading.Event()

    def commands():
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "start":
                pairing.start()
                stream.start()
            elif cmd == "abort":
                break
        aborted.set()
        finished.set()

    threading.Thread(target=commands, daemon=True).start()
    finished.wait()
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
    try:
        shm.close()
    except BufferError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
