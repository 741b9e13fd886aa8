"""What the pairing can do to a block over a whole day, whatever the results (pure search).

``pairing.pair_block`` picks each round as the cheapest given the rounds before.  Results (the
wins) and the seed only choose among the rounds that are cheapest in the tiers above the
wins: meetings, three-player tables, and the rule that a round is never the round before
again.  ``worst_case`` follows *every* such round from every reachable state, for a block of
``n`` players and ``rounds`` rounds, so what it reports holds for any results and any seed:
the most times any pair meets, the most and fewest three-player tables a player gets, and
whether a round ever repeats the round before.  States that differ only by the players'
names are searched once (a nauty canonical form of the meeting multigraph, the three-player
counts and the round before).

The canonical forms need ``pynauty`` (a test dependency: only the proofs use this module).

``best_case`` searches every seating of every round instead (what a schedule made by hand
could reach), for the small blocks where that is feasible; ``bounds`` gives the counting
limits no schedule can beat.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from math import ceil, comb
from typing import Callable, Iterator

from reader.tournament import pairing

__all__ = ["partitions", "Day", "worst_case", "best_case", "bounds", "cheapest"]


#: every seating of a block (one piece of code with the pairing's look-ahead)
partitions = pairing.partitions


@dataclass(frozen=True)
class State:
    met: tuple[int, ...]        # per pair (i < j, combinations order): meetings so far
    trios: tuple[int, ...]      # per player: three-player tables so far
    last: frozenset             # the round before, as a set of tables (frozensets)


@dataclass
class Day:
    """What a search found for blocks of ``n`` over ``rounds`` rounds."""

    n: int
    rounds: int
    max_meetings: int           # the most times any pair met
    max_trios: int              # the most three-player tables of one player
    min_trios: int
    repeated_round: bool        # some round was the round before again
    states: int                 # distinct states searched (up to renaming players)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _pair_index(n: int) -> dict[tuple[int, int], int]:
    return {p: k for k, p in enumerate(itertools.combinations(range(n), 2))}


def _round_cost(n: int, rounds: int, idx, st: State, tables) -> int:
    """The round's cost in the tiers above the wins, with the pairing's own cost functions."""
    cost = 0
    share = pairing.trio_share(n, rounds, st.trios)
    for t in tables:
        for a, b in itertools.combinations(sorted(t), 2):
            cost += pairing.meet_cost(st.met[idx[a, b]])
        if len(t) == 3:
            cost += sum(pairing.trio_cost(st.trios[p], share) for p in t)
    return cost


def _played(n: int, st: State) -> int:
    """How many rounds ``st`` is after (each round seats the same number of pairs)."""
    return sum(st.met) // (n // 2 + (2 if n % 2 else 0))


@functools.lru_cache(maxsize=16)
def _by_mask(n: int) -> dict:
    """Every seating of ``n`` by its masks (``pairing._rounds_in``)."""
    return {(pairs, trio): s for pairs, trio, s in pairing._seatings(n)}


def _keeps_clean(n: int, rounds: int, st: State) -> list | None:
    """The pairing's look-ahead (``pairing._look_ahead``): while the rest of the day can be
    played clean, the seatings after which it still can (at the first floor of three-player
    tables where a clean day exists); None when no clean day is possible from ``st``."""
    if not 4 <= n <= pairing.LOOKAHEAD_UP_TO:
        return None
    left = rounds - _played(n, st) - 1
    idx = pairing._bit_index(n)
    pairs = list(itertools.combinations(range(n), 2))
    unmet = sum(idx[p] for k, p in enumerate(pairs) if not st.met[k])
    share = pairing.trio_share(n, rounds) if n % 2 else 0
    floor = 3 * rounds // n if n % 2 else 0
    order = tuple(range(n))

    def clean(*a) -> bool:
        ok = pairing.clean_day(n, *a)
        if ok is None:  # the proof would not be one: say so rather than guess
            raise RuntimeError(f"block of {n}: the look-ahead's search ran out of its budget")
        return ok

    for fl in ((floor, 0) if floor else (0,)):
        if not clean(unmet, st.trios, left + 1, share, fl):
            continue
        out = []
        for used, trio in pairing._rounds_in(n, unmet, st.trios, share, order):
            trios = tuple(t + (trio >> p & 1) for p, t in enumerate(st.trios))
            if clean(unmet & ~used, trios, left, share, fl):
                out.append(_by_mask(n)[used, trio])
        return out
    return None


def cheapest(n: int, rounds: int, st: State, seatings: list) -> list:
    """The seatings the pairing may choose from ``st``: not the round before (unless nothing
    else exists), those that keep a clean day possible (the look-ahead, while one is), and
    of those the least cost above the wins."""
    idx = _pair_index(n)
    allowed = _keeps_clean(n, rounds, st)  # (never the round before: its pairs have met)
    if allowed is None:
        allowed = [s for s in seatings if frozenset(map(frozenset, s)) != st.last] or seatings
    costs = [_round_cost(n, rounds, idx, st, s) for s in allowed]
    low = min(costs)
    return [s for s, c in zip(allowed, costs) if c == low]


def _play(n: int, idx, st: State, tables) -> State:
    met = list(st.met)
    trios = list(st.trios)
    for t in tables:
        for a, b in itertools.combinations(sorted(t), 2):
            met[idx[a, b]] += 1
        if len(t) == 3:
            for p in t:
                trios[p] += 1
    return State(tuple(met), tuple(trios), frozenset(map(frozenset, tables)))


class _Seen:
    """States up to renaming the players, by a canonical form (nauty, through pynauty): the
    players are vertices coloured by their three-player tables, and each pair that met or
    sat together in the round before is a vertex between its two players, coloured by
    (meetings, in the round before).  Two states are the same up to renaming exactly when
    their colour classes and nauty certificates are equal.  (A Weisfeiler-Lehman hash with
    a VF2 test on each collision took minutes: the meeting graphs of clean days are
    regular, where that hash tells nothing apart.)"""

    def __init__(self, n: int):
        self.n = n
        self.keys: set = set()
        self.count = 0
        self.pairs = list(itertools.combinations(range(n), 2))

    def key(self, st: State):
        import pynauty

        last = {frozenset(x) for t in st.last for x in itertools.combinations(t, 2)}
        edges = [(k, (st.met[k], int(frozenset(p) in last))) for k, p in enumerate(self.pairs)
                 if st.met[k] or frozenset(p) in last]
        colours: dict = {}
        for p in range(self.n):
            colours.setdefault(("player", st.trios[p]), set()).add(p)
        adjacency: dict[int, list[int]] = {p: [] for p in range(self.n)}
        for v, (k, label) in enumerate(edges, self.n):
            a, b = self.pairs[k]
            adjacency[v] = [a, b]
            colours.setdefault(("pair", label), set()).add(v)
        order = sorted(colours)
        g = pynauty.Graph(self.n + len(edges), adjacency_dict=adjacency,
                          vertex_coloring=[colours[c] for c in order])
        return tuple((c, len(colours[c])) for c in order), pynauty.certificate(g)

    def add(self, st: State) -> bool:
        """True if ``st`` is new (and now remembered)."""
        k = self.key(st)
        if k in self.keys:
            return False
        self.keys.add(k)
        self.count += 1
        return True


def _search(n: int, rounds: int, choose: Callable[[int, int, State, list], list]) -> Day:
    idx = _pair_index(n)
    seatings = list(partitions(tuple(range(n))))
    start = State((0,) * comb(n, 2), (0,) * n, frozenset())
    layer = [start]
    seen = _Seen(n)
    repeated = False
    for _ in range(rounds):
        nxt = []
        layer_seen = _Seen(n)
        for st in layer:
            for s in choose(n, rounds, st, seatings):
                new = _play(n, idx, st, s)
                repeated |= bool(st.last) and new.last == st.last
                if layer_seen.add(new):
                    nxt.append(new)
        seen.count += layer_seen.count
        layer = nxt
    return Day(n, rounds, max(max(st.met) for st in layer),
               max(max(st.trios) for st in layer),
               min(min(st.trios) for st in layer), repeated, seen.count)


def worst_case(n: int, rounds: int = 6) -> Day:
    """Every day the pairing can produce for a block of ``n`` (any results, any seed):
    the worst figures over all of them."""
    return _search(n, rounds, cheapest)


def best_case(n: int, rounds: int = 6, key=None) -> tuple:
    """The best a hand-made schedule can do: (most meetings of a pair, then the spread of the
    three-player tables), searched over every seating of every round (small blocks only)."""
    idx = _pair_index(n)
    seatings = list(partitions(tuple(range(n))))
    start = State((0,) * comb(n, 2), (0,) * n, frozenset())
    layer = [start]
    for _ in range(rounds):
        seen = _Seen(n)
        nxt = []
        for st in layer:
            for s in seatings:
                new = _play(n, idx, st, s)
                if new.last != st.last and seen.add(new):
                    nxt.append(new)
        layer = nxt
    return min((max(st.met), max(st.trios) - min(st.trios) if n % 2 else 0) for st in layer)


def bounds(n: int, rounds: int = 6) -> dict:
    """Counting limits: meetings per pair at least the average, rounded up; three-player
    tables per player at least ``ceil(3 * rounds / n)`` for the busiest (odd blocks)."""
    per_round = n // 2 + (2 if n % 2 else 0)
    out = {"max_meetings": ceil(per_round * rounds / comb(n, 2))}
    if n % 2:
        out["max_trios"] = ceil(3 * rounds / n)
        out["min_trios"] = 3 * rounds // n
    return out
