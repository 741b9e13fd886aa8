#!/usr/bin/env python3
"""Benchmark: building a reading's plan (``reader.reading.engine.build_plan``), which every
reading, render, drill and practice match does before its first sound.

    python scripts/bench_plan.py [--repeat 20]

Each card's kimariji is asked of ``poems.kimariji.kimariji_of`` (that card only); before, the
whole table of the unread cards was made for each card and one entry kept.  Prints the CPU
milliseconds of a 100-card kyogi plan (tone voice) and of the 100 kimariji look-ups both
ways, and the ratio.
"""
from __future__ import annotations

import argparse
import time


def cpu_ms(fn, repeat: int) -> float:
    t = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t) * 1000 / repeat


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    from audio.voice import ToneVoice
    from poems.kimariji import kimariji, kimariji_of
    from reader.reading.engine import build_plan
    from reader.reading.settings import ReadingSettings

    voice = ToneVoice()
    settings = ReadingSettings()
    plan = build_plan(settings, 1, voice)
    order, universe = plan.order, plan.universe

    def table_way():
        for i, no in enumerate(order):
            kimariji(universe, order[:i])[no]

    def one_way():
        for i, no in enumerate(order):
            kimariji_of(no, universe, order[:i])

    whole = cpu_ms(lambda: build_plan(settings, 1, voice), a.repeat)
    old, new = cpu_ms(table_way, a.repeat), cpu_ms(one_way, a.repeat)
    print(f"100-card kyogi plan, tone voice: {whole:.1f} ms CPU")
    print(f"  its 100 kimariji: whole table per card {old:.1f} ms, that card only {new:.1f} ms "
          f"= {old / new:.1f}x less")


if __name__ == "__main__":
    main()
