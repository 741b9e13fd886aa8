"""What the tournament store hands out: typed, frozen rows (no SQL, no rules).

``store.Tournament`` returns these; the CLI, the pages, the desk and the reading read their
fields, and ``to_json`` is the one place each row is said as JSON (``--json``, ``export``).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Player", "Table", "Round", "Lot", "Undone", "Status", "STAGE_NAMES"]

STAGE_NAMES = {"prelim": "preliminary", "semi": "semi-finals", "final": "final"}


@dataclass(frozen=True)
class Player:
    id: int
    name: str
    group: str
    block: str
    #: the first round they are paired in (1, or the round after they were added)
    joined_round: int = 1
    #: the first round they are no longer paired in (None: still playing)
    withdrawn_round: int | None = None

    def plays_in(self, round_no: int) -> bool:
        return self.joined_round <= round_no and (self.withdrawn_round is None
                                                  or self.withdrawn_round > round_no)

    @property
    def withdrawn(self) -> bool:
        return self.withdrawn_round is not None

    def to_json(self) -> dict:
        return {"name": self.name, "group": self.group, "block": self.block,
                "joined_round": self.joined_round, "withdrawn_round": self.withdrawn_round}


@dataclass(frozen=True)
class Table:
    round: int
    no: int
    block: str
    kind: str
    seats: tuple[int, ...]
    names: tuple[str, ...]
    #: the table's live result (cards per seat), or None
    counts: tuple[int, ...] | None = None
    faults: tuple[int, ...] = ()
    outcome: tuple[str, ...] | None = None

    @property
    def knockout(self) -> bool:
        return self.kind != "prelim"

    @property
    def winner(self) -> int | None:
        """The seat's player id who won (knock-out tables: exactly one), once entered."""
        return None if self.outcome is None or "win" not in self.outcome else \
            self.seats[self.outcome.index("win")]

    def seat_of(self, name: str) -> int:
        """The player id of ``name`` at this table (山田太郎 finds 山田 太郎: a desk line
        splits at spaces); ``TournamentError`` if they did not play here."""
        from reader.tournament.errors import TournamentError
        from reader.tournament.players import clean_name

        nm = clean_name(name)
        if nm not in self.names:
            same = [n for n in self.names if n.replace(" ", "") == nm.replace(" ", "")]
            nm = same[0] if len(same) == 1 else nm
        if nm not in self.names:
            raise TournamentError(f"table {self.no}: {nm} did not play at this table "
                                  f"({', '.join(self.names)})")
        return self.seats[self.names.index(nm)]

    def to_json(self) -> dict:
        return {"round": self.round, "table": self.no, "block": self.block, "kind": self.kind,
                "players": list(self.names), "cards": None if self.counts is None
                else list(self.counts), "result": None if self.outcome is None
                else list(self.outcome),
                "faults": [self.names[self.seats.index(f)] for f in self.faults]}


@dataclass(frozen=True)
class Round:
    no: int
    stage: str
    color: str
    reading_seed: int
    tables: tuple[Table, ...] = ()

    @property
    def stage_name(self) -> str:
        return STAGE_NAMES[self.stage]

    def missing(self) -> list[int]:
        """The tables still without a result."""
        return [t.no for t in self.tables if t.counts is None]

    def to_json(self) -> dict:
        return {"round": self.no, "stage": self.stage, "color": self.color,
                "reading_seed": self.reading_seed, "stage_name": self.stage_name,
                "tables": [t.to_json() for t in self.tables]}


@dataclass(frozen=True)
class Lot:
    block: str
    player: int
    name: str
    number: int
    seed: str

    def to_json(self) -> dict:
        return {"block": self.block, "name": self.name, "number": self.number, "seed": self.seed}


@dataclass(frozen=True)
class Undone:
    """An entry taken back, and the table as it is after."""

    round: int
    table: int
    cards: tuple[int, ...]
    after: Table

    def to_json(self) -> dict:
        return {"undone": {"round": self.round, "table": self.table, "cards": list(self.cards)},
                "table": self.after.to_json()}


@dataclass(frozen=True)
class Status:
    file: str
    title: str
    seed: int
    rounds: int
    players: int
    blocks: tuple[tuple[str, int], ...]
    round: int
    stage: str | None
    color: str | None
    missing: tuple[int, ...]
    #: every table of every round still without a result, as (round, table)
    missing_all: tuple[tuple[int, int], ...]
    next_color: str | None
    reads: int
    color_policy: str
    champions: tuple[tuple[str, str], ...]

    def to_json(self) -> dict:
        return {"file": self.file, "title": self.title, "seed": self.seed,
                "rounds": self.rounds, "players": self.players, "blocks": dict(self.blocks),
                "round": self.round, "stage": self.stage, "color": self.color,
                "missing": list(self.missing),
                "missing_all": [{"round": r, "table": t} for r, t in self.missing_all],
                "next_color": self.next_color, "reads": self.reads,
                "color_policy": self.color_policy, "champions": dict(self.champions)}
