"""The tournament day in one SQLite file: players, rounds, tables, results, lots.

Every change is one transaction, committed before the call returns (WAL journal,
``synchronous=FULL``): a crash, a closed lid or a flat battery a moment later loses nothing,
and ``karuta tournament ... --resume`` goes on from the file.  Bad input raises
``TournamentError`` before anything is written, so a refused entry changes nothing.

Rounds::

    1 .. R        preliminary rounds (R = 6 by default), paired inside each block
    R + 1         semi-finals: per block 1 v 4 and 2 v 3 (after lots for ties, recorded)
    R + 2         final per block (and the third-place match, a setting)

A block with 2 or 3 players left goes straight to a final of its top two.

Results are entries on a stack (``entries``): a correction is a new entry for the same table,
``undo`` marks the newest entry undone, and a table's result is its newest live entry, so the
standings always follow from the raw entries (tests recount them).

Who calls what: ``reader.cli.tournament`` (thin) -> ``Tournament`` -> ``pairing``,
``scoring`` (pure) and ``pages`` (HTML), after every change ``Tournament.changed`` rewrites
the projector page.
"""
from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import poems
from reader.tournament import integrity, pairing, scoring
from reader.tournament.errors import TournamentError
from reader.tournament.players import PlayerRow, balance_blocks, clean_name
from reader.base.sqldb import immediate
from reader.base import seeds
from reader.base.statefiles import decode_json

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

RESULT_COLUMNS = {"table": ("table", "卓", "卓番号", "テーブル"),
                  "name": ("name", "名前", "氏名", "選手名"),
                  "cards": ("cards", "枚数", "取り札", "取り札数"),
                  "fault": ("fault", "お手つき")}
PAIRING_COLUMNS = {k: RESULT_COLUMNS[k] for k in ("table", "name")}

STAGE_NAMES = {"prelim": "preliminary", "semi": "semi-finals", "final": "final"}
KIND_NAMES = {"prelim": "preliminary", "semi": "semi-final", "final": "final",
              "third": "third place"}


#: colour policies: one colour all day (seed 004: from round 2 on, each table plays on the 20
#: cards the players before laid out, so the reader reads that colour), or a new colour each
#: round (a seeded order of the five), or the list given with --colors
COLOR_POLICIES = ("one", "each-round", "given")


def default_colors(seed: int, n: int, policy: str = "one") -> list[str]:
    """The colour of each of ``n`` rounds: one seeded colour throughout (``one``), or a
    different colour each round (``each-round``: a seeded order of the five, repeated, so two
    rounds in a row never share a colour)."""
    names = sorted(poems.COLORS)
    seeds.rng(seed, "colors").shuffle(names)
    if policy == "one":
        return [names[0]] * n
    return [names[i % len(names)] for i in range(n)]


def parse_color(name: str) -> str:
    ja = {v: k for k, v in poems.COLOR_JA.items()}
    key = ja.get(name.strip(), name.strip().lower())
    if key not in poems.COLORS:
        raise TournamentError(f"unknown colour {name!r}: one of {', '.join(poems.COLORS)} "
                              f"(or {' '.join(poems.COLOR_JA.values())})")
    return key


@dataclass(frozen=True)
class Settings:
    rounds: int = 6
    colors: tuple[str, ...] = ()
    mix_groups: bool = True
    third_place: bool = False
    seed: int = 0
    title: str = "五色百人一首大会"
    #: cards read in a match (seed 004: 17 of the colour's 20); a result's cards add up to
    #: at most this, plus the tie-break cards (up to the 20) in a knock-out match
    reads: int = scoring.DEFAULT_READS
    #: ``one`` colour all day (the default), ``each-round``, or ``given`` (``colors``)
    color_policy: str = "one"

    def validate(self) -> None:
        if not 1 <= self.rounds <= 20:
            raise TournamentError(f"--rounds {self.rounds}: between 1 and 20 preliminary rounds")
        if isinstance(self.reads, bool) or not 1 <= self.reads <= scoring.MAX_CARDS:
            raise TournamentError(f"--reads {self.reads}: between 1 and {scoring.MAX_CARDS} "
                                  "cards (a colour has 20)")
        if self.color_policy not in COLOR_POLICIES:
            raise TournamentError(f"colour policy {self.color_policy!r}: one of "
                                  f"{', '.join(COLOR_POLICIES)}")


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

    def to_json(self) -> dict:
        return {"round": self.round, "table": self.no, "block": self.block, "kind": self.kind,
                "players": list(self.names), "cards": None if self.counts is None
                else list(self.counts), "result": None if self.outcome is None
                else list(self.outcome),
                "faults": [self.names[self.seats.index(f)] for f in self.faults]}


