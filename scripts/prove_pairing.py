"""Prove what the pairing guarantees for small blocks over a whole day, whatever the results.

    python scripts/prove_pairing.py               # blocks of 3-11, 6 rounds
    python scripts/prove_pairing.py 5 7 --rounds 4

For each block size, ``reader.tournament.schedule.worst_case`` follows every round the
pairing's costs allow (the results and the seed only choose among those), from every state
reached, and prints the worst day found next to the counting bounds no schedule can beat:
the most meetings of one pair, the most and fewest three-player tables of one player, and
whether a round ever repeated the round before.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reader.tournament import schedule  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=list(range(3, 12)))
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    print(f"{'block':>5}  {'max meetings':>12}  {'3-player tables':>15}  {'same round twice':>16}"
          f"  {'states':>7}  {'seconds':>7}")
    for n in a.sizes:
        t0 = time.process_time()
        d = schedule.worst_case(n, a.rounds)
        b = schedule.bounds(n, a.rounds)
        trios = (f"{d.min_trios}-{d.max_trios} (>= {b['min_trios']}-{b['max_trios']})"
                 if n % 2 else "-")
        print(f"{n:>5}  {d.max_meetings:>4} (>= {b['max_meetings']})  {trios:>15}  "
              f"{'yes' if d.repeated_round else 'never':>16}  {d.states:>7}  "
              f"{time.process_time() - t0:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
