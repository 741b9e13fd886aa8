"""Pairing one preliminary round inside one block (pure: no clock, no database).

What the organiser asks for (issue 14, seed 004), in order of importance:

1. nobody meets the same opponent twice (when it can be avoided): the number of pairs that
   have met before is the first thing kept down;
2. when a block is odd, exactly one three-player table, and never the same player on a
   three-player table twice when it can be avoided;
3. when pairs must meet again, as few as possible for a third time;
4. players with the same number of wins meet (a difference of wins costs its square);
5. groups/classes mixed where possible (a setting).

Each wish is a cost tier, far enough apart that no amount of a lower one outweighs one of a
higher one, and the round is the pairing of least total cost:

- even block: a minimum-cost perfect matching (``networkx.max_weight_matching`` with
  ``maxcardinality``; weights ``BIG - cost``), which is exact;
- odd block: every possible three-player table is costed on its own, and the cheapest are
  tried, each with the best matching of the others.  With ``EXACT_UP_TO`` players or fewer
  the search is exact (it stops only when no trio left can beat the best round).  Above
  that, one matching with a dummy player picks the third player (``_odd``), and the trio
  search runs only when that trio is not clean (a heuristic: in the simulations with blocks
  of 23 and 25 it never needed a rematch or a second trio, see tests/test_tournament_props.py).

The random generator is passed in: it only breaks ties between equal pairings (the node
order), so a round is reproducible from the tournament seed.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence


__all__ = ["Entrant", "pair_block", "pair_cost", "pairing_cost", "REMATCH", "TRIO_AGAIN",
           "WIN_GAP", "SAME_GROUP", "EXACT_UP_TO"]

# Tiers: each bound so that a whole round of the tier below (a block of up to 30 players,
# up to 20 rounds) costs less than one step of the tier above, so the order is strict.
REMATCH = 10**10
TRIO_AGAIN = 10**8
MET_AGAIN = 10**5
WIN_GAP = 16
SAME_GROUP = 1
EXACT_UP_TO = 11
#: a trio this cheap (wins at most one apart, groups aside) is taken as it comes
CLEAN_TRIO = 2 * WIN_GAP + 3 * SAME_GROUP
#: how many of the cheapest trios a large odd block tries
CANDIDATES = 10


@dataclass(frozen=True)
class Entrant:
    """One player as pairing sees them: ``id``, ``wins`` so far, ``group`` (class, club; may be
    empty), ``trios`` (three-player tables played so far)."""

    id: Hashable
    wins: int = 0
    group: str = ""
    trios: int = 0


def pair_cost(a: Entrant, b: Entrant, met: dict[frozenset, int], mix_groups: bool) -> int:
    times = met.get(frozenset((a.id, b.id)), 0)
    # a pair that has met counts once in the top tier; meeting a third time is worse than a
    # second, but only below the three-player-table wish
    cost = REMATCH * (times > 0) + MET_AGAIN * max(0, times - 1)
    cost += WIN_GAP * (a.wins - b.wins) ** 2
    if mix_groups and a.group and a.group == b.group:
        cost += SAME_GROUP
    return cost


def _trio_cost(t: Sequence[Entrant], met, mix_groups) -> int:
    return (sum(pair_cost(x, y, met, mix_groups) for x, y in itertools.combinations(t, 2))
            + TRIO_AGAIN * sum(e.trios for e in t))


def pairing_cost(tables: Iterable[Sequence[Entrant]], met: dict[frozenset, int],
                 mix_groups: bool = True) -> int:
    """The total cost of a round's tables (what ``pair_block`` minimises)."""
    total = 0
    for t in tables:
        total += (_trio_cost(t, met, mix_groups) if len(t) == 3
                  else pair_cost(t[0], t[1], met, mix_groups))
    return total


