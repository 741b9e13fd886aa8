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

Each round is the best round given the rounds before, with one look ahead (blocks of up to
``LOOKAHEAD_UP_TO``): while the rest of the day can still be played with no pair meeting
twice (and every player's three-player tables within their share), a round is chosen only
if that stays possible after it (``clean_day``, a search over the rounds left); the costs
choose among those.  Without it a block of 8 or 9 could paint itself into a corner and see
a rematch in its last rounds.  What this guarantees over a whole day for blocks of 3-11,
whatever the results, is proved in tests/test_tournament_pairing.py and
``scripts/prove_pairing.py``.

The random generator is passed in: it only breaks ties between equal pairings (the node
order), so a round is reproducible from the tournament seed.
"""
from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass
from typing import Hashable, Iterable, Iterator, Sequence

from reader.base import seeds


__all__ = ["Entrant", "pair_block", "history", "pair_round", "partitions", "clean_day",
           "LOOKAHEAD_UP_TO", "pair_cost", "pairing_cost", "meet_cost", "trio_cost",
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
               rounds: int | None = None, left: int | None = None) -> list[tuple[Hashable, ...]]:
    """The tables of one round for one block: tuples of 2 ids (and one of 3 when the block is
    odd), best tables first (most wins).  ``met``: how often each pair (a ``frozenset`` of two
    ids) has met before; ``last``: the block's tables in the round before (this round is
    never the same when another seating exists); ``rounds``: the day's preliminary rounds
    (for each player's share of the three-player tables); ``left``: the preliminary rounds
    still to pair after this one (blocks of up to ``LOOKAHEAD_UP_TO`` then look ahead, see
    ``clean_day``).  A block of 1 cannot be paired: ``ValueError``."""
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
    if left is not None and 4 <= len(players) <= LOOKAHEAD_UP_TO:
        share = trio_share(len(players), rounds, [e.trios for e in players])
        floor = 3 * rounds // len(players) if rounds and len(players) % 2 else 0
        tables = _look_ahead(players, met, mix_groups, share, left, floor, tables)
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
        rng = seeds.rng(seed, "pair", round_no, block)
        before = [tb.seats for tb in last if tb.block == block]
        for t in pair_block(ents, met, rng, mix_groups, before, rounds, rounds - round_no):
            out.append((block, "prelim", t))
    return out


def partitions(items: tuple) -> Iterator[tuple[tuple, ...]]:
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


#: blocks of up to this many players look ahead (``clean_day``)
LOOKAHEAD_UP_TO = 11
#: the look-ahead's search stops after this many states (then the round is the cheapest,
#: as without it); in the proofs and simulations it was never reached
LOOKAHEAD_BUDGET = 20_000


@functools.lru_cache(maxsize=16)
def _seatings(n: int) -> tuple:
    """Every seating of players 0..n-1 as (bit mask of its pairs, bit mask of the trio's
    players, tables), in a fixed shuffled order (the search finds a day sooner than in
    lexicographic order, where the first rounds all seat 0 with 1)."""
    out = [_masks(n, tables) + (tables,) for tables in partitions(tuple(range(n)))]
    seeds.rng(n).shuffle(out)
    return tuple(out)


def _masks(n: int, tables) -> tuple[int, int]:
    """A seating of players 0..n-1 as (bit mask of its pairs, bit mask of the trio)."""
    idx = _bit_index(n)
    pairs = trio = 0
    for t in tables:
        for a, b in itertools.combinations(t, 2):
            pairs |= idx[a, b]
        if len(t) == 3:
            trio = sum(1 << p for p in t)
    return pairs, trio


@functools.lru_cache(maxsize=16)
def _bit_index(n: int) -> dict:
    idx = {}
    for k, (a, b) in enumerate(itertools.combinations(range(n), 2)):
        idx[a, b] = idx[b, a] = 1 << k
    return idx


class _Budget(Exception):
    pass


#: per (block size, share, floor): the states already searched (clean or not), and the first
#: round found from the clean ones; shared by the rounds of a day and by the proofs
_MEMO: dict = {}
_MEMO_MAX = 1_000_000


def _rounds_in(n: int, unmet: int, trios: tuple, share: int, order: tuple) -> Iterator:
    """Every seating of players 0..n-1 using only pairs in ``unmet`` (and, when ``n`` is odd,
    one trio of players below ``share``), as (pairs mask, trio mask); ``order``: the order
    partners are tried in."""
    idx = _bit_index(n)

    def matchings(rest: int):
        if not rest:
            yield 0
            return
        v = (rest & -rest).bit_length() - 1
        rest &= ~(1 << v)
        for u in order:
            if rest >> u & 1 and unmet & idx[v, u]:
                for m in matchings(rest & ~(1 << u)):
                    yield m | idx[v, u]

    everyone = (1 << n) - 1
    if n % 2 == 0:
        for m in matchings(everyone):
            yield m, 0
        return
    # the trio from those with the fewest three-player tables first (who need one most)
    free = sorted((p for p in order if trios[p] < share), key=lambda p: trios[p])
    for a, b, c in itertools.combinations(free, 3):
        tri = idx[a, b] | idx[a, c] | idx[b, c]
        if tri & ~unmet:
            continue
        for m in matchings(everyone & ~(1 << a | 1 << b | 1 << c)):
            yield m | tri, 1 << a | 1 << b | 1 << c


def clean_day(n: int, unmet: int, trios: tuple[int, ...], left: int, share: int,
              floor: int = 0, budget: int = LOOKAHEAD_BUDGET,
              first: list | None = None) -> bool | None:
    """Can ``left`` more rounds of players 0..n-1 be played with every pair meeting at most
    once more, only pairs in ``unmet`` (a bit mask, ``_bit_index``), nobody's three-player
    tables (``trios``) above ``share``, and at the end none below ``floor``?  None if the
    search ran out of ``budget`` steps before it knew.  When it can, the first round of the
    day found is appended to ``first`` (as a pairs mask and a trio mask)."""
    if n % 2 == 0:
        trios, share, floor = (0,) * n, 0, 0
    idx = _bit_index(n)
    per_player = [sum(idx[p, q] for q in range(n) if q != p) for p in range(n)]
    order = list(range(n))
    seeds.rng(n).shuffle(order)
    order = tuple(order)
    memo = _MEMO.setdefault((n, share, floor), ({}, {}))
    if len(memo[0]) > _MEMO_MAX:
        memo[0].clear()
        memo[1].clear()
    seen, chosen = memo  # what is known is known for good (a search cut short stores nothing
    count = [0]          # it did not finish)

    def rec(unmet: int, trios: tuple, left: int) -> bool:
        if left == 0:
            return min(trios, default=0) >= floor
        key = (unmet, trios, left)
        if key in seen:
            return seen[key]
        ok = (all(bin(unmet & m).count("1") >= left for m in per_player)
              and (not n % 2 or sum(max(0, share - t) for t in trios) >= 3 * left)
              and sum(max(0, floor - t) for t in trios) <= 3 * left)
        if ok:
            ok = False
            for pairs, trio in _rounds_in(n, unmet, trios, share, order):
                count[0] += 1
                if count[0] > budget:
                    raise _Budget
                nt = tuple(t + (trio >> p & 1) for p, t in enumerate(trios)) if trio else trios
                if rec(unmet & ~pairs, nt, left - 1):
                    ok = True
                    chosen[key] = (pairs, trio)
                    break
        seen[key] = ok
        return ok

    try:
        ok = rec(unmet, tuple(trios), left)
    except _Budget:
        return None
    if ok and left and first is not None:
        first.append(chosen[unmet, tuple(trios), left])
    return ok


def _look_ahead(players: list[Entrant], met, mix_groups, share: int, left: int, floor: int,
                tables):
    """``tables`` if the rest of the day (``left`` rounds after this one) can still be
    played clean after them (``clean_day``), else the cheapest round that keeps it so; and
    ``tables`` as they are when no clean day is possible from here (or the search ran out)."""
    n = len(players)
    pos = {e.id: i for i, e in enumerate(players)}
    idx = _bit_index(n)
    unmet = 0
    for a, b in itertools.combinations(range(n), 2):
        if not met.get(frozenset((players[a].id, players[b].id)), 0):
            unmet |= idx[a, b]
    trios = tuple(e.trios for e in players)

    def after(pairs_trio):
        pairs, trio = pairs_trio
        nt = tuple(t + (trio >> p & 1) for p, t in enumerate(trios))
        return unmet & ~pairs, nt

    def over(trio, nt) -> bool:  # a trio player beyond their share (others may be, after churn)
        return any(nt[p] > share for p in range(n) if trio >> p & 1)

    def mask(ts):
        return _masks(n, [[pos[e.id] for e in t] for t in ts])

    for fl in ((floor, 0) if floor else (0,)):
        witness: list = []
        if not clean_day(n, unmet, trios, left + 1, share, fl, first=witness):
            continue
        pairs, trio = mask(tables)
        u, nt = after((pairs, trio))
        if not pairs & ~unmet and not over(trio, nt) and clean_day(n, u, nt, left, share, fl):
            return tables
        ranked = []
        for pairs, trio, seat in _seatings(n):
            if pairs & ~unmet:
                continue
            u, nt = after((pairs, trio))
            if over(trio, nt):
                continue
            ts = [tuple(players[i] for i in t) for t in seat]
            ranked.append((_cost(ts, met, mix_groups, share), len(ranked), ts, u, nt))
        ranked.sort(key=lambda x: (x[0], x[1]))
        for _, _, ts, u, nt in ranked:
            if clean_day(n, u, nt, left, share, fl):
                return ts
        # none of them confirmed within the budget: the first round of the day the search
        # found (the rest of the day stays clean after it, by construction)
        return [tuple(players[i] for i in t) for t in _decode(n, *witness[0])]
    return tables


def _decode(n: int, pairs: int, trio: int) -> list[tuple[int, ...]]:
    """The tables of a seating given as masks (``_rounds_in``)."""
    trio_ps = tuple(p for p in range(n) if trio >> p & 1)
    out = [trio_ps] if trio_ps else []
    for (a, b), bit in _bit_index(n).items():
        if a < b and pairs & bit and a not in trio_ps and b not in trio_ps:
            out.append((a, b))
    return out
