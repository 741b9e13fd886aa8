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
           "draw_lots", "simulated_counts", "semi_pairs", "MAX_CARDS", "DEFAULT_READS", "SEATS", "KIND_NAMES",
           "check_result", "max_cards", "semi_finals", "finals"]

MAX_CARDS = goshiki.CARDS
DEFAULT_READS = goshiki.DEFAULT_READS
SEATS = ("A", "B", "C")
KIND_NAMES = {"prelim": "preliminary", "semi": "semi-final", "final": "final",
              "third": "third place"}


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


def simulated_counts(rng, players: int, most: int = 9, reads: int = DEFAULT_READS) -> list[int]:
    """Cards each of ``players`` took at a simulated table (benchmarks and tests play whole days
    with it): each 0..``most``, drawn again until they add up to at most the ``reads`` cards
    read (a result above is refused)."""
    while True:
        c = [rng.randint(0, most) for _ in range(players)]
        if sum(c) <= reads:
            return c


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


def semi_finals(block: str, rows: Sequence[Row], seed: int) -> tuple[list, list]:
    """A block's knock-out round after the preliminaries: ``(tables, lots)``, tables as
    ``(block, kind, seats)`` (1 v 4 and 2 v 3, or a final of the top two in a block of 2-3),
    lots as ``(block, player, number, seed)`` for the ties a lot decided (recorded).  ``rows``:
    the block's standings (their ``lot`` is set for the players who drew)."""
    tables: list = []
    lots: list = []
    rows = [r for r in rows if not r.withdrawn]
    for group in tie_groups_needing_lots(rows):
        lot_seed = f"{seed}/lot/{block}/" + ",".join(
            str(r.id) for r in sorted(group, key=lambda r: r.id))
        drawn = draw_lots(lot_seed, [r.id for r in group])
        lots += [(block, pid, n, lot_seed) for pid, n in drawn.items()]
        for r in group:
            r.lot = drawn[r.id]
    rows.sort(key=lambda r: (-r.wins, -r.cards, r.lot or 0))
    top = [r.id for r in rows[:4]]
    if len(top) == 4:
        tables += [(block, "semi", pair) for pair in semi_pairs(top)]
    elif len(top) >= 2:
        tables.append((block, "final", (top[0], top[1])))
    return tables, lots


def finals(semis: Sequence, third_place: bool) -> list:
    """The final (and the third-place match) of a block from its two decided semi-finals
    (tables with ``seats`` and ``outcome``), as ``(block, kind, seats)``."""
    if not semis:
        return []
    block = semis[0].block
    winners = tuple(t.seats[t.outcome.index("win")] for t in semis)
    losers = tuple(t.seats[t.outcome.index("loss")] for t in semis)
    return [(block, "final", winners)] + ([(block, "third", losers)] if third_place else [])


def max_cards(knockout: bool, reads: int, tiebreak: int = 0) -> int:
    """The most cards a table's players can have taken together: the cards read, and in a
    knock-out match the tie-break cards read in that match (one at a time after a tie)."""
    return reads + (tiebreak if knockout else 0)


def check_result(table, counts: Sequence[int], faults: Iterable[Hashable], reads: int,
                 name_of, tiebreak: int = 0) -> tuple[tuple[int, ...], tuple[Hashable, ...]]:
    """A table's result as written on its sheet, checked against the rules: one count per
    seat, none negative, the cards no more than were read (``reads``, and in a knock-out match
    the ``tiebreak`` cards read in that match, up to the colour's 20), a knock-out match not
    equal, the faults by players of the table.  ``table``: a ``rows.Table``; ``name_of``:
    player id -> name (for a fault by someone else).  ``TournamentError`` if not."""
    from reader.tournament.errors import TournamentError

    where = f"table {table.no}"
    if len(counts) != len(table.seats):
        raise TournamentError(f"{where} has {len(table.seats)} players "
                              f"({', '.join(table.names)}): give {len(table.seats)} counts, "
                              f"not {len(counts)}")
    if tiebreak and not table.knockout:
        raise TournamentError(f"{where}: a preliminary match reads no tie-break cards (a tie "
                              "is a draw)")
    if isinstance(tiebreak, bool) or not 0 <= tiebreak <= MAX_CARDS - reads:
        raise TournamentError(f"{where}: {tiebreak} tie-break cards, but {reads} of the "
                              f"colour's {MAX_CARDS} are read: at most {MAX_CARDS - reads}")
    most = max_cards(table.knockout, reads, tiebreak)
    read = f"{reads} are read" + (f" and {tiebreak} tie-break card{'s' if tiebreak > 1 else ''}"
                                  if tiebreak else "")
    hint = (" (tie-break cards read in this match: give how many, e.g. --tiebreak 1)"
            if table.knockout and not tiebreak else "")
    for n, name in zip(counts, table.names):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TournamentError(f"{where}: {n!r} cards for {name} is not a count")
        if n > most:
            raise TournamentError(f"{where}: {n} cards for {name}, but only {read}{hint}")
    if sum(counts) > most:
        raise TournamentError(f"{where}: {' + '.join(map(str, counts))} = {sum(counts)} "
                              f"cards, but only {read}{hint}")
    faults = tuple(faults)
    for f in faults:
        if f not in table.seats:
            raise TournamentError(f"{where}: {name_of(f)} did not play at this table "
                                  f"({', '.join(table.names)})")
    try:
        table_outcome(table.seats, counts, table.knockout)
    except ValueError as e:
        raise TournamentError(f"{where} ({KIND_NAMES[table.kind]}): {e}") from None
    return tuple(counts), tuple(dict.fromkeys(faults))
