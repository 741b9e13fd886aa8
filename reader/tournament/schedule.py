"""What the pairing can do to a block over a whole day, whatever the results (pure search).

``pairing.pair_block`` picks each round as the cheapest given the rounds before.  Results (the
wins) and the seed only choose among the rounds that are cheapest in the tiers above the
wins: meetings, three-player tables, and the rule that a round is never the round before
again.  ``worst_case`` follows *every* such round from every reachable state, for a block of
``n`` players and ``rounds`` rounds, so what it reports holds for any results and any seed:
the most times any pair meets, the most and fewest three-player tables a player gets, and
whether a round ever repeats the round before.  States that differ only by the players'
names are searched once (networkx isomorphism on the meeting multigraph, the three-player
counts and the round before).

``best_case`` searches every seating of every round instead (what a schedule made by hand
could reach), for the small blocks where that is feasible; ``bounds`` gives the counting
limits no schedule can beat.
"""
from __future__ import annotations

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


def _keeps_clean(n: int, rounds: int, st: State, seatings: list) -> list:
    """The pairing's look-ahead (``pairing._look_ahead``): while the rest of the day can be
    played clean, only the seatings after which it still can (at the first floor of
    three-player tables where a clean day exists)."""
    if not 4 <= n <= pairing.LOOKAHEAD_UP_TO:
        return seatings
    left = rounds - _played(n, st) - 1
    idx = pairing._bit_index(n)
    pairs = list(itertools.combinations(range(n), 2))
    unmet = sum(idx[p] for k, p in enumerate(pairs) if not st.met[k])
    share = pairing.trio_share(n, rounds)
    floor = 3 * rounds // n if n % 2 else 0
    def clean(*a) -> bool:
        ok = pairing.clean_day(n, *a)
        if ok is None:  # the proof would not be one: say so rather than guess
            raise RuntimeError(f"block of {n}: the look-ahead's search ran out of its budget")
        return ok

    for fl in ((floor, 0) if floor else (0,)):
        if not clean(unmet, st.trios, left + 1, share, fl):
            continue
        out = []
        for s in seatings:
            used = 0
            trios = list(st.trios)
            for t in s:
                for a, b in itertools.combinations(t, 2):
                    used |= idx[a, b]
                if len(t) == 3:
                    for p in t:
                        trios[p] += 1
            if (not used & ~unmet and max(trios) <= (share if n % 2 else 0)
                    and clean(unmet & ~used, tuple(trios), left, share, fl)):
                out.append(s)
        return out
    return seatings


def cheapest(n: int, rounds: int, st: State, seatings: list) -> list:
    """The seatings the pairing may choose from ``st``: not the round before (unless nothing
    else exists), those that keep a clean day possible (the look-ahead, while one is), and
    of those the least cost above the wins."""
    idx = _pair_index(n)
    allowed = [s for s in seatings if frozenset(map(frozenset, s)) != st.last] or seatings
    allowed = _keeps_clean(n, rounds, st, allowed)
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
    """States up to renaming the players: a Weisfeiler-Lehman hash, then an exact
    isomorphism test against the states with the same hash."""

    def __init__(self, n: int):
        self.n = n
        self.buckets: dict[str, list] = {}
        self.count = 0

    def graph(self, st: State):
        import networkx as nx

        g = nx.Graph()
        for p in range(self.n):
            g.add_node(p, t=str(st.trios[p]))
        last = {frozenset(x) for t in st.last for x in itertools.combinations(t, 2)}
        for k, (a, b) in enumerate(itertools.combinations(range(self.n), 2)):
            if st.met[k] or frozenset((a, b)) in last:
                g.add_edge(a, b, m=f"{st.met[k]}/{int(frozenset((a, b)) in last)}")
        return g

    def add(self, st: State) -> bool:
        """True if ``st`` is new (and now remembered)."""
        import networkx as nx
        from networkx.algorithms.isomorphism import categorical_edge_match, \
            categorical_node_match

        g = self.graph(st)
        h = nx.weisfeiler_lehman_graph_hash(g, node_attr="t", edge_attr="m", iterations=4)
        same = self.buckets.setdefault(h, [])
        nm, em = categorical_node_match("t", None), categorical_edge_match("m", None)
        if any(nx.is_isomorphic(g, o, node_match=nm, edge_match=em) for o in same):
            return False
        same.append(g)
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
