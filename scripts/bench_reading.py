#!/usr/bin/env python3
"""Benchmark: a whole 100-card kyogi reading with the built-in synthesized voice, end to end.

    python scripts/bench_reading.py [--seed 1]

Runs `karuta render --out X.wav` twice in a fresh process each time, with a temporary
KARUTA_CACHE_DIR: cold (every clip synthesized: jo-ka + 100 上の句 + 100 下の句) and warm (from
the voice cache).  Prints audio seconds, wall seconds, the ratio, the CPU seconds (karuta and its
synthesis workers, for a shared machine) and the peak resident memory
of the largest process (karuta itself, or one synthesis worker).
Targets (issue 2): warm >= 200x real time; cold synthesis <= 0.1x real time; <= 300 MiB.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import soundfile as sf


_CHILD = """
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, capture_output=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - t, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)
"""


def run(out: Path, env: dict, seed: int) -> tuple[float, float, float]:
    """(wall seconds, peak MiB of the largest process, CPU seconds of karuta and its synthesis
    workers) of one `karuta render`, measured by a fresh parent so the figures are this run's
    alone."""
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, sys.executable, "-m", "reader.cli", "render", "--out", str(out),
         "--seed", str(seed)], env=env, check=True, capture_output=True, text=True)
    wall, peak_kib, cpu = res.stdout.split()
    return float(wall), int(peak_kib) / 1024, float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="karuta-bench-"))
    env = dict(os.environ, KARUTA_CACHE_DIR=str(root / "cache"))
    try:
        out = root / "reading.wav"
        cold, cold_mem, cold_cpu = run(out, env, a.seed)
        audio = sf.info(str(out)).duration
        warm, warm_mem, _ = run(out, env, a.seed)
        print(f"100-card kyogi reading, synthesized voice, seed {a.seed}: {audio:.1f} s of audio "
              f"({audio / 60:.1f} min), {out.stat().st_size / 2**20:.0f} MiB WAV")
        print(f"  cold (synthesize every clip, 2 workers): {cold:.1f} s wall = {cold / audio:.3f}x real time "
              f"(target <= 0.1x); peak {cold_mem:.0f} MiB (largest process)")
        print(f"  cold CPU: {cold_cpu:.1f} s = {cold_cpu / audio:.3f} CPU-s per audio second "
              f"(<= 0.1 keeps the target with one free core); load average {os.getloadavg()[0]:.1f}")
        print(f"  warm (from the voice cache):             {warm:.2f} s wall = {audio / warm:.0f}x faster "
              f"than real time (target >= 200x); peak {warm_mem:.0f} MiB (target <= 300 MiB)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
