"""When sounds begin, as heard on a null sink's monitor (``Onsets``), and which heard onset
starts a segment of a plan (``onset_number``): the window tests' clock for a card's reading
(tests/test_practice_window.py, test_online_window.py) and scripts/bench_online.py's
reference ear."""
from __future__ import annotations

import os
import subprocess
import time

import numpy as np

#: a sound after this much silence is an onset: the 1 s 間 before a 上の句 counts, the jo-ka's
#: shorter gaps and a stalling new stream's short dropouts do not
GAP_S = 0.85


class Onsets:
    """When sounds begin, as heard: reads the null sink's monitor (``parec``) and notes the
    monotonic time of each sound that follows at least ``GAP_S`` of silence.  A new PulseAudio
    stream may stall a few tenths of a second after it starts, so neither the key press nor
    the first sound is a clock for a later card: the onset of its own 上の句 is."""

    def __init__(self, sink="ci_sink", env=None):
        import threading

        self.proc = subprocess.Popen(
            ["parec", "-d", f"{sink}.monitor", "--raw", "--format=s16le", "--rate=48000",
             "--channels=1", "--latency-msec=5"], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, bufsize=0, env=env)
        self.times: list[float] = []
        self.cv = threading.Condition()
        self.listening = threading.Event()  # set once the monitor's samples arrive
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        fd = self.proc.stdout.fileno()
        quiet = 48000
        while True:
            try:
                raw = os.read(fd, 4096)
            except OSError:
                return
            now = time.monotonic()
            if not raw:
                return
            self.listening.set()
            x = np.frombuffer(raw[: len(raw) // 2 * 2], np.int16)
            loud = np.flatnonzero(np.abs(x) > 300)
            if loud.size:
                first = int(loud[0])
                if quiet + first >= 48000 * GAP_S:
                    with self.cv:
                        self.times.append(now - (x.shape[0] - first) / 48000)
                        self.cv.notify_all()
                quiet = x.shape[0] - 1 - int(loud[-1])
            else:
                quiet += x.shape[0]

    def wait(self, n, after: float = 0.0, timeout=60) -> float:
        """The ``n``-th onset heard after monotonic time ``after`` (a sound left on the sink
        by anything before it — another test's stream ending — is not the reading's)."""
        def since():
            return [t for t in self.times if t >= after]

        with self.cv:
            assert self.cv.wait_for(lambda: len(since()) >= n, timeout), self.times
            return since()[n - 1]

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def onset_number(plan, voice, seg) -> int:
    """Which heard onset (1-based) starts ``seg``: the same detector run on the plan's own
    samples up to it (before the first wait the live stream is exactly these samples)."""
    from audio.render import PlanCursor

    cur = PlanCursor(plan, voice, threaded=False)
    try:
        x = cur.read(seg.start + 4800)
    finally:
        cur.close()
    loud = np.abs(np.asarray(x, dtype=np.float64).reshape(-1)) * (32767 if np.abs(x).max() <= 1.0
                                                                   else 1) > 300
    idx = np.flatnonzero(loud)
    gaps = np.diff(idx)
    starts = [int(idx[0])] + [int(idx[k + 1]) for k in np.flatnonzero(gaps >= GAP_S * 48000)]
    k = min(range(len(starts)), key=lambda i: abs(starts[i] - seg.start))
    assert abs(starts[k] - seg.start) < 480, (starts[k], seg.start)
    return k + 1