def _writes(method):
    """A method that changes the file: all of it (its checks too) runs in one ``_tx``, an
    SQLite failure is one line, and ``on_change`` runs after the commit (once, however the
    methods call each other)."""
    import functools

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


class Tournament:
    """One tournament file.  ``Tournament.create(path, rows, settings)`` or
    ``Tournament.open(path)``; every method that changes something commits before it
    returns and then calls ``on_change`` (the CLI rewrites the projector page there)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict | None = None):
        self.path = path
        self.db = conn
        self.on_change = None
        if meta is None:
            m = dict(conn.execute("SELECT key, value FROM meta"))
            meta = {k: decode_json(v) for k, v in m.items()}
        self.meta = meta
        self.settings = Settings(rounds=self.meta["rounds"], colors=tuple(self.meta["colors"]),
                                 mix_groups=self.meta["mix_groups"],
                                 third_place=self.meta["third_place"], seed=self.meta["seed"],
                                 title=self.meta["title"],
                                 # files written before these settings: 17 read, and the
                                 # colours they recorded, round by round
                                 reads=self.meta.get("reads", scoring.DEFAULT_READS),
                                 color_policy=self.meta.get("color_policy", "given"))

    # ------------------------------------------------------------------ opening
    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=integrity.BUSY_TIMEOUT_S)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

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
        _check_blocks(rows)
        need = settings.rounds + 2
        colors = [parse_color(c) for c in settings.colors]
        policy = settings.color_policy
        if colors:
            colors = [colors[i % len(colors)] for i in range(need)]
            policy = "one" if len(set(colors)) == 1 else "given"
        else:
            colors = default_colors(settings.seed, need, policy)
        meta = {"format": FORMAT, "version": VERSION, "rounds": settings.rounds,
                "colors": colors, "mix_groups": settings.mix_groups,
                "third_place": settings.third_place, "seed": settings.seed,
                "title": settings.title, "reads": settings.reads, "color_policy": policy}
        tmp = path.with_name(path.name + ".new")
        tmp.unlink(missing_ok=True)
        try:
            conn = cls._connect(tmp)
        except sqlite3.Error as e:
            raise TournamentError(f"cannot create {path}: {e}") from None
        with conn:
            conn.execute("BEGIN")
            for stmt in SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany("INSERT INTO meta VALUES (?, ?)",
                             [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()])
            conn.executemany("INSERT INTO players(name, grp, block) VALUES (?, ?, ?)",
                             [(r.name, r.group, r.block) for r in rows])
        conn.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        tmp.rename(path)  # the file appears whole, or not at all
        return cls.open(path)

    @classmethod
    def open(cls, path: str | Path) -> "Tournament":
        path = Path(path)
        try:
            there = path.exists()
        except OSError as e:  # a name too long
            raise TournamentError(f"{path}: {e.strerror or e}") from None
        if not there:
            raise TournamentError(f"{path}: no tournament there (start one with "
                                  "`karuta tournament new --players FILE.csv`)")
        integrity.identify(path)  # before anything could change a byte of someone else's file
        try:
            conn = cls._connect(path)
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
    def players(self, include_withdrawn: bool = True) -> list[dict]:
        q = ("SELECT id, name, grp, block, joined_round, withdrawn_round FROM players "
             "ORDER BY block, id")
        out = [{"id": i, "name": n, "group": g, "block": b, "joined_round": j,
                "withdrawn_round": w} for i, n, g, b, j, w in self.db.execute(q)]
        return [p for p in out if include_withdrawn or p["withdrawn_round"] is None]

    def blocks(self) -> list[str]:
        return [b for (b,) in self.db.execute("SELECT DISTINCT block FROM players ORDER BY block")]

    def player_id(self, name: str) -> int:
        nm = clean_name(name)
        row = self.db.execute("SELECT id FROM players WHERE name = ?", (nm,)).fetchone()
        if row is None:
            raise TournamentError(f"no player called {nm}")
        return row[0]

    def names(self) -> dict[int, str]:
        return dict(self.db.execute("SELECT id, name FROM players"))

    @_writes
    def add_player(self, name: str, group: str = "", block: str | None = None) -> dict:
        nm, grp = clean_name(name), clean_name(group)
        if not nm:
            raise TournamentError("a player needs a name")
        if self.db.execute("SELECT 1 FROM players WHERE name = ?", (nm,)).fetchone():
            raise TournamentError(f"{nm} is already a player (names must differ)")
        if self.stage_of(self.current_round() + 1) != "prelim":
            raise TournamentError("the preliminary rounds are over: nobody can join now")
        if not block:
            sizes = defaultdict(int, {b: 0 for b in self.blocks()})
            for p in self.players(include_withdrawn=False):
                sizes[p["block"]] += 1
            block = min(sizes, key=lambda b: (sizes[b], b)) if sizes else "A"
        block = clean_name(block)
        if block not in self.blocks():
            raise TournamentError(f"no block {block} (blocks: {', '.join(self.blocks())})")
        joined = self.current_round() + 1
        self.db.execute("INSERT INTO players(name, grp, block, joined_round) "
                        "VALUES (?, ?, ?, ?)", (nm, grp, block, joined))
        return {"name": nm, "group": grp, "block": block, "plays_from_round": joined}

    @_writes
    def withdraw(self, name: str) -> dict:
        pid = self.player_id(name)
        row = self.db.execute("SELECT withdrawn_round FROM players WHERE id = ?", (pid,)).fetchone()
        if row[0] is not None:
            raise TournamentError(f"{clean_name(name)} has already withdrawn "
                                  f"(before round {row[0]})")
        from_round = self.current_round() + 1
        self.db.execute("UPDATE players SET withdrawn_round = ? WHERE id = ?",
                        (from_round, pid))
        return {"name": clean_name(name), "not_paired_from_round": from_round}

    def _active(self, round_no: int, block: str | None = None) -> list[dict]:
        return [p for p in self.players() if p["joined_round"] <= round_no
                and (p["withdrawn_round"] is None or p["withdrawn_round"] > round_no)
                and (block is None or p["block"] == block)]

    # ------------------------------------------------------------------ rounds
    def current_round(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(no), 0) FROM rounds").fetchone()[0]

    def stage_of(self, round_no: int) -> str | None:
        r = self.settings.rounds
        if 1 <= round_no <= r:
            return "prelim"
        return {r + 1: "semi", r + 2: "final"}.get(round_no)

    def round_info(self, round_no: int) -> dict | None:
        row = self.db.execute("SELECT stage, color, reading_seed FROM rounds WHERE no = ?",
                              (round_no,)).fetchone()
        if row is None:
            return None
        return {"round": round_no, "stage": row[0], "color": row[1], "reading_seed": row[2]}

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
    def pair(self, color: str | None = None, tables_csv: str | Path | None = None) -> dict:
        """Pair the next round (preliminary, semi-finals or final); returns its description.
        ``color``: this round's colour instead of the one set at the start; ``tables_csv``:
        a preliminary round's tables given by hand (columns table, name; see
        ``_manual_tables``)."""
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
        if tables_csv is not None:
            if stage != "prelim":
                raise TournamentError(f"round {nxt} is the {STAGE_NAMES.get(stage, stage)}: its "
                                      "tables follow from the standings, not from a file")
            tables, lots = self._manual_tables(tables_csv, nxt), []
        elif stage == "prelim":
            tables, lots = self._pair_prelim(nxt), []
        elif stage == "semi":
            tables, lots = self._pair_semis(nxt)
        else:
            tables, lots = self._pair_final(nxt), []
        if not tables and stage == "final":
            raise TournamentError("the tournament is over: every block's final is played "
                                  "(`karuta tournament export` writes all results)")
        if not tables:
            raise TournamentError(f"nobody to pair for round {nxt}")
        if color is None:
            color = self.settings.colors[nxt - 1] if nxt - 1 < len(self.settings.colors) \
                else default_colors(self.settings.seed, nxt, self.settings.color_policy)[-1]
        reading_seed = seeds.rng(self.settings.seed, "reading", nxt).randrange(1_000_000)
        self.db.execute("INSERT INTO rounds VALUES (?, ?, ?, ?)",
                        (nxt, stage, color, reading_seed))
        for no, (block, kind, seats) in enumerate(tables, 1):
            self.db.execute("INSERT INTO tables VALUES (?, ?, ?, ?)", (nxt, no, block, kind))
            self.db.executemany("INSERT INTO seats VALUES (?, ?, ?, ?)",
                                [(nxt, no, i, p) for i, p in enumerate(seats)])
        self.db.executemany("INSERT INTO lots VALUES (?, ?, ?, ?)", lots)
        return self.round_json(nxt)

    @_writes
    def unpair(self) -> dict:
        """Take back the newest round's pairing while no result is entered for it."""
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
        return {"round": cur, "unpaired": True}

    def _history(self, upto: int):
        """Preliminary history before round ``upto``: met counts, trio counts."""
        met: dict[frozenset, int] = defaultdict(int)
        trios: dict[int, int] = defaultdict(int)
        seats: dict[tuple[int, int], list[int]] = defaultdict(list)
        for r, t, p in self.db.execute("SELECT round, table_no, player FROM seats WHERE round < ? "
                                       "ORDER BY round, table_no, seat", (upto,)):
            if self.stage_of(r) == "prelim":
                seats[r, t].append(p)
        for ps in seats.values():
            for i in range(len(ps)):
                for j in range(i + 1, len(ps)):
                    met[frozenset((ps[i], ps[j]))] += 1
            if len(ps) == 3:
                for p in ps:
                    trios[p] += 1
        return met, trios

    def prelim_results(self) -> list[scoring.TableResult]:
        seats: dict[tuple[int, int], list[int]] = defaultdict(list)
        blocks = {}
        for r, t, p in self.db.execute("SELECT round, table_no, player FROM seats "
                                       "WHERE round <= ? ORDER BY round, table_no, seat",
                                       (self.settings.rounds,)):
            seats[r, t].append(p)
        for r, t, b in self.db.execute("SELECT round, no, block FROM tables WHERE round <= ?",
                                       (self.settings.rounds,)):
            blocks[r, t] = b
        out = []
        for (r, t), (counts, faults) in self._live_entries().items():
            if (r, t) in seats:
                out.append(scoring.TableResult(r, t, blocks[r, t], tuple(seats[r, t]), counts,
                                               faults))
        return out

    def _pair_prelim(self, nxt: int) -> list[tuple[str, str, tuple[int, ...]]]:
        met, trios = self._history(nxt)
        wins: dict[int, int] = defaultdict(int)
        for res in self.prelim_results():
            for pid, kind in scoring.table_outcome(res.seats, res.counts).items():
                wins[pid] += kind == "win"
        before = self.tables(nxt - 1) if self.stage_of(nxt - 1) == "prelim" else []
        out = []
        for block in self.blocks():
            active = self._active(nxt, block)
            if not active:
                continue
            if len(active) == 1:
                raise TournamentError(f"block {block} has one player left "
                                      f"({active[0]['name']}): add a player to block {block} "
                                      "(`karuta tournament add NAME --block "
                                      f"{block}`) or withdraw them")
            ents = [pairing.Entrant(p["id"], wins[p["id"]], p["group"], trios[p["id"]])
                    for p in active]
            rng = seeds.rng(self.settings.seed, "pair", nxt, block)
            last = [tb.seats for tb in before if tb.block == block]
            for t in pairing.pair_block(ents, met, rng, self.settings.mix_groups, last,
                                        self.settings.rounds):
                out.append((block, "prelim", t))
        return out

    def _manual_tables(self, path: str | Path, nxt: int) -> list[tuple[str, str, tuple[int, ...]]]:
        """A round's tables from a CSV (one row per player: table, name; seats in row order).
        Every player due to play must be at exactly one table of 2 or 3 players of one block;
        the first bad row or table is one line, and nothing is written."""
        from reader.tournament.players import read_text, sheet_rows

        p = Path(path)
        rows = sheet_rows(read_text(p), str(p), PAIRING_COLUMNS, ("table", "name"))
        players = {p_["name"]: p_ for p_ in self.players()}
        active = {p_["id"] for p_ in self._active(nxt)}
        seats: dict[int, list[int]] = {}
        seen: dict[str, tuple[int, int]] = {}
        for i, cell in rows:
            where = f"{p} row {i}"
            tno = _table_no(cell["table"], where)
            nm = clean_name(cell["name"])
            if nm not in players:
                raise TournamentError(f"{where}: no player called {nm}")
            if nm in seen:
                t0, r0 = seen[nm]
                raise TournamentError(f"{where}: {nm} is in two tables ({t0} on row {r0} and "
                                      f"{tno})" if t0 != tno else f"{where}: {nm} is twice in "
                                      f"table {tno}")
            seen[nm] = (tno, i)
            if players[nm]["id"] not in active:
                raise TournamentError(f"{where}: {nm} does not play in round {nxt} (withdrawn)")
            seats.setdefault(tno, []).append(players[nm]["id"])
        names = self.names()
        left = [names[x] for x in sorted(active - {players[n]["id"] for n in seen})]
        if left:
            raise TournamentError(f"{p}: no table for {', '.join(left[:5])}"
                                  + (f" and {len(left) - 5} more" if len(left) > 5 else ""))
        gap = [n for n in range(1, len(seats) + 1) if n not in seats]
        if gap:
            raise TournamentError(f"{p}: tables are numbered 1-{len(seats)}: no table {gap[0]} "
                                  f"but a table {max(seats)}")
        by_id = {p_["id"]: p_ for p_ in players.values()}
        out = []
        for tno in sorted(seats):
            ids = seats[tno]
            if not 2 <= len(ids) <= 3:
                raise TournamentError(f"{p}: table {tno} has {len(ids)} player"
                                      f"{'s' if len(ids) != 1 else ''} (2 or 3 play at a table)")
            blocks = sorted({by_id[x]["block"] for x in ids})
            if len(blocks) > 1:
                raise TournamentError(f"{p}: table {tno} mixes blocks {' and '.join(blocks)}")
            out.append((blocks[0], "prelim", tuple(ids)))
        return out

    def standings(self, block: str | None = None) -> dict[str, list[scoring.Row]]:
        """Per block, the preliminary standings (recomputed from the live entries)."""
        by_block: dict[str, list[scoring.TableResult]] = defaultdict(list)
        for r in self.prelim_results():
            by_block[r.block].append(r)
        lots = defaultdict(dict)
        for b, p, n in self.db.execute("SELECT block, player, number FROM lots"):
            lots[b][p] = n
        out = {}
        players = self.players()
        for b in sorted({p["block"] for p in players}):
            if block is not None and b != block:
                continue
            ps = [(p["id"], p["name"], p["group"], p["withdrawn_round"] is not None)
                  for p in players if p["block"] == b]
            out[b] = scoring.standings(ps, by_block[b], lots[b])
        return out

    def prelims_done(self) -> bool:
        r = self.settings.rounds
        return self.current_round() >= r and not self.missing_results(r)

    def _pair_semis(self, nxt: int):
        tables, lots = [], []
        for block, rows in self.standings().items():
            rows = [r for r in rows if not r.withdrawn]
            for group in scoring.tie_groups_needing_lots(rows):
                seed = f"{self.settings.seed}/lot/{block}/" + ",".join(
                    str(r.id) for r in sorted(group, key=lambda r: r.id))
                drawn = scoring.draw_lots(seed, [r.id for r in group])
                lots += [(block, pid, n, seed) for pid, n in drawn.items()]
                for r in group:
                    r.lot = drawn[r.id]
            rows.sort(key=lambda r: (-r.wins, -r.cards, r.lot or 0))
            top = [r.id for r in rows[:4]]
            if len(top) == 4:
                for a, b in scoring.semi_pairs(top):
                    tables.append((block, "semi", (a, b)))
            elif len(top) >= 2:
                tables.append((block, "final", (top[0], top[1])))
        return tables, lots

    def _pair_final(self, nxt: int):
        out = []
        semis: dict[str, list[Table]] = defaultdict(list)
        for t in self.tables(nxt - 1):
            if t.kind == "semi":
                semis[t.block].append(t)
        for block, ts in semis.items():
            winners = [t.seats[t.outcome.index("win")] for t in ts]
            losers = [t.seats[t.outcome.index("loss")] for t in ts]
            out.append((block, "final", tuple(winners)))
            if self.settings.third_place:
                out.append((block, "third", tuple(losers)))
        return out

    def round_json(self, round_no: int) -> dict:
        info = self.round_info(round_no)
        if info is None:
            raise TournamentError(f"there is no round {round_no} (rounds 1-{self.current_round()}"
                                  " are paired)" if self.current_round() else "no round is "
                                  "paired yet: `karuta tournament pair`")
        info["stage_name"] = STAGE_NAMES[info["stage"]]
        info["tables"] = [t.to_json() for t in self.tables(round_no)]
        return info

    # ------------------------------------------------------------------ results
    def table_at(self, round_no: int, table_no: int) -> Table:
        for t in self.tables(round_no):
            if t.no == table_no:
                return t
        n = self.db.execute("SELECT COUNT(*) FROM tables WHERE round = ?", (round_no,)).fetchone()[0]
        raise TournamentError(f"table {table_no}: round {round_no} has no such table "
                              f"(tables 1-{n})" if n else f"round {round_no} is not paired")

    def max_cards(self, table: Table) -> int:
        """The most cards a table's players can have taken together: the cards read, and in a
        knock-out match the tie-break cards too (one at a time, up to the colour's 20)."""
        return scoring.MAX_CARDS if table.knockout else self.settings.reads

    def check_result(self, table: Table, counts: Sequence[int],
                     faults: Iterable[int] = ()) -> tuple[tuple[int, ...], tuple[int, ...]]:
        where = f"table {table.no}"
        if len(counts) != len(table.seats):
            raise TournamentError(f"{where} has {len(table.seats)} players "
                                  f"({', '.join(table.names)}): give {len(table.seats)} counts, "
                                  f"not {len(counts)}")
        most = self.max_cards(table)
        read = (f"{self.settings.reads} are read" if most == self.settings.reads else
                f"{self.settings.reads} are read and at most {most - self.settings.reads} "
                "tie-break cards")
        for n, name in zip(counts, table.names):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise TournamentError(f"{where}: {n!r} cards for {name} is not a count")
            if n > most:
                raise TournamentError(f"{where}: {n} cards for {name}, but only {read}")
        if sum(counts) > most:
            raise TournamentError(f"{where}: {' + '.join(map(str, counts))} = {sum(counts)} "
                                  f"cards, but only {read}")
        faults = tuple(faults)
        for f in faults:
            if f not in table.seats:
                name = self.names().get(f, f)
                raise TournamentError(f"{where}: {name} did not play at this table "
                                      f"({', '.join(table.names)})")
        try:
            scoring.table_outcome(table.seats, counts, table.knockout)
        except ValueError as e:
            raise TournamentError(f"{where} ({KIND_NAMES[table.kind]}): {e}") from None
        return tuple(counts), tuple(dict.fromkeys(faults))

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
              round_no: int | None = None, correct: bool = False, source: str = "sheet") -> dict:
        """Enter one table's result (cards per seat, in seat order); returns the table."""
        round_no = round_no or self.current_round()
        self._check_editable(round_no, table_no, correct)
        table = self.table_at(round_no, table_no)
        counts, faults = self.check_result(table, counts, faults)
        self.db.execute("INSERT INTO entries(round, table_no, counts, faults, source) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (round_no, table_no, _text(counts), _text(faults), source))
        return self.table_at(round_no, table_no).to_json()

    @_writes
    def enter_named(self, table_no: int, named: dict[str, int], faults: Sequence[str] = (),
                    round_no: int | None = None, correct: bool = False) -> dict:
        """The same with names: ``{"山田": 9, "佐藤": 8}`` (any order)."""
        round_no = round_no or self.current_round()
        self._check_editable(round_no, table_no, correct)
        table = self.table_at(round_no, table_no)
        counts = self._counts_by_name(table, named)
        return self.enter(table_no, counts, [self.seat_of(table, f) for f in faults], round_no,
                          correct)

    def seat_of(self, table: Table, name: str) -> int:
        nm = clean_name(name)
        if nm not in table.names:  # 山田太郎 for 山田 太郎 (a desk line splits at spaces)
            same = [n for n in table.names if n.replace(" ", "") == nm.replace(" ", "")]
            nm = same[0] if len(same) == 1 else nm
        if nm not in table.names:
            raise TournamentError(f"table {table.no}: {nm} did not play at this table "
                                  f"({', '.join(table.names)})")
        return table.seats[table.names.index(nm)]

    def _counts_by_name(self, table: Table, named: dict[str, int]) -> list[int]:
        got = {}
        for name, n in named.items():
            pid = self.seat_of(table, name)
            got[pid] = n
        missing = [nm for p, nm in zip(table.seats, table.names) if p not in got]
        if missing:
            raise TournamentError(f"table {table.no}: no count for {', '.join(missing)}")
        return [got[p] for p in table.seats]

    @_writes
    def enter_log(self, table_no: int, log_path: str | Path, round_no: int | None = None,
                  correct: bool = False) -> dict:
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
        color = self.round_info(round_no)["color"]
        if st.color != color:
            raise TournamentError(f"{log_path}: a {st.color} match, but round {round_no} reads "
                                  f"{color}")
        if st.outcome() is None:
            raise TournamentError(f"{log_path}: the match is not over ({len(st.results)} of "
                                  f"{st.settings.reads} reads)")
        counts = [st.count(p) for p in st.players]
        faulted = {p for r in st.results for p in r.faults}
        faults = [table.seats[i] for i, p in enumerate(st.players) if p in faulted]
        return self.enter(table_no, counts, faults, round_no, correct,
                          source=f"log:{Path(log_path).name}")

    @_writes
    def enter_csv(self, path: str | Path, round_no: int | None = None,
                  correct: bool = False) -> list[dict]:
        """Results typed from the sheets into a spreadsheet: columns table, name, cards
        (optional fault = 1/yes/○).  All tables or none: a bad row changes nothing."""
        from reader.tournament.players import read_text, sheet_rows

        round_no = round_no or self.current_round()
        p = Path(path)
        rows = sheet_rows(read_text(p), str(p), RESULT_COLUMNS, ("table", "name", "cards"))
        tables = {t.no: t for t in self.tables(round_no)}
        by_table: dict[int, dict[str, int]] = {}
        faults: dict[int, list[str]] = defaultdict(list)
        seen: dict[str, tuple[int, int]] = {}
        for i, cell in rows:
            tno = _table_no(cell["table"], f"{p} row {i}")
            if tno not in tables:
                raise TournamentError(f"{p} row {i}: round {round_no} has no table {tno} "
                                      f"(tables 1-{len(tables)})")
            nm = clean_name(cell["name"])
            if nm in seen:
                raise TournamentError(f"{p} row {i}: {nm} is in two tables ({seen[nm][0]} on row "
                                      f"{seen[nm][1]} and {tno})" if seen[nm][0] != tno else
                                      f"{p} row {i}: {nm} is twice in table {tno}")
            seen[nm] = (tno, i)
            if nm not in tables[tno].names:
                raise TournamentError(f"{p} row {i}: {nm} did not play at table {tno} "
                                      f"({', '.join(tables[tno].names)})")
            try:
                n = int(clean_name(cell["cards"]))
            except ValueError:
                raise TournamentError(f"{p} row {i}: {cell['cards']!r} cards is not a "
                                      "number") from None
            by_table.setdefault(tno, {})[nm] = n
            if cell["fault"].casefold() in ("1", "yes", "y", "true", "○", "〇", "x", "有", "あり"):
                faults[tno].append(nm)
        checked = []
        for tno, named in by_table.items():
            t = tables[tno]
            try:
                self._check_editable(round_no, tno, correct)
                counts = self._counts_by_name(t, named)
                fs = [self.seat_of(t, f) for f in faults[tno]]
                checked.append((tno,) + self.check_result(t, counts, fs))
            except TournamentError as e:
                raise TournamentError(f"{p}: {e}") from None
        self.db.executemany("INSERT INTO entries(round, table_no, counts, faults, source) "
                            "VALUES (?, ?, ?, ?, ?)",
                            [(round_no, tno, _text(c), _text(f), f"csv:{p.name}")
                             for tno, c, f in checked])
        return [self.table_at(round_no, tno).to_json() for tno, _, _ in checked]

    @_writes
    def undo(self, table_no: int | None = None, round_no: int | None = None) -> dict:
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
        after = self.table_at(r, t).to_json()
        return {"undone": {"round": r, "table": t, "cards": list(_ints(c))}, "table": after}

    # ------------------------------------------------------------------ views
    def knockout(self) -> dict[str, list[dict]]:
        """Per block, the knock-out tables so far (semi-finals, final, third place)."""
        out: dict[str, list[dict]] = defaultdict(list)
        for r in range(self.settings.rounds + 1, self.current_round() + 1):
            for t in self.tables(r):
                out[t.block].append(t.to_json())
        return dict(out)

    def champions(self) -> dict[str, str]:
        out = {}
        for block, ts in self.knockout().items():
            for t in ts:
                if t["kind"] == "final" and t["result"]:
                    out[block] = t["players"][t["result"].index("win")]
        return out

    def status(self) -> dict:
        cur = self.current_round()
        active = self.players(include_withdrawn=False)
        out = {"file": str(self.path), "title": self.settings.title, "seed": self.settings.seed,
               "rounds": self.settings.rounds, "players": len(active),
               "blocks": {b: sum(p["block"] == b for p in active) for b in self.blocks()},
               "round": cur, "stage": self.stage_of(cur) if cur else None,
               "color": self.round_info(cur)["color"] if cur else None,
               "missing": self.missing_results(cur) if cur else [],
               # every table of every round still without a result (an undo can leave one
               # in an earlier round: it must be entered before the next pairing)
               "missing_all": [{"round": r, "table": t} for r in range(1, cur + 1)
                               for t in self.missing_results(r)],
               "next_color": (self.settings.colors[cur] if cur < len(self.settings.colors)
                              else None),
               "reads": self.settings.reads, "color_policy": self.settings.color_policy,
               "champions": self.champions()}
        return out

    def lots(self) -> list[dict]:
        names = self.names()
        return [{"block": b, "name": names[p], "number": n, "seed": s} for b, p, n, s in
                self.db.execute("SELECT block, player, number, seed FROM lots "
                                "ORDER BY block, number")]

    def export(self) -> dict:
        rounds = [self.round_json(r) for r in range(1, self.current_round() + 1)]
        return {"title": self.settings.title, "seed": self.settings.seed,
                "settings": {"rounds": self.settings.rounds, "colors": list(self.settings.colors),
                             "color_policy": self.settings.color_policy,
                             "reads": self.settings.reads,
                             "mix_groups": self.settings.mix_groups,
                             "third_place": self.settings.third_place},
                "players": [{k: p[k] for k in ("name", "group", "block", "joined_round",
                                               "withdrawn_round")} for p in self.players()],
                "rounds": rounds,
                "standings": {b: [r.to_json() for r in rows]
                              for b, rows in self.standings().items()},
                "lots": self.lots(), "champions": self.champions()}

    def export_csv(self) -> str:
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["round", "stage", "color", "table", "block", "kind", "seat", "name",
                    "group", "cards", "result", "faulted"])
        groups = {p["id"]: p["group"] for p in self.players()}
        for r in range(1, self.current_round() + 1):
            info = self.round_info(r)
            for t in self.tables(r):
                for i, (pid, nm) in enumerate(zip(t.seats, t.names)):
                    w.writerow([r, info["stage"], info["color"], t.no, t.block, t.kind,
                                scoring.SEATS[i], nm, groups[pid],
                                "" if t.counts is None else t.counts[i],
                                "" if t.outcome is None else t.outcome[i],
                                int(pid in t.faults)])
        return buf.getvalue()


def _check_blocks(rows: Sequence[PlayerRow]) -> None:
    """Every block needs two players to pair (refused at ``new``, not at the first ``pair``)."""
    if len(rows) < 2:
        raise TournamentError(f"{len(rows)} player{'' if len(rows) == 1 else 's'}: a tournament "
                              "needs at least two")
    sizes: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        sizes[r.block].append(r.name)
    small = sorted(b for b, names in sizes.items() if len(names) < 2)
    if small:
        b = small[0]
        raise TournamentError(f"block {b} would have one player ({sizes[b][0]}): a block needs "
                              "at least two (fewer --blocks, or move players in the CSV's "
                              "block column)")


def _table_no(cell: str, where: str) -> int:
    try:
        n = int(clean_name(cell))
    except ValueError:
        raise TournamentError(f"{where}: table {cell!r} is not a number") from None
    if n < 1:
        raise TournamentError(f"{where}: table {n} (tables are numbered from 1)")
    return n


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
