#!/usr/bin/env python3
"""Benchmark: the CPU an alignment (``audio.align.align``, what ``karuta voice add`` does for
each clip) spends with numpy's OpenBLAS on its default threads (one per core) and on the one
thread ``karuta`` sets (``reader.cli._one_blas_thread``), each in a fresh process.

    python scripts/bench_blas_threads.py [--clips 6]

The clips: ToneVoice 上の句 (no synthesis needed) re-timed by 0.85 with noise, aligned with
their own reading.  Prints CPU seconds (user + system of the process, every thread) and wall
seconds per setting, the timelines' agreement, and the CPU ratio.  On a machine the other
processes keep busy the spinning threads cost most (they compete for the same cores).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from audio.align import align
from audio.stretch import stretch
from audio.voice import SpeechItem, ToneVoice

v = ToneVoice()
rng = np.random.default_rng(1)
items = [SpeechItem(str(k), "kami") for k in range(1, 1 + int(sys.argv[1]))]
clips = []
for it in items:
    ref = v.samples(it)
    rec = stretch(ref, 48000, 0.85)
    rec = 0.5 * rec + rng.normal(0, 0.003, len(rec)).astype(np.float32)
    clips.append((rec, ref, v.layout(it)))
c0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
starts = [[m.start for m in align(rec, 48000, ref, lay).morae] for rec, ref, lay in clips]
c1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
print(json.dumps({"cpu": c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, "wall": w1 - w0,
                  "starts": starts}))
"""


def run(clips: int, one_thread: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if one_thread:
        env["OPENBLAS_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", _CHILD, str(clips)], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, default=6)
    args = ap.parse_args()
    default, one = run(args.clips, False), run(args.clips, True)
    print(f"{args.clips} alignments, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(f"  OpenBLAS default threads: {default['cpu']:6.2f} CPU-s {default['wall']:6.2f} s wall")
    print(f"  OpenBLAS one thread:      {one['cpu']:6.2f} CPU-s {one['wall']:6.2f} s wall")
    print(f"  same timelines: {default['starts'] == one['starts']}")
    print(f"  CPU ratio default / one thread: {default['cpu'] / max(one['cpu'], 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
