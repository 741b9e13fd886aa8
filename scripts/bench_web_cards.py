#!/usr/bin/env python3
"""The web board's torifuda: how long the laptop takes to draw a match's cards as images.

    python scripts/bench_web_cards.py [--cards 50] [--runs 3]

``karuta practice --web`` serves each card of the match as an image drawn by the project's card
renderer (``reader.web.cards.CardImages``: ``reader.ui.torifuda``'s face, PNG or WebP).  This
draws ``--cards`` cards (a 25-a-side deal: 50) at each of the sizes the page may ask for, in a
fresh process state each run (new ``CardImages`` and painters; the font stays loaded after the
first run, as in a server that has drawn one card), and prints per size: the time for all of
them, per card (median), the bytes (total, per card), the image format; then the time a
cached card takes (what every later request of the page costs).  Print the load average with
the figures: the machine is shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    from reader.base import seeds
    from reader.ui import torifuda
    from reader.web.cards import WIDTHS, CardImages, image_format

    cards = seeds.rng(1, "bench").sample(range(1, 101), a.cards)
    t0 = time.perf_counter()
    image_format()
    torifuda.load_serif(20)
    print(f"format: {image_format()} · font: {torifuda.serif_font_path()} "
          f"(pygame and the font loaded in {1000 * (time.perf_counter() - t0):.0f} ms)")
    for w in WIDTHS:
        totals, per, sizes = [], [], []
        for _ in range(a.runs):
            torifuda._PAINTERS.clear()
            imgs = CardImages(cards, (w,))
            start = time.perf_counter()
            for c in cards:
                t = time.perf_counter()
                body = imgs.image(c, w)
                per.append(time.perf_counter() - t)
                sizes.append(len(body))
            totals.append(time.perf_counter() - start)
        t = time.perf_counter()
        for c in cards:
            imgs.image(c, w)
        cached = (time.perf_counter() - t) / len(cards)
        print(f"{w} px wide: {a.cards} cards in {1000 * min(totals):.0f} ms "
              f"(runs: {', '.join(f'{1000 * x:.0f}' for x in totals)} ms) · per card median "
              f"{1000 * statistics.median(per):.1f} ms, max {1000 * max(per):.1f} ms · "
              f"{sum(sizes) // a.runs / 1024:.0f} kB for all, "
              f"{statistics.median(sizes) / 1024:.1f} kB a card · cached: "
              f"{1e6 * cached:.1f} µs a card")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
