#!/usr/bin/env python3
"""Benchmark: `karuta --help` start-up, time to the first sound of `karuta read`, and how soon
a command that played sound ends after its last line.

    python scripts/bench_startup.py [--runs 5]

First sound is measured from outside, as a listener would: a private PulseAudio server with a
null sink is started, `parec` records the sink's monitor, `karuta read --auto` is launched, and
the first non-silent sample's time is compared with the launch time.  Warm cache: a first run
fills the synthesized voice's cache (in a temporary KARUTA_CACHE_DIR), later runs are timed.
The end: `karuta read --auto` of one short card, stdout and stderr pipes (as a shell's `|` or
a test), from the arrival of its last line to its exit (it was 2 s: the native stderr filter
waited for the end of its pipe, which the resource tracker every sound command starts holds
until the command has ended).
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
import threading
import time
from pathlib import Path

import numpy as np

from testbed.apps import stop_apps
from testbed.sound import RATE, PulseServer


def help_time(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "reader.cli", "--help"], capture_output=True, check=True)
        out.append(time.perf_counter() - t)
    return out


def first_sound(env: dict, args: list[str] | None) -> tuple[float, float | None]:
    # keep the sink running (an idle null sink's monitor streams nothing, then bursts)
    keep = subprocess.Popen(
        ["pacat", "--playback", "-d", "bench", "--raw", "--format=s16le", f"--rate={RATE}",
         "--channels=1", "--latency-msec=20"], env=env, stdin=open("/dev/zero", "rb"))
    rec = subprocess.Popen(
        ["parec", "-d", "bench.monitor", "--raw", "--format=s16le", f"--rate={RATE}", "--channels=1",
         "--latency-msec=5"], env=env, stdout=subprocess.PIPE)
    time.sleep(1.5)  # the sink, the keeper stream and the recorder have settled
    # drain what was recorded before the launch, then mark the launch
    os.set_blocking(rec.stdout.fileno(), False)
    while rec.stdout.read(65536):
        pass
    said: list[float] = []
    launched = time.perf_counter()
    if args is None:  # baseline: the same pipeline with a bare client (pacat) playing a click
        app = subprocess.Popen(["pacat", "--playback", "-d", "bench", "--raw", "--format=s16le",
                                f"--rate={RATE}", "--channels=1", "--latency-msec=10"], env=env,
                               stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        app.stdin.write((np.ones(4800) * 10000).astype(np.int16).tobytes())
        app.stdin.close()
    else:
        app = subprocess.Popen([sys.executable, "-u", "-m", "reader.cli", "read", "--auto", *args],
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        # the app prints its line for the jo-ka when PortAudio's DAC time says the first frame
        # reaches the speaker: stamp that line as it arrives, on a thread of its own
        def watch():
            for line in app.stdout:
                if "序歌".encode() in line:
                    said.append(time.perf_counter() - launched)
                    return
        threading.Thread(target=watch, daemon=True).start()
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
    # stopped as Ctrl-C stops it (a kill left its synthesis workers and resource tracker
    # running after the benchmark)
    stop_apps([app])
    rec.kill()
    keep.kill()
    keep.wait()
    app.wait()
    rec.wait()
    if found is None:
        sys.exit("no sound within 20 s: " + app.stderr.read().decode(errors="replace")[-300:])
    time.sleep(0.05)
    return found, (said[0] if said else None)  # seconds from launch: sound at the sink; the app's DAC-time report


def exit_after_last_line(env: dict) -> float:
    """Seconds from the arrival of the last line of a short `karuta read --auto` to its exit."""
    app = subprocess.Popen([sys.executable, "-u", "-m", "reader.cli", "read", "--auto", "--cards",
                            "1", "--seed", "1", "--voice", "tone", "--speed", "4", "--no-joka",
                            "--take", "0.1", "--yoin", "0.1"],
                           env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    last = None
    for _ in app.stdout:
        last = time.perf_counter()
    app.wait()
    ended = time.perf_counter()
    if app.returncode != 0 or last is None:
        sys.exit("karuta read --auto failed: " + app.stderr.read().decode(errors="replace")[-300:])
    return ended - last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    for tool in ("pulseaudio", "parec", "pactl", "pacat"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: run scripts/setup --test")

    h = help_time(a.runs)
    print(f"karuta --help: median {statistics.median(h) * 1000:.0f} ms, max {max(h) * 1000:.0f} ms "
          f"over {a.runs} runs (target <= 300 ms)")

    root = Path(tempfile.mkdtemp(prefix="karuta-bench-"))
    pulse = PulseServer(sink="bench", root=root / "pulse", keepalive=False)
    env = dict(pulse.env, KARUTA_CACHE_DIR=str(root / "cache"))
    try:
        ends = [exit_after_last_line(env) for _ in range(a.runs)]
        print(f"karuta read --auto (one card, tone voice) ends {statistics.median(ends) * 1000:.0f} ms "
              f"after its last line (median of {a.runs}; max {max(ends) * 1000:.0f} ms); it was "
              f"2000+ ms (the stderr filter's drain timeout): "
              f"{2.0 / max(statistics.median(ends), 1e-3):.0f}x sooner")
        base = statistics.median(first_sound(env, None)[0] for _ in range(3))
        args = ["--seed", "1"]  # a whole 100-card kyogi reading
        cold = first_sound(env, args)
        warm = [first_sound(env, args) for _ in range(a.runs)]
        sink = [w[0] for w in warm]
        said = [w[1] for w in warm if w[1] is not None]
        print("karuta read (synth voice, kyogi, 100 cards; first sound = the jo-ka), launch to first sound:")
        print(f"  by PortAudio's DAC time (the app's screen line): warm median "
              f"{statistics.median(said):.2f} s, max {max(said):.2f} s over {a.runs} runs; "
              f"cold cache {cold[1]:.2f} s (target <= 1.5 s warm)")
        print(f"  observed at the null sink's monitor: warm median {statistics.median(sink):.2f} s; "
              f"cold {cold[0]:.2f} s; the same pipeline with a bare `pacat` client: {base:.2f} s "
              f"(PulseAudio's null sink buffering, not the app)")
    finally:
        pulse.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