def _match(players: list[Entrant], met, mix_groups,
           spare: dict[int, int] | None = None) -> tuple[list[tuple[Entrant, ...]], int]:
    """Minimum-cost perfect matching of an even list; (pairs, cost).  ``spare`` (odd lists):
    index -> cost of leaving that player out (a dummy node takes them); the player left out
    is then returned alone as the last "pair" ``(player,)``."""
    if not players:
        return [], 0
    if len(players) == 2 and spare is None:
        return [(players[0], players[1])], pair_cost(players[0], players[1], met, mix_groups)
    import networkx as nx  # here, not at the top: only pairing needs it (start-up time)

    costs = {}
    for i, j in itertools.combinations(range(len(players)), 2):
        costs[i, j] = pair_cost(players[i], players[j], met, mix_groups)
    dummy = len(players)
    for i, c in (spare or {}).items():
        costs[i, dummy] = c
    big = max(costs.values()) + 1
    g = nx.Graph()
    g.add_nodes_from(range(len(players) + (spare is not None)))
    for (i, j), c in costs.items():
        g.add_edge(i, j, weight=big - c)
    m = nx.max_weight_matching(g, maxcardinality=True)
    pairs, left = [], []
    total = 0
    for i, j in m:
        i, j = min(i, j), max(i, j)
        total += costs[i, j]
        if j == dummy:
            left.append((players[i],))
        else:
            pairs.append((players[i], players[j]))
    return pairs + left, total


def pair_block(entrants: Sequence[Entrant], met: dict[frozenset, int], rng: random.Random,
               mix_groups: bool = True) -> list[tuple[Hashable, ...]]:
    """The tables of one round for one block: tuples of 2 ids (and one of 3 when the block is
    odd), best tables first (most wins).  ``met``: how often each pair (a ``frozenset`` of two
    ids) has met before.  A block of 1 cannot be paired: ``ValueError``."""
    players = list(entrants)
    if len(players) < 2:
        raise ValueError("a block needs at least two players to pair")
    rng.shuffle(players)  # ties between equal pairings fall by the seed
    if len(players) == 3:
        tables = [tuple(players)]
    elif len(players) % 2 == 0:
        tables = [tuple(p) for p in _match(players, met, mix_groups)[0]]
    else:
        tables = _odd(players, met, mix_groups, rng)
    return [tuple(e.id for e in _seat(t)) for t in _order(tables)]


def _odd(players: list[Entrant], met, mix_groups, rng) -> list[tuple[Entrant, ...]]:
    """Every trio's own cost, cheapest first; for each, the best matching of the others.
    A trio that alone costs as much as the best round so far cannot lead to a better one, so
    the search stops there (exact).  Above ``EXACT_UP_TO`` players it starts from one quick
    guess (a matching with a dummy player, whose partner joins the pair that suits them best)
    and tries the ``CANDIDATES`` cheapest trios only if that trio is not clean: a rematch, a
    second three-player table, a third meeting or wins further apart than one (a heuristic)."""
    best = None
    if len(players) > EXACT_UP_TO:
        spare = {i: TRIO_AGAIN * e.trios for i, e in enumerate(players)}
        pairs, _ = _match(players, met, mix_groups, spare)
        c = pairs.pop()[0]
        k = min(range(len(pairs)), key=lambda k: _trio_cost(pairs[k] + (c,), met, mix_groups)
                - pair_cost(*pairs[k], met, mix_groups))
        tables = [pairs[k] + (c,)] + pairs[:k] + pairs[k + 1:]
        best = (pairing_cost(tables, met, mix_groups), tables)
        if _trio_cost(tables[0], met, mix_groups) <= CLEAN_TRIO:
            return best[1]
    trios = sorted(((_trio_cost(t, met, mix_groups), k, t)
                    for k, t in enumerate(itertools.combinations(players, 3))),
                   key=lambda x: (x[0], x[1]))
    limit = len(trios) if len(players) <= EXACT_UP_TO else CANDIDATES
    for tc, _, trio in trios[:limit]:
        if best is not None and tc >= best[0]:
            break
        rest = [p for p in players if p not in trio]
        pairs, cost = _match(rest, met, mix_groups)
        if best is None or tc + cost < best[0]:
            best = (tc + cost, [trio] + pairs)
    return best[1]


def _order(tables):
    return sorted(tables, key=lambda t: (-max(e.wins for e in t), -sum(e.wins for e in t)))


def _seat(t):
    return tuple(sorted(t, key=lambda e: -e.wins))
