"""An ear on a PulseAudio sink: each onset of sound on its monitor, placed by the capture's
own ADC times (``Ear``: a process of its own running ``ear_main``).  The online, web and
startup benchmarks listen with it."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

from testbed.sound import RATE

SCRIPTS = Path(__file__).resolve().parent.parent

#: an ear's capture latency (s): any works, its ADC times place every sample
EAR_LATENCY_S = 0.02


def ear_main(gap_s: float) -> None:
    """Record the default source (``PULSE_SOURCE``: a sink's monitor) through
    PortAudio and print ``onset T`` (``time.perf_counter`` s) for each sound after ``gap_s``
    of silence, placed by the capture's own ADC times (``inputBufferAdcTime``, paired with
    ``perf_counter`` as the app pairs its DAC times).  Not ``parec``'s arrival: a monitor
    gets each sample when its sink renders it, and the sink renders ahead of playing by its
    latency -- which the recorder's own request sets (``parec --latency-msec=5``: the ear
    4-5 ms early, 20: 19 ms; measured against the stream's DAC times here, this ear is
    within 0.5 ms of them at any latency)."""
    import sounddevice as sd

    from audio.output.audio_process import OFFSET, keep_paired, narrowest_pair

    quiet = [RATE * 10]
    clk = [0.0, 0.0, 0.0]

    def cb(x, frames, ti, status):
        loud = np.flatnonzero(np.abs(x[:, 0]) * 32767 > 300)
        if loud.size:
            first = int(loud[0])
            if quiet[0] + first >= gap_s * RATE:
                print(f"onset {ti.inputBufferAdcTime - clk[OFFSET] + first / RATE:.6f}",
                      flush=True)
            quiet[0] = frames - 1 - int(loud[-1])
        else:
            quiet[0] += frames

    stream = sd.InputStream(samplerate=RATE, channels=1, dtype="float32", callback=cb,
                            latency=EAR_LATENCY_S)
    clk[OFFSET] = narrowest_pair(stream, 5)[1]
    stream.start()
    halt = threading.Event()  # (paired again as the app's sounds are: the narrowest of 1 s)
    threading.Thread(target=keep_paired, args=(stream, clk, halt), daemon=True).start()
    print("listening", flush=True)
    sys.stdin.read()  # (its end stops the ear)
    halt.set()
    stream.stop()


class Ear:
    """A sink's onsets as its stream played them (``ear_main`` in a process of its own:
    ``PULSE_SOURCE`` is read once, when PortAudio starts); ``times``: perf_counter s."""

    def __init__(self, sink: str, env: dict, gap_s: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from testbed.ear import ear_main; ear_main({float(gap_s)!r})"],
            env=dict(env, PULSE_SOURCE=f"{sink}.monitor",
                     PYTHONPATH=os.pathsep.join(filter(None, [str(SCRIPTS), env.get("PYTHONPATH")]))),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.times: list[float] = []
        self.cv = threading.Condition()
        self.listening = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        for line in self.proc.stdout:
            if line.startswith("listening"):
                self.listening.set()
            elif line.startswith("onset "):
                with self.cv:
                    self.times.append(float(line.split()[1]))
                    self.cv.notify_all()

    def wait(self, n: int, after: float = 0.0, timeout: float = 60) -> float:
        """The ``n``-th onset after perf time ``after``."""
        def since():
            return [t for t in self.times if t >= after]

        with self.cv:
            if not self.cv.wait_for(lambda: len(since()) >= n, timeout):
                raise TimeoutError(f"{len(since())} onsets heard, waited for {n}")
            return since()[n - 1]

    def close(self):
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


