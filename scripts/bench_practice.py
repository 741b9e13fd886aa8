"""Benchmark: headless practice matches (bots), speed and the bots' statistics.

    python scripts/bench_practice.py [--matches 1000] [--voice synth|tone] [--timing-runs 30]
                                     [--only speed|bots]

1. Speed: whole kyogi bot-vs-bot matches (levels 2 and 4), plan + play, no sound, no log;
   median and worst over ``--timing-runs`` seeds (target: a whole match <= 0.2 s).  The
   synthesized voice's layouts are warm (the first match fills its in-process cache); the
   first, cold match is printed too.
2. Strength: ``--matches`` seeded kyogi matches for each pair (5 v 1, 2 v 1, 3 v 2, 4 v 3,
   5 v 4), seats alternating (the stronger bot is A on even seeds, B on odd): how often the
   stronger wins (targets: 5 beats 1 in >= 90 %, each level beats the one below in >= 60 %).
   The same pairs in goshiki (a quarter as many matches): wins, draws, losses.
3. Faults, per level, over every read of those matches where the bot could fault on a 友札
   (``bot.fault_opportunity``): how often it did (target: its ``fault_rate`` +/- 2 points),
   and how many of those the rules counted (a touch after the other bot has taken the card is
   dead, so bot-vs-bot counts are lower), and the counted rate of a bot playing alone (`--vs none`: all the cards its own).

Peak memory (ru_maxrss) at the end.  The machine is shared: timings are noisy.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from collections import defaultdict

from reader.reading.voices import make_voice
from reader.practice import bot, headless
from reader.practice.match import Seat

PAIRS = ((5, 1), (2, 1), (3, 2), (4, 3), (5, 4))


class FaultCount:
    def __init__(self):
        self.opportunities = defaultdict(int)
        self.decided = defaultdict(int)
        self.counted = defaultdict(int)

    def play(self, m):
        """Play ``m`` to the end (``headless.play``), counting each bot's fault chances."""
        seen = {}

        def event(name, data):
            if name == "read":  # what the bots could fault on, and what they will touch
                seen.update(cur=data, opp=m.fault_opportunity(), touches=m.bot_touches())
            elif name == "closed" and seen["opp"] is not None:
                for p, seat in m.seats.items():
                    if seat.kind != "bot":
                        continue
                    lv = seat.level
                    self.opportunities[lv] += 1
                    if any(t[0] == p and t[1] != seen["cur"].poem for t in seen["touches"]):
                        self.decided[lv] += 1
                    if any(j.player == p and j.verdict == "fault" for j in data.touches):
                        self.counted[lv] += 1

        return headless.play(m, on_event=event)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matches", type=int, default=1000, help="matches per pair of levels")
    ap.add_argument("--voice", default="synth", help="voice for the plan's layouts")
    ap.add_argument("--timing-runs", type=int, default=30)
    ap.add_argument("--only", choices=["speed", "bots"], default=None,
                    help="run only the speed part or only the bots' statistics")
    args = ap.parse_args()
    voice = make_voice(args.voice)

    def match(a, b, seed):
        return headless.new_match("kyogi", {"A": a, "B": b}, seed, voice)

    match.voice = voice
    if args.only != "bots":
        speed(match, voice, args.timing_runs)
    if args.only != "speed":
        bots(match, args.matches)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"peak memory {peak:.0f} MiB")


