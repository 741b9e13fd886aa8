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


def partitions(items: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every seating of ``items`` at tables of two, with exactly one table of three when their
    number is odd."""
    def rec(rest, trio):
        if not rest:
            if not trio:
                yield ()
            return
        first, rest = rest[0], rest[1:]
        for i, b in enumerate(rest):
            for p in rec(rest[:i] + rest[i + 1:], trio):
                yield ((first, b),) + p
        if trio:
            for i, j in itertools.combinations(range(len(rest)), 2):
                others = tuple(x for k, x in enumerate(rest) if k not in (i, j))
                for p in rec(others, False):
                    yield ((first, rest[i], rest[j]),) + p
    return rec(tuple(items), len(items) % 2 == 1)


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


def cheapest(n: int, rounds: int, st: State, seatings: list) -> list:
    """The seatings the pairing may choose from ``st``: not the round before (unless nothing
    else exists), and of least cost above the wins."""
    idx = _pair_index(n)
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
