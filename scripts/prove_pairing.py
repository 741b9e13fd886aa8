"""Prove what the pairing guarantees for small blocks over a whole day, whatever the results.

    python scripts/prove_pairing.py               # blocks of 3-11, 6 rounds (~2.5 min of CPU)
    python scripts/prove_pairing.py 5 7 --rounds 4
    python scripts/prove_pairing.py 11 --exhaustive-up-to 10   # 11 by the invariant (seconds)

Blocks up to ``--exhaustive-up-to`` (11): ``reader.tournament.schedule.worst_case`` follows
every round the pairing may choose (its costs and its look-ahead; the results and the seed
only choose among those), from every state reached, and prints the worst day found next to
the counting bounds no schedule can beat: the most meetings of one pair, the most and fewest
three-player tables of one player, and whether a round ever repeated the round before.

Larger blocks, by the look-ahead's invariant instead of a search over every state:
a clean day (no pair twice, every player's three-player tables between the counting bounds)
exists from the start (searched here), and the pairing only ever chooses a round after which
one still exists (``pairing._look_ahead``: a round the search confirmed, or the search's own
first round), so by induction the whole day is clean, whatever the results and the seed.
The one way out is the search running out of its budget when it first looks at a round's
state; ``--days`` random days (random results, seeds and groups) count how often that
happened (and check the day), and the slowest round.
"""
from __future__ import annotations

import argparse
import itertools
import random
import time
from collections import defaultdict

from reader.tournament import pairing, schedule


def simulate(n: int, rounds: int, days: int) -> dict:
    """``days`` random days of one block through ``pairing.pair_block``."""
    real = pairing.clean_day
    outs = {"budget": 0, "checks": 0}

    def counted(*a, **kw):
        r = real(*a, **kw)
        outs["checks"] += 1
        outs["budget"] += r is None
        return r

    pairing.clean_day = counted
    worst, trio_lo, trio_hi, slowest, repeated = 0, rounds, 0, 0.0, False
    try:
        for seed in range(days):
            rng = random.Random(seed)
            met: dict = defaultdict(int)
            trios: dict = defaultdict(int)
            wins: dict = defaultdict(int)
            last: list = []
            for r in range(1, rounds + 1):
                ents = [pairing.Entrant(i, wins[i], f"g{rng.randrange(3)}", trios[i])
                        for i in range(n)]
                t0 = time.process_time()
                ts = pairing.pair_block(ents, met, random.Random(f"{seed}/{r}"), True, last,
                                        rounds, rounds - r)
                slowest = max(slowest, time.process_time() - t0)
                repeated |= {frozenset(t) for t in ts} == {frozenset(t) for t in last}
                for t in ts:
                    for a, b in itertools.combinations(t, 2):
                        met[frozenset((a, b))] += 1
                    if len(t) == 3:
                        for p in t:
                            trios[p] += 1
                    order = rng.sample(t, len(t))
                    for p in order[:len(t) - 1]:  # random results: one or two winners
                        wins[p] += 1
                last = ts
            worst = max(worst, max(met.values()))
            trio_lo = min(trio_lo, min(trios[i] for i in range(n)))
            trio_hi = max(trio_hi, max((trios[i] for i in range(n)), default=0))
    finally:
        pairing.clean_day = real
    return dict(outs, worst=worst, trios=(trio_lo, trio_hi), slowest=slowest,
                repeated=repeated)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=list(range(3, 12)))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--exhaustive-up-to", type=int, default=11)
    ap.add_argument("--days", type=int, default=200, help="random days per larger block")
    a = ap.parse_args()
    print(f"{'block':>5}  {'max meetings':>12}  {'3-player tables':>15}  {'same round twice':>16}"
          f"  {'how':>30}  {'seconds':>7}")
    for n in a.sizes:
        b = schedule.bounds(n, a.rounds)
        t0 = time.process_time()
        if n <= a.exhaustive_up_to:
            d = schedule.worst_case(n, a.rounds)
            meet, lo, hi, rep = d.max_meetings, d.min_trios, d.max_trios, d.repeated_round
            how = f"every state: {d.states} searched"
        else:
            share = pairing.trio_share(n, a.rounds)
            floor = 3 * a.rounds // n if n % 2 else 0
            pairs = n * (n - 1) // 2
            clean = pairing.clean_day(n, (1 << pairs) - 1, (0,) * n, a.rounds, share, floor)
            if not clean:
                print(f"{n:>5}  no clean day from the start ({clean}): not proved this way")
                continue
            sim = simulate(n, a.rounds, a.days)
            # by the invariant: one meeting, the trios within [floor, share] (odd blocks)
            meet, lo, hi, rep = 1, (floor if n % 2 else 0), (share if n % 2 else 0), False
            how = (f"invariant; {a.days} days: {sim['budget']}/{sim['checks']} out of budget,"
                   f" worst {sim['worst']}, trios {sim['trios'][0]}-{sim['trios'][1]},"
                   f" slowest round {sim['slowest'] * 1000:.0f} ms")
            if sim["budget"] or sim["worst"] > 1 or sim["repeated"] or (
                    n % 2 and not lo <= sim["trios"][0] <= sim["trios"][1] <= hi):
                how += "  NOT PROVED"
        trios = f"{lo}-{hi} (>= {b['min_trios']}-{b['max_trios']})" if n % 2 else "-"
        print(f"{n:>5}  {meet:>4} (>= {b['max_meetings']})  {trios:>15}  "
              f"{'yes' if rep else 'never':>16}  {how}  {time.process_time() - t0:>7.1f}",
              flush=True)


if __name__ == "__main__":
    main()
