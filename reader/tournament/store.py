"""The tournament day in one SQLite file: players, rounds, tables, results, lots (storage
only: the rules are in ``day``, ``pairing`` and ``scoring``, the CSV and export files in
``files``).

Every change is one transaction (``BEGIN IMMEDIATE``, its checks read inside it), committed
before the call returns (WAL journal, ``synchronous=FULL``): a crash, a closed lid or a flat
battery a moment later loses nothing, and ``karuta tournament ... --resume`` goes on from the
file.  Bad input raises ``TournamentError`` before anything is written, so a refused entry
changes nothing.  A ``Tournament`` holds one connection: use it as a context manager (``with
Tournament.open(path) as t:``) or ``close`` it; nothing else opens one (``integrity.identify``
reads a foreign file read-only and immutable, and closes it).

Results are entries on a stack (``entries``): a correction is a new entry for the same table,
``undo`` marks the newest entry undone, and a table's result is its newest live entry, so the
standings always follow from the raw entries (tests recount them).

What the store hands out are typed rows (``reader.tournament.rows``: ``Player``, ``Table``,
``Round``, ``Lot``, ``Undone``, ``Status``) and ``scoring.Row`` standings.

Who calls what: ``reader.cli.tournament`` (thin) -> ``Tournament`` -> ``pairing``,
``scoring`` and ``day`` (pure) and ``files``; after every change ``on_change`` rewrites the
projector page.
"""
from __future__ import annotations

import functools
import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from reader.base import seeds
from reader.base.sqldb import immediate
from reader.base.statefiles import decode_json
from reader.tournament import files, integrity, pairing, scoring
from reader.tournament.day import (COLOR_POLICIES, Settings, default_colors, parse_color,
                                   round_colors)
from reader.tournament.errors import TournamentError
from reader.tournament.players import (PlayerRow, balance_blocks, check_blocks, check_name,
                                       clean_name)
from reader.tournament.rows import STAGE_NAMES, Lot, Player, Round, Status, Table, Undone

__all__ = ["Tournament", "Settings", "Table", "default_colors", "COLOR_POLICIES", "FORMAT",
           "VERSION"]

FORMAT = "karuta-tournament"
VERSION = 1

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE players(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
    grp TEXT NOT NULL DEFAULT '', block TEXT NOT NULL,
    joined_round INTEGER NOT NULL DEFAULT 1, withdrawn_round INTEGER);
CREATE TABLE rounds(no INTEGER PRIMARY KEY, stage TEXT NOT NULL, color TEXT NOT NULL,
    reading_seed INTEGER NOT NULL);
CREATE TABLE tables(round INTEGER NOT NULL, no INTEGER NOT NULL, block TEXT NOT NULL,
    kind TEXT NOT NULL, PRIMARY KEY(round, no));
CREATE TABLE seats(round INTEGER NOT NULL, table_no INTEGER NOT NULL, seat INTEGER NOT NULL,
    player INTEGER NOT NULL REFERENCES players(id), PRIMARY KEY(round, table_no, seat),
    UNIQUE(round, player));
CREATE TABLE entries(id INTEGER PRIMARY KEY AUTOINCREMENT, round INTEGER NOT NULL,
    table_no INTEGER NOT NULL, counts TEXT NOT NULL, faults TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT 'sheet', undone INTEGER NOT NULL DEFAULT 0);
CREATE INDEX entries_table ON entries(round, table_no, undone);
CREATE TABLE lots(block TEXT NOT NULL, player INTEGER NOT NULL REFERENCES players(id),
    number INTEGER NOT NULL, seed TEXT NOT NULL, PRIMARY KEY(block, player));
