"""How long the projector page takes to lay itself out in Chromium (issue 24: 2-3.6 s with
8 blocks), and into how many screens at what text size.

    python scripts/bench_projector.py                 # 200 players in 8 blocks, 3 runs
    python scripts/bench_projector.py --players 25 --blocks 1

A day like the hall's (two rounds entered, the third paired: pairings and standings both
shown) is written once; each run opens it in a fresh headless Chromium (no layout remembered
from a run before) at 1920x1080 and 1280x720, and with ?block=A, and reads what the page's
own script measured (``data-layout-ms``: from the first measurement to the last screen
placed), the screens it made and the smallest text (px, and as a share of the page's height:
headless Chromium's --window-size includes its window, so the page is less tall).
"""
from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from reader.tournament import pages, scoring
from reader.tournament.players import PlayerRow
from reader.tournament.store import Settings, Tournament

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--hide-scrollbars", "--disable-background-networking", "--disable-component-update",
         "--disable-sync"]


def a_day(folder: Path, players: int, blocks: int, seed: int) -> Path:
    rng = random.Random(seed)
    rows = [PlayerRow(f"選手 {i:03d}{'子' * (i % 3)}", f"{i % 4 + 1}組") for i in range(players)]
    with Tournament.create(folder / "t.sqlite", rows, Settings(seed=seed),
                           blocks=blocks) as t:
        for r in (1, 2):
            t.pair()
            for tb in t.tables(r):
                t.enter(tb.no, scoring.simulated_counts(rng, len(tb.seats)))
        t.pair()
        return pages.write_projector(t, "10:42:00")


def run(exe: str, url: str, width: int, height: int) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}",
                              f"--window-size={width},{height}", "--dump-dom", url],
                             capture_output=True, text=True, check=True, timeout=120).stdout
    lay = re.search(r'data-layout-ms="(\d+)" data-screens="(\d+)"', out)
    font = re.search(r'data-min-font="([\d.]+)"', out)
    height = re.search(r'data-height="(\d+)"', out)
    return (int(lay.group(1)), int(lay.group(2)), float(font.group(1)) if font else float("nan"),
            int(height.group(1)) if height else 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--players", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    exe = shutil.which("chromium")
    if exe is None:
        sys.exit("chromium is not installed (scripts/setup --test)")
    with tempfile.TemporaryDirectory() as d:
        page = a_day(Path(d), a.players, a.blocks, a.seed)
        print(f"{a.players} players in {a.blocks} blocks, round 3 paired; {a.runs} runs each")
        for width, height in ((1920, 1080), (1280, 720)):
            for query in ("", "?block=A"):
                got = [run(exe, page.as_uri() + query, width, height) for _ in range(a.runs)]
                ms = [g[0] for g in got]
                print(f"{width}x{height}{query or '':9}  layout median {statistics.median(ms):6.0f} ms"
                      f" (worst {max(ms)} ms), {got[0][1]} screens, smallest text "
                      f"{got[0][2]:.1f} px = 1/{got[0][3] / got[0][2]:.1f} of the page's "
                      f"{got[0][3]} px height")


if __name__ == "__main__":
    main()
