"""Benchmark: render a full 100-card kyogi reading to a 16-bit WAV.

    python scripts/bench_render.py [--out DIR] [--mora-ms 300] [--keep]

Builds the plan with ``reader.reading.engine.build_plan`` (kyogi preset, all 100 cards) and a
``ToneVoice`` (0.3 s a mora, like the synthesized voice's kyogi pace).  "Warm" voice samples:
every clip is made once beforehand and saved as .npy (as a synthesized voice's disk cache
would hold them); the timed render then loads each clip from that cache.  Prints audio
seconds / wall seconds (target ≥ 200x) and peak memory (``ru_maxrss``, target ≤ 300 MiB).
A cold run (the tone voice computing each clip while rendering) is printed for reference.
"""
from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from audio.render import render_to_file
from audio.voice import ToneVoice
from reader.reading.engine import build_plan
from reader.reading.settings import preset


class WarmVoice:
    """A voice whose clips come from a cache folder of .npy files (made by ``warm``)."""

    def __init__(self, voice, folder: Path):
        self.voice = voice
        self.name = voice.name
        self.sample_rate = voice.sample_rate
        self.folder = folder
        self.paths: dict = {}

    def warm(self, items) -> None:
        for i, item in enumerate(dict.fromkeys(items)):
            path = self.folder / f"{i}.npy"
            np.save(path, self.voice.samples(item))
            self.paths[item] = path

    def layout(self, item):
        return self.voice.layout(item)

    def samples(self, item):
        return np.load(self.paths[item])


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for the WAV (default: a temp folder)")
    ap.add_argument("--mora-ms", type=int, default=300)
    ap.add_argument("--keep", action="store_true", help="keep the WAV")
    args = ap.parse_args()

    tone = ToneVoice(48000, mora_ms=args.mora_ms)
    t = time.perf_counter()
    plan = build_plan(preset("kyogi"), 7, tone)
    t_plan = time.perf_counter() - t
    speech = [s.speech for s in plan.segments if s.is_speech]
    print(f"plan: {len(plan.order)} cards, {len(plan.segments)} segments, "
          f"{plan.seconds:.1f} s of audio ({plan.seconds / 60:.1f} min) at {plan.sample_rate} Hz, "
          f"built in {t_plan * 1000:.0f} ms")

    with tempfile.TemporaryDirectory(prefix="karuta-bench-") as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        cache = Path(tmp) / "cache"
        cache.mkdir()
        voice = WarmVoice(tone, cache)
        t = time.perf_counter()
        voice.warm(speech)
        print(f"warm-up: {len(voice.paths)} clips made and cached in {time.perf_counter() - t:.1f} s "
              f"(not timed below)")

        out = folder / "bench_reading.wav"
        t = time.perf_counter()
        render_to_file(plan, voice, out)
        wall = time.perf_counter() - t
        size = out.stat().st_size
        print(f"warm render: {plan.seconds:.1f} s audio in {wall:.2f} s wall = "
              f"{plan.seconds / wall:.0f}x real time; {size / 2**20:.0f} MiB WAV; "
              f"peak RSS {peak_mib():.0f} MiB")

        t = time.perf_counter()
        render_to_file(plan, tone, out)
        wall_cold = time.perf_counter() - t
        print(f"cold render (tone voice computing every clip): {plan.seconds / wall_cold:.0f}x "
              f"real time ({wall_cold:.2f} s); peak RSS {peak_mib():.0f} MiB")
        if args.keep and args.out:
            print(f"kept {out}")
        elif args.out:
            out.unlink()


if __name__ == "__main__":
    main()