"""


def _writes(method):
    """A method that changes the file: all of it (its checks too) runs in one ``_tx``, an
    SQLite failure is one line, and ``on_change`` runs after the commit (once, however the
    methods call each other)."""

    @functools.wraps(method)
    def wrapper(self, *a, **kw):
        if self.db.in_transaction:
            return method(self, *a, **kw)
        try:
            with self._tx():
                out = method(self, *a, **kw)
        except sqlite3.Error as e:
            raise integrity.sql_error(self.path, e) from None
        self._changed()
        return out

    return wrapper


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=integrity.BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


class Tournament:
    """One tournament file, one connection.  ``Tournament.create(path, rows, settings)`` or
    ``Tournament.open(path)``, both best in a ``with`` block (the connection is closed at its
    end, whatever happens); every method that changes something commits before it returns and
    then calls ``on_change`` (the CLI rewrites the projector page there)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict | None = None):
        self.path = path
        self.db = conn
        self.on_change = None
        if meta is None:
            m = dict(conn.execute("SELECT key, value FROM meta"))
            meta = {k: decode_json(v) for k, v in m.items()}
        self.meta = meta
        self.settings = Settings.from_meta(meta)

    def __enter__(self) -> "Tournament":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ opening
    @classmethod
    def create(cls, path: str | Path, rows: Sequence[PlayerRow], settings: Settings,
               blocks: int | None = None) -> "Tournament":
        path = Path(path)
        settings.validate()
        try:
            path.exists() and path.parent.is_dir()
        except OSError as e:  # a name too long
            raise TournamentError(f"cannot write {path}: {e.strerror or e}") from None
        if path.exists():
            raise TournamentError(f"{path} already holds a tournament: add --resume to go on "
                                  "with it, or choose another --file")
        if not path.parent.is_dir():
            raise TournamentError(f"cannot write {path}: folder {path.parent} does not exist")
        rows = balance_blocks(rows, blocks, seeds.rng(settings.seed, "blocks"))
        check_blocks(rows)
        meta = dict({"format": FORMAT, "version": VERSION},
                    **round_colors(settings).to_meta())
        tmp = path.with_name(path.name + ".new")
        tmp.unlink(missing_ok=True)
        try:
            conn = _connect(tmp)
        except sqlite3.Error as e:
            raise TournamentError(f"cannot create {path}: {e}") from None
        try:
            with conn:
                conn.execute("BEGIN")
                for stmt in SCHEMA.strip().split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [(k, json.dumps(v, ensure_ascii=False))
                                  for k, v in meta.items()])
                conn.executemany("INSERT INTO players(name, grp, block) VALUES (?, ?, ?)",
                                 [(r.name, r.group, r.block) for r in rows])
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        tmp.rename(path)  # the file appears whole, or not at all
        return cls.open(path)

    @classmethod
    def open(cls, path: str | Path, *, reading: bool = False) -> "Tournament":
        """``reading``: the caller only reads, so a tournament in a read-only folder or disk is
        opened as it is (immutable: no journal, no WAL switch); a change tried on it is one
        line saying the file is read-only."""
        path = Path(path)
        try:
            there = path.exists()
        except OSError as e:  # a name too long
            raise TournamentError(f"{path}: {e.strerror or e}") from None
        if not there:
            raise TournamentError(f"{path}: no tournament there (start one with "
                                  "`karuta tournament new --players FILE.csv`)")
        integrity.identify(path)  # before anything could change a byte of someone else's file
        from reader.base.sqldb import NotReadable, open_snapshot, writable_here

        try:
            if reading and not writable_here(path):
                conn = open_snapshot(path)
            else:
                conn = _connect(path)
        except NotReadable as e:
            raise TournamentError(f"cannot read {path} (in a read-only folder): {e}; copy it "
                                  "to a folder you can write in") from None
        except sqlite3.Error as e:
            raise integrity.sql_error(path, e) from None
        try:
            version = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if version is not None and version[0].isdigit() and int(version[0]) > VERSION:
                raise TournamentError(f"{path}: written by a newer karuta (format "
                                      f"{version[0]}); it was left as it is")
            meta = integrity.check(conn, path)
        except sqlite3.Error as e:
            conn.close()
            raise integrity.sql_error(path, e) from None
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, meta)

    def close(self) -> None:
        self.db.close()

    def _tx(self):
        """One write transaction (``reader.base.sqldb.immediate``): what a change checks (is
        the table still without a result? which round is next?) is read inside it, so two
        desks entering at once cannot both pass the check."""
        return immediate(self.db)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    # ------------------------------------------------------------------ players
    def players(self, include_withdrawn: bool = True) -> list[Player]:
        q = ("SELECT id, name, grp, block, joined_round, withdrawn_round FROM players "
             "ORDER BY block, id")
        out = [Player(*row) for row in self.db.execute(q)]
        return [p for p in out if include_withdrawn or not p.withdrawn]

    def blocks(self) -> list[str]:
        return [b for (b,) in self.db.execute("SELECT DISTINCT block FROM players ORDER BY block")]

    def player(self, name: str) -> Player:
        nm = clean_name(name)
        row = self.db.execute("SELECT id, name, grp, block, joined_round, withdrawn_round "
                              "FROM players WHERE name = ?", (nm,)).fetchone()
        if row is None:
            raise TournamentError(f"no player called {nm}")
        return Player(*row)

    def names(self) -> dict[int, str]:
        return dict(self.db.execute("SELECT id, name FROM players"))

    @_writes
    def add_player(self, name: str, group: str = "", block: str | None = None) -> Player:
        """A player added on the day: plays from the next round paired."""
        nm, grp = clean_name(name), clean_name(group)
        if not nm:
            raise TournamentError("a player needs a name")
        check_name(nm, "name", "add")
        check_name(grp, "group", "add")
        if self.db.execute("SELECT 1 FROM players WHERE name = ?", (nm,)).fetchone():
            raise TournamentError(f"{nm} is already a player (names must differ)")
        if self.stage_of(self.current_round() + 1) != "prelim":
            raise TournamentError("the preliminary rounds are over: nobody can join now")
        if not block:
            sizes = defaultdict(int, {b: 0 for b in self.blocks()})
            for p in self.players(include_withdrawn=False):
                sizes[p.block] += 1
            block = min(sizes, key=lambda b: (sizes[b], b)) if sizes else "A"
        block = clean_name(block)
        if block not in self.blocks():
            raise TournamentError(f"no block {block} (blocks: {', '.join(self.blocks())})")
        joined = self.current_round() + 1
        self.db.execute("INSERT INTO players(name, grp, block, joined_round) "
                        "VALUES (?, ?, ?, ?)", (nm, grp, block, joined))
        return self.player(nm)

    @_writes
    def withdraw(self, name: str) -> Player:
        """Not paired from the next round on (results so far stay)."""
        p = self.player(name)
        if p.withdrawn:
            raise TournamentError(f"{p.name} has already withdrawn "
                                  f"(before round {p.withdrawn_round})")
        self.db.execute("UPDATE players SET withdrawn_round = ? WHERE id = ?",
                        (self.current_round() + 1, p.id))
        return self.player(p.name)

    # ------------------------------------------------------------------ rounds
    def current_round(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(no), 0) FROM rounds").fetchone()[0]

    def stage_of(self, round_no: int) -> str | None:
        return self.settings.stage_of(round_no)

    def round(self, round_no: int) -> Round:
        """A paired round with its tables; ``TournamentError`` if it is not paired."""
        row = self.db.execute("SELECT stage, color, reading_seed FROM rounds WHERE no = ?",
                              (round_no,)).fetchone()
        if row is None:
            cur = self.current_round()
            raise TournamentError(f"there is no round {round_no} (rounds 1-{cur} are paired)"
                                  if cur else "no round is paired yet: `karuta tournament pair`")
        return Round(round_no, row[0], row[1], row[2], tuple(self.tables(round_no)))

    def round_info(self, round_no: int) -> Round | None:
        """The round without its tables, or None if it is not paired."""
        row = self.db.execute("SELECT stage, color, reading_seed FROM rounds WHERE no = ?",
                              (round_no,)).fetchone()
        return None if row is None else Round(round_no, *row)

    def tables(self, round_no: int) -> list[Table]:
        names = self.names()
        seats: dict[int, list[int]] = defaultdict(list)
        for t, p in self.db.execute("SELECT table_no, player FROM seats WHERE round = ? "
                                    "ORDER BY table_no, seat", (round_no,)):
            seats[t].append(p)
        live = self._live_entries(round_no)
        out = []
        for no, block, kind in self.db.execute("SELECT no, block, kind FROM tables WHERE "
                                               "round = ? ORDER BY no", (round_no,)):
            s = tuple(seats[no])
            e = live.get(no)
            counts = faults = outcome = None
            if e is not None:
                counts, faults = e
                oc = scoring.table_outcome(s, counts)
                outcome = tuple(oc[p] for p in s)
            out.append(Table(round_no, no, block, kind, s, tuple(names[p] for p in s),
                             counts, faults or (), outcome))
        return out

    def _live_entries(self, round_no: int | None = None) -> dict:
        """{table: (counts, faults)} of a round (or {(round, table): ...} for all rounds)."""
        q = "SELECT round, table_no, counts, faults FROM entries WHERE undone = 0"
        args: tuple = ()
        if round_no is not None:
            q += " AND round = ?"
            args = (round_no,)
        out = {}
        for r, t, c, f in self.db.execute(q + " ORDER BY id", args):
            key = t if round_no is not None else (r, t)
            out[key] = (_ints(c), _ints(f))
        return out

    def missing_results(self, round_no: int) -> list[int]:
        return [t.no for t in self.tables(round_no) if t.counts is None]

    @_writes
    def pair(self, color: str | None = None, tables_csv: str | Path | None = None) -> Round:
        """Pair the next round (preliminary, semi-finals or final) and return it.
        ``color``: this round's colour instead of the one set at the start; ``tables_csv``:
        a preliminary round's tables given by hand (``files.read_tables``)."""
        if color is not None:
            color = parse_color(color)
        cur = self.current_round()
        for r in range(cur, 0, -1):  # an earlier round too (a result undone after pairing)
            missing = self.missing_results(r)
            if missing:
                raise TournamentError(f"round {r} has no result yet for table"
                                      f"{'s' if len(missing) > 1 else ''} "
                                      f"{_span(missing)}: enter {'them' if len(missing) > 1 else 'it'} first")
        nxt = cur + 1
        stage = self.stage_of(nxt)
        if stage is None:
            raise TournamentError("the tournament is over: the finals are played "
                                  "(`karuta tournament export` writes all results)")
        lots: list = []
        if tables_csv is not None:
            if stage != "prelim":
                raise TournamentError(f"round {nxt} is the {STAGE_NAMES.get(stage, stage)}: its "
                                      "tables follow from the standings, not from a file")
            tables = files.read_tables(tables_csv, self.players(), nxt)
        elif stage == "prelim":
            tables = self._pair_prelim(nxt)
        elif stage == "semi":
            tables = []
            for block, rows in self.standings().items():
                t, lt = scoring.semi_finals(block, rows, self.settings.seed)
                tables += t
                lots += lt
        else:
            semis: dict[str, list[Table]] = defaultdict(list)
            for t in self.tables(nxt - 1):
                if t.kind == "semi":
                    semis[t.block].append(t)
            tables = [x for ts in semis.values()
                      for x in scoring.finals(ts, self.settings.third_place)]
        if not tables and stage == "final":
            raise TournamentError("the tournament is over: every block's final is played "
                                  "(`karuta tournament export` writes all results)")
        if not tables:
            raise TournamentError(f"nobody to pair for round {nxt}")
        if color is None:
            color = self.settings.color_of(nxt)
        reading_seed = seeds.rng(self.settings.seed, "reading", nxt).randrange(1_000_000)
        self.db.execute("INSERT INTO rounds VALUES (?, ?, ?, ?)",
                        (nxt, stage, color, reading_seed))
        for no, (block, kind, seats) in enumerate(tables, 1):
            self.db.execute("INSERT INTO tables VALUES (?, ?, ?, ?)", (nxt, no, block, kind))
            self.db.executemany("INSERT INTO seats VALUES (?, ?, ?, ?)",
                                [(nxt, no, i, p) for i, p in enumerate(seats)])
        self.db.executemany("INSERT INTO lots VALUES (?, ?, ?, ?)", lots)
        return self.round(nxt)

    @_writes
    def unpair(self) -> int:
        """Take back the newest round's pairing while no result is entered for it; returns
        the round taken back."""
        cur = self.current_round()
        if not cur:
            raise TournamentError("no round is paired yet")
        n = self.db.execute("SELECT COUNT(*) FROM entries WHERE round = ? AND undone = 0",
                            (cur,)).fetchone()[0]
        if n:
            raise TournamentError(f"round {cur} already has {n} result{'s' if n > 1 else ''}: "
                                  "undo them first")
        stage = self.stage_of(cur)
        for t in ("entries", "seats"):
            self.db.execute(f"DELETE FROM {t} WHERE round = ?", (cur,))
        self.db.execute("DELETE FROM tables WHERE round = ?", (cur,))
        self.db.execute("DELETE FROM rounds WHERE no = ?", (cur,))
        if stage == "semi":
            self.db.execute("DELETE FROM lots")
        return cur

    def _seatings(self, upto: int) -> dict[tuple[int, int], list[int]]:
        """The seats of every table of the preliminary rounds before ``upto``."""
        seats: dict[tuple[int, int], list[int]] = defaultdict(list)
        for r, t, p in self.db.execute("SELECT round, table_no, player FROM seats WHERE "
                                       "round < ? AND round <= ? ORDER BY round, table_no, seat",
                                       (upto, self.settings.rounds)):
            seats[r, t].append(p)
        return seats

    def prelim_results(self) -> list[scoring.TableResult]:
        seats = self._seatings(self.settings.rounds + 1)
        blocks = dict(((r, t), b) for r, t, b in self.db.execute(
            "SELECT round, no, block FROM tables WHERE round <= ?", (self.settings.rounds,)))
        return [scoring.TableResult(r, t, blocks[r, t], tuple(seats[r, t]), counts, faults)
                for (r, t), (counts, faults) in self._live_entries().items() if (r, t) in seats]

    def _pair_prelim(self, nxt: int) -> list[tuple[str, str, tuple[int, ...]]]:
        wins: dict[int, int] = defaultdict(int)
        for res in self.prelim_results():
            for pid, kind in scoring.table_outcome(res.seats, res.counts).items():
                wins[pid] += kind == "win"
        before = self.tables(nxt - 1) if self.stage_of(nxt - 1) == "prelim" else []
        players = self.players()
        blocks = {b: [p for p in players if p.block == b and p.plays_in(nxt)]
                  for b in self.blocks()}
        return pairing.pair_round(blocks, list(self._seatings(nxt).values()), wins, before,
                                  self.settings.seed, nxt, self.settings.mix_groups,
                                  self.settings.rounds)

    def standings(self, block: str | None = None) -> dict[str, list[scoring.Row]]:
        """Per block, the preliminary standings (recomputed from the live entries)."""
        by_block: dict[str, list[scoring.TableResult]] = defaultdict(list)
        for r in self.prelim_results():
            by_block[r.block].append(r)
        lots: dict[str, dict[int, int]] = defaultdict(dict)
        for b, p, n in self.db.execute("SELECT block, player, number FROM lots"):
            lots[b][p] = n
        out = {}
        players = self.players()
        for b in sorted({p.block for p in players}):
            if block is not None and b != block:
                continue
            ps = [(p.id, p.name, p.group, p.withdrawn) for p in players if p.block == b]
            out[b] = scoring.standings(ps, by_block[b], lots[b])
        return out

    def prelims_done(self) -> bool:
        r = self.settings.rounds
        return self.current_round() >= r and not self.missing_results(r)

    # ------------------------------------------------------------------ results
    def table_at(self, round_no: int, table_no: int) -> Table:
        for t in self.tables(round_no):
            if t.no == table_no:
                return t
        n = self.db.execute("SELECT COUNT(*) FROM tables WHERE round = ?", (round_no,)).fetchone()[0]
        raise TournamentError(f"table {table_no}: round {round_no} has no such table "
                              f"(tables 1-{n})" if n else f"round {round_no} is not paired")

    def check_result(self, table: Table, counts: Sequence[int], faults=(),
                     tiebreak: int = 0) -> tuple:
        """``scoring.check_result`` with this tournament's cards read."""
        names = self.names()
        return scoring.check_result(table, counts, faults, self.settings.reads,
                                    lambda f: names.get(f, f), tiebreak)

    def _check_editable(self, round_no: int, table_no: int, correct: bool) -> None:
        cur = self.current_round()
        if not 1 <= round_no <= cur:
            raise TournamentError(f"round {round_no} is not paired (the current round is {cur})"
                                  if cur else "no round is paired yet: `karuta tournament pair`")
        if self.stage_of(round_no) == "prelim" and cur > self.settings.rounds:
            raise TournamentError(f"round {round_no} is a preliminary round and the knock-out "
                                  "rounds are paired: `karuta tournament unpair` them first")
        if round_no < cur and self.stage_of(round_no) != "prelim":
            raise TournamentError(f"round {round_no}'s winners are already paired in round "
                                  f"{cur}: `karuta tournament unpair` first")
        live = self._live_entries(round_no)
        if table_no in live and not correct:
            c = "-".join(map(str, live[table_no][0]))
            raise TournamentError(f"table {table_no} already has a result ({c}): add --correct "
                                  "to replace it, or `karuta tournament undo`")

    @_writes
    def enter(self, table_no: int, counts: Sequence[int], faults: Sequence[int] = (),
              round_no: int | None = None, correct: bool = False, source: str = "sheet",
              tiebreak: int = 0) -> Table:
        """Enter one table's result (cards per seat, in seat order; ``tiebreak``: the cards
        read after a tie in this knock-out match); returns the table."""
        round_no = round_no or self.current_round()
        self._check_editable(round_no, table_no, correct)
        table = self.table_at(round_no, table_no)
        counts, faults = self.check_result(table, counts, faults, tiebreak)
        self.db.execute("INSERT INTO entries(round, table_no, counts, faults, source) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (round_no, table_no, _text(counts), _text(faults), source))
        return self.table_at(round_no, table_no)

    @_writes
    def enter_named(self, table_no: int, named: dict[str, int], faults: Sequence[str] = (),
                    round_no: int | None = None, correct: bool = False,
                    tiebreak: int = 0) -> Table:
        """The same with names: ``{"山田": 9, "佐藤": 8}`` (any order)."""
        round_no = round_no or self.current_round()
        self._check_editable(round_no, table_no, correct)
        table = self.table_at(round_no, table_no)
        counts = _counts_by_name(table, named)
        return self.enter(table_no, counts, [table.seat_of(f) for f in faults], round_no,
                          correct, tiebreak=tiebreak)

    @_writes
    def enter_log(self, table_no: int, log_path: str | Path, round_no: int | None = None,
                  correct: bool = False) -> Table:
        """A finished ``karuta match keep`` goshiki log for a table: seat A, B (, C) in order."""
        from reader.match import log as matchlog
        from reader.match.rules import goshiki as g

        round_no = round_no or self.current_round()
        self._check_editable(round_no, table_no, correct)
        table = self.table_at(round_no, table_no)
        loaded = matchlog.load(log_path)
        st = loaded.match.state
        if not isinstance(st, g.GoshikiState):
            raise TournamentError(f"{log_path}: a {loaded.rules} log, not goshiki")
        if len(st.players) != len(table.seats):
            raise TournamentError(f"{log_path}: {len(st.players)} players, but table {table_no} "
                                  f"has {len(table.seats)} ({', '.join(table.names)})")
        color = self.round_info(round_no).color
        if st.color != color:
            raise TournamentError(f"{log_path}: a {st.color} match, but round {round_no} reads "
                                  f"{color}")
        if st.outcome() is None:
            raise TournamentError(f"{log_path}: the match is not over ({len(st.results)} of "
                                  f"{st.settings.reads} reads)")
        counts = [st.count(p) for p in st.players]
        faulted = {p for r in st.results for p in r.faults}
        faults = [table.seats[i] for i, p in enumerate(st.players) if p in faulted]
        # the cards the log read beyond its reads: the tie-break cards of this match
        tiebreak = max(0, len(st.results) - st.settings.reads)
        return self.enter(table_no, counts, faults, round_no, correct,
                          source=f"log:{Path(log_path).name}", tiebreak=tiebreak)

    @_writes
    def enter_csv(self, path: str | Path, round_no: int | None = None,
                  correct: bool = False) -> list[Table]:
        """Results typed from the sheets into a spreadsheet (``files.read_results``).  All
        tables or none: a bad row changes nothing."""
        round_no = round_no or self.current_round()
        p = Path(path)
        tables = {t.no: t for t in self.tables(round_no)}
        checked = []
        for sheet in files.read_results(p, tables, round_no):
            t = tables[sheet.table]
            try:
                self._check_editable(round_no, sheet.table, correct)
                counts = _counts_by_name(t, sheet.named)
                fs = [t.seat_of(f) for f in sheet.faults]
                checked.append((sheet.table,) + self.check_result(t, counts, fs,
                                                                  sheet.tiebreak))
            except TournamentError as e:
                raise TournamentError(f"{p}: {e}") from None
        self.db.executemany("INSERT INTO entries(round, table_no, counts, faults, source) "
                            "VALUES (?, ?, ?, ?, ?)",
                            [(round_no, tno, _text(c), _text(f), f"csv:{p.name}")
                             for tno, c, f in checked])
        return [self.table_at(round_no, tno) for tno, _, _ in checked]

    @_writes
    def undo(self, table_no: int | None = None, round_no: int | None = None) -> Undone:
        """Undo the newest live entry (of one table if given); the previous one, if it was a
        correction, is the table's result again."""
        q = "SELECT id, round, table_no, counts FROM entries WHERE undone = 0"
        args: list = []
        if table_no is not None:
            round_no = round_no or self.current_round()
            q += " AND round = ? AND table_no = ?"
            args = [round_no, table_no]
        elif round_no is not None:  # the newest entry of that round, not of any round
            q += " AND round = ?"
            args = [round_no]
        row = self.db.execute(q + " ORDER BY id DESC LIMIT 1", args).fetchone()
        if row is None:
            raise TournamentError("nothing to undo" + (f" for table {table_no}"
                                                        if table_no is not None else ""))
        eid, r, t, c = row
        self._check_editable(r, t, correct=True)
        self.db.execute("UPDATE entries SET undone = 1 WHERE id = ?", (eid,))
        return Undone(r, t, _ints(c), self.table_at(r, t))

    # ------------------------------------------------------------------ views
    def knockout(self) -> dict[str, list[Table]]:
        """Per block, the knock-out tables so far (semi-finals, final, third place)."""
        out: dict[str, list[Table]] = defaultdict(list)
        for r in range(self.settings.rounds + 1, self.current_round() + 1):
            for t in self.tables(r):
                out[t.block].append(t)
        return dict(out)

    def champions(self) -> dict[str, str]:
        out = {}
        for block, ts in self.knockout().items():
            for t in ts:
                if t.kind == "final" and t.outcome:
                    out[block] = t.names[t.outcome.index("win")]
        return out

    def status(self) -> Status:
        cur = self.current_round()
        active = self.players(include_withdrawn=False)
        info = self.round_info(cur) if cur else None
        return Status(
            file=str(self.path), title=self.settings.title, seed=self.settings.seed,
            rounds=self.settings.rounds, players=len(active),
            blocks=tuple((b, sum(p.block == b for p in active)) for b in self.blocks()),
            round=cur, stage=self.stage_of(cur) if cur else None,
            color=info.color if info else None,
            missing=tuple(self.missing_results(cur)) if cur else (),
            # every table of every round still without a result (an undo can leave one in an
            # earlier round: it must be entered before the next pairing)
            missing_all=tuple((r, t) for r in range(1, cur + 1)
                              for t in self.missing_results(r)),
            next_color=(self.settings.colors[cur] if cur < len(self.settings.colors)
                        else None),
            reads=self.settings.reads, color_policy=self.settings.color_policy,
            champions=tuple(self.champions().items()))

    def lots(self) -> list[Lot]:
        names = self.names()
        return [Lot(b, p, names[p], n, s) for b, p, n, s in
                self.db.execute("SELECT block, player, number, seed FROM lots "
                                "ORDER BY block, number")]


def _counts_by_name(table: Table, named: dict[str, int]) -> list[int]:
    got = {table.seat_of(name): n for name, n in named.items()}
    missing = [nm for p, nm in zip(table.seats, table.names) if p not in got]
    if missing:
        raise TournamentError(f"table {table.no}: no count for {', '.join(missing)}")
    return [got[p] for p in table.seats]


def _text(nums: Sequence[int]) -> str:
    """Counts and player ids as stored: comma-separated ("9,8"; "" for none)."""
    return ",".join(str(int(n)) for n in nums)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",")) if text else ()


def _span(nums: Sequence[int]) -> str:
    nums = sorted(nums)
    if len(nums) > 8:
        return ", ".join(map(str, nums[:8])) + f" and {len(nums) - 8} more"
    return ", ".join(map(str, nums))
