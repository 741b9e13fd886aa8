#!/usr/bin/env python3
"""Benchmark: `karuta --help` start-up, and time to the first sound of `karuta read`.

    python scripts/bench_startup.py [--runs 5]

First sound is measured from outside, as a listener would: a private PulseAudio server with a
null sink is started, `parec` records the sink's monitor, `karuta read --auto` is launched, and
the first non-silent sample's time is compared with the launch time.  Warm cache: a first run
fills the synthesized voice's cache (in a temporary KARUTA_CACHE_DIR), later runs are timed.
Needs pulseaudio and pulseaudio-utils (scripts/setup --test installs them).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RATE = 48000


def help_time(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "reader.cli", "--help"], capture_output=True, check=True)
        out.append(time.perf_counter() - t)
    return out


def start_pulse(root: Path) -> tuple[subprocess.Popen, dict]:
    run = root / "run"
    run.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(run), HOME=str(root))
    env.pop("PULSE_SERVER", None)
    proc = subprocess.Popen(
        ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
         "--use-pid-file=no", "-L", f"module-null-sink sink_name=bench rate={RATE}",
         "-L", "module-native-protocol-unix"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env["PULSE_SERVER"] = f"unix:{run}/pulse/native"
    for _ in range(200):
        if subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0:
            return proc, env
        time.sleep(0.05)
    proc.kill()
    sys.exit("pulseaudio did not start")


def first_sound(env: dict, args: list[str]) -> float:
    rec = subprocess.Popen(
        ["parec", "-d", "bench.monitor", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1",
         "--latency-msec=5"], env=env, stdout=subprocess.PIPE)
    time.sleep(0.5)  # the recorder is running and streaming silence
    # drain what was recorded before the launch, then mark the launch
    os.set_blocking(rec.stdout.fileno(), False)
    while rec.stdout.read(65536):
        pass
    launched = time.perf_counter()
    app = subprocess.Popen([sys.executable, "-m", "reader.cli", "read", "--auto", *args], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # The null sink's monitor only streams while something plays, so time comes from when each
    # chunk arrives (parec's latency is 5 ms): first sound = arrival of the chunk holding the
    # first non-silent sample, minus the samples after it in that chunk.
    found = None
    deadline = launched + 20
    pending = b""
    while found is None and time.perf_counter() < deadline:
        chunk = rec.stdout.read(65536)
        if not chunk:
            time.sleep(0.001)
            continue
        arrived = time.perf_counter()
        pending += chunk
        s = np.frombuffer(pending[: len(pending) // 2 * 2], dtype=np.int16)
        pending = pending[len(s) * 2:]
        nz = np.flatnonzero(np.abs(s) > 64)
        if nz.size:
            found = arrived - (len(s) - nz[0]) / RATE - launched
    app.kill()
    rec.kill()
    app.wait()
    rec.wait()
    if found is None:
        sys.exit("no sound within 20 s: " + app.stderr.read().decode(errors="replace")[-300:])
    return found  # seconds from launch to the first sound reaching the sink


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    for tool in ("pulseaudio", "parec", "pactl"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: run scripts/setup --test")

    h = help_time(a.runs)
    print(f"karuta --help: median {statistics.median(h) * 1000:.0f} ms, max {max(h) * 1000:.0f} ms "
          f"over {a.runs} runs (target <= 300 ms)")

    root = Path(tempfile.mkdtemp(prefix="karuta-bench-"))
    proc, env = start_pulse(root)
    env["KARUTA_CACHE_DIR"] = str(root / "cache")
    try:
        args = ["--seed", "1", "--cards", "3"]
        cold = first_sound(env, args)
        warm = [first_sound(env, args) for _ in range(a.runs)]
        print(f"karuta read (synth voice, kyogi, first sound = jo-ka): cold cache {cold:.2f} s; "
              f"warm cache median {statistics.median(warm):.2f} s, max {max(warm):.2f} s over {a.runs} runs "
              f"(target <= 1.5 s warm)")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
