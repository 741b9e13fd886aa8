"""Results, standings, lots and the bracket (pure: no clock, no database).

A table's result is what the score sheet says: the cards each seat took (and, optionally, who
faulted).  Who won follows the goshiki rules (``reader.match.rules.goshiki.outcome_of``, the same
function the match scorer uses): two players, more cards wins, equal is a draw; three players,
the top two win and a tie for 2nd/3rd is a draw for both (seed 004).  Knock-out matches
(semi-finals, final, third place) cannot end equal: the final reads one more card (seed 004);
the semi-finals and the third-place match do the same here, since someone must go on.

Standings per block (seed 004): wins, then cards taken, then a lot.  The lot is drawn only
where it decides something (a tie that reaches into the top four when the preliminaries are
over), from a seed, and recorded: ``draw_lots`` says who drew which number, reproducibly.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

from reader.base import seeds
from reader.match.rules import goshiki

__all__ = ["TableResult", "table_outcome", "Row", "standings", "tie_groups_needing_lots",
           "draw_lots", "semi_pairs", "MAX_CARDS", "DEFAULT_READS", "SEATS"]

MAX_CARDS = goshiki.CARDS
DEFAULT_READS = goshiki.DEFAULT_READS
SEATS = ("A", "B", "C")


@dataclass(frozen=True)
class TableResult:
    """One table of one round: ``seats`` (player ids in seat order) and ``counts`` (cards
    taken, same order); ``faults``: ids of players who faulted (optional, for the record)."""

    round: int
    table: int
    block: str
    seats: tuple[Hashable, ...]
    counts: tuple[int, ...]
    faults: tuple[Hashable, ...] = ()
    knockout: bool = False


def table_outcome(seats: Sequence[Hashable], counts: Sequence[int],
                  knockout: bool = False) -> dict[Hashable, str]:
    """``{player: "win" | "draw" | "loss"}`` for a finished table (counts as written on the
    sheet).  ``ValueError`` for a knock-out tie (read one more card)."""
    kinds = _kinds(tuple(counts))
    if knockout and kinds.count("win") != 1:
        raise ValueError("a knock-out match cannot end equal: read one more card and write "
                         "the count after it")
    return dict(zip(seats, kinds))


_FINAL = goshiki.Settings(finals=False)


@functools.lru_cache(maxsize=4096)
def _kinds(counts: tuple[int, ...]) -> tuple[str, ...]:
    """Seat by seat, what the goshiki rules make of these counts after the last read (the
    counts on a sheet are final).  Cached: a day has few distinct score lines."""
    names = SEATS[: len(counts)]
    out = goshiki.outcome_of(dict(zip(names, counts)), _FINAL.reads, _FINAL)
    assert out is not None
    return tuple("win" if n in out.winners else "draw" if n in out.drawn else "loss"
                 for n in names)


@dataclass
class Row:
    id: Hashable
    name: str
    group: str = ""
    played: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    cards: int = 0
    faults: int = 0
    #: the lot number drawn for a tie (1 = best), shown only when it decided something
    lot: int | None = None
    rank: int = 0
    #: the rank is shared with another player (equal wins and cards, no lot)
    tied: bool = False
    withdrawn: bool = False
    history: list = field(default_factory=list)

    @property
    def key(self) -> tuple[int, int]:
        return (self.wins, self.cards)

    def to_json(self) -> dict:
        return {"rank": self.rank, "tied": self.tied, "name": self.name, "group": self.group,
                "played": self.played, "wins": self.wins, "draws": self.draws,
                "losses": self.losses, "cards": self.cards, "faults": self.faults,
                "lot": self.lot, "withdrawn": self.withdrawn}


def standings(players: Iterable[tuple[Hashable, str, str, bool]], results: Iterable[TableResult],
              lots: dict[Hashable, int] | None = None) -> list[Row]:
    """Rows for one block, best first.  ``players``: (id, name, group, withdrawn);
    ``results``: the block's preliminary results; ``lots``: id -> lot number (1 = best) for
    the players whose tie a lot decided.  Ranks: 1, 2, 2, 4 for a tie left open."""
    lots = lots or {}
    rows = {pid: Row(pid, name, group, withdrawn=wd) for pid, name, group, wd in players}
    for r in results:
        outcome = table_outcome(r.seats, r.counts)
        for pid, n in zip(r.seats, r.counts):
            row = rows.get(pid)
            if row is None:
                continue
            row.played += 1
            row.cards += n
            kind = outcome[pid]
            if kind == "win":
                row.wins += 1
            elif kind == "draw":
                row.draws += 1
            else:
                row.losses += 1
            row.history.append((r.round, kind, n))
        for pid in r.faults:
            if pid in rows:
                rows[pid].faults += 1
    ordered = sorted(rows.values(), key=lambda x: (-x.wins, -x.cards,
                                                   lots.get(x.id, 0), x.name))
    prev = None
    for i, row in enumerate(ordered, 1):
        row.lot = lots.get(row.id)
        full = (row.wins, row.cards, row.lot)
        if prev is not None and full == prev[0]:
            row.rank = prev[1].rank
            row.tied = prev[1].tied = True
        else:
            row.rank = i
        prev = (full, row)
    return ordered


def tie_groups_needing_lots(rows: Sequence[Row], places: int = 4) -> list[list[Row]]:
    """The groups of players equal on wins and cards that a lot must order: every tie that
    includes one of the first ``places`` places (it decides who goes on, or who meets whom)."""
    groups: list[list[Row]] = []
    i = 0
    active = [r for r in rows if not r.withdrawn]
    while i < len(active) and i < places:
        j = i
        while j + 1 < len(active) and active[j + 1].key == active[i].key:
            j += 1
        if j > i:
            groups.append(active[i:j + 1])
        i = j + 1
    return groups


def draw_lots(seed: str, group: Sequence[Hashable]) -> dict[Hashable, int]:
    """Lot numbers 1..k for the tied players of ``group``, from a string seed: the same
    tournament seed, block and players always draw the same numbers (``random.Random`` seeded
    with a string is stable across Python versions)."""
    ids = sorted(group, key=str)
    numbers = list(range(1, len(ids) + 1))
    seeds.rng(seed).shuffle(numbers)
    return dict(zip(ids, numbers))


def semi_pairs(top: Sequence[Hashable]) -> list[tuple[Hashable, Hashable]]:
    """Semi-finals from the top four in order: 1 v 4, 2 v 3 (fewer than four: the top two
    play the final at once, see ``Tournament.pair``)."""
    if len(top) < 4:
        raise ValueError("semi-finals need four players")
    return [(top[0], top[3]), (top[1], top[2])]