def speed(match, voice, runs: int) -> None:
    t0 = time.perf_counter()
    headless.play(match(Seat("bot", 2), Seat("bot", 4), 0))
    cold = time.perf_counter() - t0
    walls, plans, cpus = [], [], []
    for seed in range(1, runs + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        m = match(Seat("bot", 2), Seat("bot", 4), seed)
        t1 = time.perf_counter()
        headless.play(m)
        t2 = time.perf_counter()
        cpus.append(time.process_time() - c0)
        walls.append(t2 - t0)
        plans.append(t1 - t0)
    print(f"whole kyogi match, bot 2 v bot 4, voice {voice.name}, plan + play, no sound: "
          f"median {statistics.median(walls) * 1000:.0f} ms (plan {statistics.median(plans) * 1000:.0f} ms), "
          f"worst {max(walls) * 1000:.0f} ms over {len(walls)} seeds; first (cold) {cold * 1000:.0f} ms "
          f"(target <= 200 ms)")
    load = os.getloadavg()[0]
    print(f"  CPU time of this process: median {statistics.median(cpus) * 1000:.0f} ms a match "
          f"(less sensitive to other jobs); load average {load:.1f} on {os.cpu_count()} cores")


def bots(match, matches: int) -> None:
    faults = FaultCount()
    print(f"\n{matches} seeded kyogi matches per pair (stronger bot seated A on even seeds):")
    t0 = time.perf_counter()
    for hi, lo in PAIRS:
        wins = 0
        reads = []
        took = {"strong": 0, "weak": 0}
        for seed in range(matches):
            a, b = (hi, lo) if seed % 2 == 0 else (lo, hi)
            m = faults.play(match(Seat("bot", a), Seat("bot", b), 10_000 + seed))
            winner = m.outcome().winner
            strong = "A" if seed % 2 == 0 else "B"
            wins += winner == strong
            for r in m.state.results:
                if r.took in ("A", "B"):
                    took["strong" if r.took == strong else "weak"] += 1
            reads.append(len(m.match))
        target = 90 if (hi, lo) == (5, 1) else 60
        rate = 100.0 * wins / matches
        print(f"  level {hi} beats level {lo}: {rate:5.1f} %  (target >= {target} %: "
              f"{'ok' if rate >= target else 'MISSED'}); median {statistics.median(reads):.0f} reads; "
              f"the stronger took {100.0 * took['strong'] / max(1, sum(took.values())):.0f} % "
              "of the cards taken")
    elapsed = time.perf_counter() - t0

    n = max(1, matches // 4)
    print(f"\ngoshiki (17 reads of one colour's 20), {n} seeded matches per pair: wins / draws / losses "
          "of the stronger")
    for hi, lo in PAIRS:
        res = {"win": 0, "draw": 0, "loss": 0}
        for seed in range(n):
            a, b = (hi, lo) if seed % 2 == 0 else (lo, hi)
            m = headless.play(headless.new_match("goshiki", {"A": Seat("bot", a), "B": Seat("bot", b)},
                                                 30_000 + seed, match.voice))
            w = m.outcome().winner
            strong = "A" if seed % 2 == 0 else "B"
            res["draw" if w == "draw" else "win" if w == strong else "loss"] += 1
        print(f"  level {hi} v level {lo}: " + " / ".join(f"{100.0 * v / n:.1f} %" for v in res.values()))

    solo = FaultCount()
    for lv in bot.LEVELS:
        for seed in range(matches // 4):
            solo.play(match(Seat("bot", lv), Seat("none"), 20_000 + seed))
    print("\nfaults on a 友札 sharing a shorter prefix, per read where one lay in a faulting place:")
    print("  level  setting  decided (v bots)   counted v bots   counted alone          ok?")
    for lv, spec in bot.LEVELS.items():
        n = faults.opportunities[lv]
        dec = 100.0 * faults.decided[lv] / n
        cnt = 100.0 * faults.counted[lv] / n
        sn = solo.opportunities[lv]
        scnt = 100.0 * solo.counted[lv] / sn
        ok = abs(dec - 100 * spec.fault_rate) <= 2 and abs(scnt - 100 * spec.fault_rate) <= 2
        print(f"  {lv:>5}  {100 * spec.fault_rate:6.1f} %  {dec:6.1f} % of {n:<6}  {cnt:6.1f} %"
              f"           {scnt:6.1f} % of {sn:<6}   {'ok' if ok else 'MISSED'}")
    print(f"\n{len(PAIRS) * matches} matches in {elapsed:.1f} s "
          f"({elapsed / (len(PAIRS) * matches) * 1000:.1f} ms a match)")


if __name__ == "__main__":
    main()
