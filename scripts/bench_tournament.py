"""Benchmark: a goshiki competition day of 200 players in 8 blocks (issue 14's targets).

    python scripts/bench_tournament.py [--players 200] [--blocks 8] [--seed 1] [--pdf]

On a real tournament file (SQLite, WAL, committed after every entry) in a temporary folder:

- pairing a round (``Tournament.pair``: 8 blocks, history, minimum-cost matching, written),
  for each of the six preliminary rounds: median and worst                  target <= 1 s
- standings after an entry: one ``enter`` (committed to disk) and the standings of all
  blocks recomputed from the raw entries; median, 95th percentile and worst    target <= 50 ms
  (and, separately, the projector page rewritten after the entry)
- the printable sheets of a round (pairing list + score sheets, HTML)        target <= 5 s
  (``--pdf``: also Chromium printing the score sheets to an A4 PDF, if installed)
- peak memory (``ru_maxrss``).

Timings on a shared machine are noisy: rerun to compare.
"""
from __future__ import annotations

import argparse
import random
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from reader.tournament import pages, scoring
from reader.tournament.players import PlayerRow
from reader.tournament.store import Settings, Tournament


def counts_for(rng: random.Random, n: int) -> list[int]:
    return scoring.simulated_counts(rng, n, most=17 // n + 2)


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--players", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pdf", action="store_true", help="also time Chromium's A4 PDF of the sheets")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rows = [PlayerRow(f"選手{i:03d}", f"{i % 12 + 1}組") for i in range(a.players)]
    with tempfile.TemporaryDirectory() as d:
        t = Tournament.create(Path(d) / "day.sqlite", rows, Settings(seed=a.seed),
                              blocks=a.blocks)
        sizes = sorted(n for _, n in t.status().blocks)
        print(f"{a.players} players in {a.blocks} blocks (sizes {sizes[0]}-{sizes[-1]}), "
              f"6 preliminary rounds, seed {a.seed}")
        pair_s, entry_s, page_s, sheets_s = [], [], [], []
        pair_cpu, entry_cpu = [], []
        for r in range(1, 7):
            t0, c0 = time.perf_counter(), time.process_time()
            t.pair()
            pair_s.append(time.perf_counter() - t0)
            pair_cpu.append(time.process_time() - c0)
            t0 = time.perf_counter()
            paths = pages.write_round(t, r, Path(d) / "pages")
            sheets_s.append(time.perf_counter() - t0)
            if r == 6:  # the projector as the hall sees it: the round's pairings and standings
                projector = pages.write_projector(t, "bench", Path(d) / "hall")
            for tb in t.tables(r):
                c = counts_for(rng, len(tb.seats))
                t0, c0 = time.perf_counter(), time.process_time()
                t.enter(tb.no, c)
                t.standings()
                entry_s.append(time.perf_counter() - t0)
                entry_cpu.append(time.process_time() - c0)
                t0 = time.perf_counter()
                pages.write_projector(t, "bench", Path(d) / "pages")
                page_s.append(time.perf_counter() - t0)
        n_tables = len(t.tables(6))
        print(f"pairing a round:          median {ms(statistics.median(pair_s))}, "
              f"worst {ms(max(pair_s))} over 6 rounds ({n_tables} tables)   target <= 1000 ms")
        print(f"   (CPU time:             median {ms(statistics.median(pair_cpu))}, "
              f"worst {ms(max(pair_cpu))})")
        q = statistics.quantiles(entry_s, n=20)[-1]
        print(f"entry + standings:        median {ms(statistics.median(entry_s))}, "
              f"p95 {ms(q)}, worst {ms(max(entry_s))} over {len(entry_s)} entries   "
              f"target <= 50 ms")
        print(f"   (CPU time:             median {ms(statistics.median(entry_cpu))}, "
              f"worst {ms(max(entry_cpu))}; the rest is the fsync of each commit)")
        print(f"projector page rewrite:   median {ms(statistics.median(page_s))}, "
              f"worst {ms(max(page_s))} (after each entry, on top of the above)")
        print(f"printable sheets (HTML):  median {ms(statistics.median(sheets_s))}, "
              f"worst {ms(max(sheets_s))} per round   target <= 5000 ms")
        if a.pdf:
            exe = shutil.which("chromium")
            if exe is None:
                print("score sheets as PDF: chromium not installed (scripts/setup --test)")
            else:
                with tempfile.TemporaryDirectory() as profile:
                    pdf = Path(d) / "sheets.pdf"
                    t0 = time.perf_counter()
                    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                                    "--disable-quic", "--no-first-run",
                                    "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync",
                                    f"--user-data-dir={profile}", "--no-pdf-header-footer",
                                    f"--print-to-pdf={pdf}", paths["sheets"].as_uri()],
                                   capture_output=True, check=True, timeout=120)
                    dt = time.perf_counter() - t0
                    pages_n = pdf.read_bytes().count(b"/MediaBox")
                print(f"score sheets as A4 PDF:   {dt:.2f} s with Chromium ({pages_n} pages)")
                # the projector page lays itself out in the browser (screens fitted to the
                # viewport): how long that takes, and into how many screens, at two sizes
                for w, h in ((1920, 1080), (1280, 720)):
                    with tempfile.TemporaryDirectory() as profile:
                        out = subprocess.run(
                            [exe, "--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-quic", "--no-first-run", "--hide-scrollbars",
                             "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", f"--user-data-dir={profile}",
                             f"--window-size={w},{h}", "--dump-dom", projector.as_uri()],
                            capture_output=True, text=True, check=True, timeout=120).stdout
                    lay = re.search(r'data-layout-ms="(\d+)" data-screens="(\d+)"', out)
                    print(f"projector layout {w}x{h}: {lay.group(1)} ms in Chromium, "
                          f"{lay.group(2)} screens (a new one each reload)")
        t.close()
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"load average during the run: {load} (a shared 2-core machine: timings are noisy)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory:              {peak:.0f} MiB (this process)")


if __name__ == "__main__":
    main()
