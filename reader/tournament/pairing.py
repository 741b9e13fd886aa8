"""Pairing one preliminary round inside one block (pure: no clock, no database).

What the organiser asks for (issues 14 and 24, seed 004), in order of importance:

0. nobody sits at more three-player tables than their share of the day (the day's three
   seats a round shared out over the block, rounded up: 4 of 6 rounds in a block of 5, 3 in
   a block of 7, 2 in blocks of 9 and 11) when anything else is possible;
1. a pair meeting for a third time, then a fourth, ...: each costs more than every pair of
   the round meeting one time fewer together, so meetings pile up on no pair (blocks of 3, 5
   and 7 must repeat meetings);
2. when a block is odd, exactly one three-player table, spread: a player's (t+1)-th
   three-player table costs more than three players' t-th ones, so nobody sits at a second
   one while someone has had none, nor at a third while two others could take their second;
3. nobody meets the same opponent a second time when that can be avoided (below the
   three-player tables: a rematch is better than a third three-player table where two each
   would do, and a third meeting worse than any spread of the three-player tables);
4. players with the same number of wins meet (a difference of wins costs its square);
5. groups/classes mixed where possible (a setting).

And, as a rule rather than a cost: a round is never the same tables as the round before when
any other seating exists (``last``).  Each wish is a cost tier, far enough apart that no
amount of a lower one outweighs one of a higher one (for blocks of up to a few hundred
players and 20 rounds), and the round is the pairing of least total cost:

- even block: a minimum-cost perfect matching (``networkx.max_weight_matching`` with
  ``maxcardinality``; weights ``BIG - cost``), which is exact;
- odd block: every possible three-player table is costed on its own, and the cheapest are
  tried, each with the best matching of the others.  With ``EXACT_UP_TO`` players or fewer
  the search is exact (it stops only when no trio left can beat the best round).  Above
  that, one matching with a dummy player picks the third player (``_odd``), and the trio
  search runs only when that trio is not clean (a heuristic: in the simulations with blocks
  of 23 and 25 it never needed a rematch or a second trio, see tests/test_tournament_props.py).

Each round is the best round given the rounds before (it cannot see the rounds to come).
What that guarantees over a whole day for blocks of 3-11 players, whatever the results, is
proved by ``worst_case`` (an exhaustive search over every round the costs allow), see
tests/test_tournament_pairing.py and ``scripts/prove_pairing.py``.

The random generator is passed in: it only breaks ties between equal pairings (the node
order), so a round is reproducible from the tournament seed.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence


__all__ = ["Entrant", "pair_block", "history", "pair_round", "pair_cost", "pairing_cost", "meet_cost", "trio_cost",
           "trio_share", "REMATCH", "MEET_AGAIN", "MEET_STEP", "TRIO", "TRIO_STEP", "OVER_SHARE",
           "WIN_GAP", "SAME_GROUP", "EXACT_UP_TO"]

# Tiers, each far above everything a whole round of the tiers below can cost (a round has
# fewer than a thousand pairs; wins differ by at most 20, so a win gap costs at most 400 steps).
#: a player's three-player table beyond their share of the day (the day's three-player seats
#: shared out, rounded up): a rule more than a cost, above everything else
OVER_SHARE = 10**100
#: a pair's third meeting; each further meeting costs MEET_STEP times the one before, so it
#: outweighs every meeting one fewer of the round together
MEET_AGAIN = 10**30
MEET_STEP = 1000
#: a player's second three-player table; each further one costs TRIO_STEP times as much
#: (more than three players' previous one: the third player of a table never tips it)
TRIO = 10**12
TRIO_STEP = 4
#: a pair's second meeting (a rematch): below the three-player tables' spread
REMATCH = 10**8
WIN_GAP = 100
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


def meet_cost(times: int) -> int:
    """What seating a pair that has met ``times`` times costs: 0 for a first meeting,
    REMATCH for a second, then MEET_AGAIN, MEET_AGAIN * MEET_STEP, ..."""
    if times <= 1:
        return REMATCH * max(times, 0)
    return MEET_AGAIN * MEET_STEP ** (times - 2)


def trio_cost(trios: int, share: int = 1) -> int:
    """What seating a player who has had ``trios`` three-player tables at another costs, when
    ``share`` is the most any player needs over the day (``trio_share``): 0 for a first one,
    then TRIO, TRIO * (1 + 4), TRIO * (1 + 4 + 16), ...; going beyond the share costs
    OVER_SHARE steps, above everything else."""
    cost = TRIO * (TRIO_STEP ** trios - 1) // (TRIO_STEP - 1)
    over = trios + 1 - share
    if over > 0:
        cost += OVER_SHARE * (TRIO_STEP ** over - 1) // (TRIO_STEP - 1)
    return cost


def trio_share(players: int, rounds: int | None, trios: Iterable[int] = ()) -> int:
    """The most three-player tables one of ``players`` needs over a day of ``rounds`` rounds:
    the day's three seats a round shared out, rounded up (with ``rounds`` unknown: the
    seats so far, ``trios``, and this round's, shared out)."""
    if rounds is None:
        return -(-(sum(trios) + 3) // players)
    return -(-3 * rounds // players)


def pair_cost(a: Entrant, b: Entrant, met: dict[frozenset, int], mix_groups: bool) -> int:
    cost = meet_cost(met.get(frozenset((a.id, b.id)), 0))
    cost += WIN_GAP * (a.wins - b.wins) ** 2
    if mix_groups and a.group and a.group == b.group:
        cost += SAME_GROUP
    return cost


def _trio_cost(t: Sequence[Entrant], met, mix_groups, share: int = 1) -> int:
    return (sum(pair_cost(x, y, met, mix_groups) for x, y in itertools.combinations(t, 2))
            + sum(trio_cost(e.trios, share) for e in t))


def pairing_cost(tables: Iterable[Sequence[Entrant]], met: dict[frozenset, int],
                 mix_groups: bool = True, rounds: int | None = None) -> int:
    """The total cost of a round's tables (what ``pair_block`` minimises)."""
    tables = list(tables)
    everyone = [e.trios for t in tables for e in t]
    return _cost(tables, met, mix_groups, trio_share(len(everyone), rounds, everyone))


def _cost(tables, met, mix_groups, share: int) -> int:
    return sum(_trio_cost(t, met, mix_groups, share) if len(t) == 3
               else pair_cost(t[0], t[1], met, mix_groups) for t in tables)


def _match(players: list[Entrant], met, mix_groups, spare: dict[int, int] | None = None,
           forbid: frozenset = frozenset()) -> tuple[list[tuple[Entrant, ...]], int] | None:
    """Minimum-cost perfect matching of an even list; (pairs, cost), or None when ``forbid``
    (pairs of ids that may not sit together) leaves no perfect matching.  ``spare`` (odd
    lists): index -> cost of leaving that player out (a dummy node takes them); the player
    left out is then returned alone as the last "pair" ``(player,)``."""
    if not players:
        return [], 0
    if len(players) == 2 and spare is None:
        if frozenset((players[0].id, players[1].id)) in forbid:
            return None
        return [(players[0], players[1])], pair_cost(players[0], players[1], met, mix_groups)
    import networkx as nx  # here, not at the top: only pairing needs it (start-up time)

    costs = {}
    for i, j in itertools.combinations(range(len(players)), 2):
        if frozenset((players[i].id, players[j].id)) not in forbid:
            costs[i, j] = pair_cost(players[i], players[j], met, mix_groups)
    dummy = len(players)
    for i, c in (spare or {}).items():
        costs[i, dummy] = c
    if not costs:
        return None
    big = max(costs.values()) + 1
    g = nx.Graph()
    g.add_nodes_from(range(len(players) + (spare is not None)))
    for (i, j), c in costs.items():
        g.add_edge(i, j, weight=big - c)
    m = nx.max_weight_matching(g, maxcardinality=True)
    if 2 * len(m) != g.number_of_nodes():
        return None
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


def _key(tables) -> frozenset:
    """A round as a set of tables (each a set of ids), to compare rounds."""
    return frozenset(frozenset(e.id if isinstance(e, Entrant) else e for e in t) for t in tables)


def _match_unlike(players: list[Entrant], met, mix_groups, last: frozenset):
    """The best perfect matching that is not the round ``last`` (a set of tables): the best
    one, or if that is ``last``, the best with one of ``last``'s pairs left out (every other
    matching leaves out at least one of them, so this is exact).  None if there is none."""
    best = _match(players, met, mix_groups)
    if best is None or _key(best[0]) != last:
        return best
    others = [m for pair in last if (m := _match(players, met, mix_groups,
                                                 forbid=frozenset((pair,)))) is not None]
    return min(others, key=lambda m: m[1], default=None)


def pair_block(entrants: Sequence[Entrant], met: dict[frozenset, int], rng: random.Random,
               mix_groups: bool = True, last: Iterable[Sequence[Hashable]] = (),
               rounds: int | None = None) -> list[tuple[Hashable, ...]]:
    """The tables of one round for one block: tuples of 2 ids (and one of 3 when the block is
    odd), best tables first (most wins).  ``met``: how often each pair (a ``frozenset`` of two
    ids) has met before; ``last``: the block's tables in the round before (this round is
    never the same when another seating exists); ``rounds``: the day's preliminary rounds
    (for each player's share of the three-player tables).  A block of 1 cannot be paired:
    ``ValueError``."""
    players = list(entrants)
    if len(players) < 2:
        raise ValueError("a block needs at least two players to pair")
    rng.shuffle(players)  # ties between equal pairings fall by the seed
    before = frozenset(frozenset(t) for t in last)
    ids = {e.id for e in players}
    if not before or {p for t in before for p in t} != ids:
        before = frozenset()  # somebody joined or left: this round differs anyway
    if len(players) == 3:
        tables = [tuple(players)]
    elif len(players) % 2 == 0:
        found = _match_unlike(players, met, mix_groups, before) if before else None
        tables = [tuple(p) for p in (found or _match(players, met, mix_groups))[0]]
    else:
        share = trio_share(len(players), rounds, [e.trios for e in players])
        tables = _odd(players, met, mix_groups, before, share)
    return [tuple(e.id for e in _seat(t)) for t in _order(tables)]


def _odd(players: list[Entrant], met, mix_groups, before: frozenset = frozenset(),
         share: int = 1):
    """Every trio's own cost, cheapest first; for each, the best matching of the others (not
    the round before's, when the trio is the one before's).  A trio that alone costs as much
    as the best round so far cannot lead to a better one, so the search stops there (exact).
    Above ``EXACT_UP_TO`` players it starts from one quick guess (a matching with a dummy
    player, whose partner joins the pair that suits them best) and tries the ``CANDIDATES``
    cheapest trios only if that trio is not clean: a meeting again, a second three-player
    table or wins further apart than one (a heuristic)."""
    best = None
    if len(players) > EXACT_UP_TO:
        spare = {i: trio_cost(e.trios, share) for i, e in enumerate(players)}
        pairs, _ = _match(players, met, mix_groups, spare)
        c = pairs.pop()[0]
        k = min(range(len(pairs)), key=lambda k: _trio_cost(pairs[k] + (c,), met, mix_groups,
                                                            share)
                - pair_cost(*pairs[k], met, mix_groups))
        tables = [pairs[k] + (c,)] + pairs[:k] + pairs[k + 1:]
        if _key(tables) != before:
            best = (_cost(tables, met, mix_groups, share), tables)
            if _trio_cost(tables[0], met, mix_groups, share) <= CLEAN_TRIO:
                return best[1]
    trios = sorted(((_trio_cost(t, met, mix_groups, share), k, t)
                    for k, t in enumerate(itertools.combinations(players, 3))),
                   key=lambda x: (x[0], x[1]))
    limit = len(trios) if len(players) <= EXACT_UP_TO else CANDIDATES
    fallback = None
    for tc, _, trio in trios[:limit]:
        if best is not None and tc >= best[0]:
            break
        rest = [p for p in players if p not in trio]
        same = before and frozenset(e.id for e in trio) in before
        found = (_match_unlike(rest, met, mix_groups, before - {frozenset(e.id for e in trio)})
                 if same else _match(rest, met, mix_groups))
        if found is None:  # only the round before's seating has this trio
            fallback = fallback or [trio] + _match(rest, met, mix_groups)[0]
            continue
        pairs, cost = found
        if best is None or tc + cost < best[0]:
            best = (tc + cost, [trio] + pairs)
    return best[1] if best is not None else fallback


def _order(tables):
    return sorted(tables, key=lambda t: (-max(e.wins for e in t), -sum(e.wins for e in t)))


def _seat(t):
    return tuple(sorted(t, key=lambda e: -e.wins))


def history(tables: Iterable[Sequence[Hashable]]) -> tuple[dict[frozenset, int], dict]:
    """From the preliminary tables played so far (seats): how often each pair met, and how
    many three-player tables each player had."""
    from collections import defaultdict

    met: dict[frozenset, int] = defaultdict(int)
    trios: dict = defaultdict(int)
    for ps in tables:
        for a, b in itertools.combinations(ps, 2):
            met[frozenset((a, b))] += 1
        if len(ps) == 3:
            for p in ps:
                trios[p] += 1
    return met, trios


def pair_round(blocks: dict[str, Sequence], played: Sequence, wins: dict, last: Sequence,
               seed: int, round_no: int, mix_groups: bool, rounds: int) -> list:
    """One preliminary round of every block: ``blocks``: block -> the players who play in it
    (``rows.Player``); ``played``: the seats of every preliminary table so far; ``wins``:
    player id -> wins so far; ``last``: the round before's tables (``rows.Table``; none if it
    was not a preliminary round).  Returns ``(block, "prelim", seats)`` per table; the seed
    only breaks ties (``random.Random(f"{seed}/pair/{round_no}/{block}")``)."""
    from reader.tournament.errors import TournamentError

    met, trios = history(played)
    out = []
    for block, active in blocks.items():
        if not active:
            continue
        if len(active) == 1:
            raise TournamentError(f"block {block} has one player left "
                                  f"({active[0].name}): add a player to block {block} "
                                  "(`karuta tournament add NAME --block "
                                  f"{block}`) or withdraw them")
        ents = [Entrant(p.id, wins.get(p.id, 0), p.group, trios[p.id]) for p in active]
        rng = random.Random(f"{seed}/pair/{round_no}/{block}")
        before = [tb.seats for tb in last if tb.block == block]
        for t in pair_block(ents, met, rng, mix_groups, before, rounds):
            out.append((block, "prelim", t))
    return out
