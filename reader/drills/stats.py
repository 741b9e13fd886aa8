"""Practice statistics: one SQLite file in the per-user data folder.

Who calls what:
  - the speed drill (grab timer): ``start_session("speed", now)`` once, then ``record_tap(...)``
    for every tap, as it happens;
  - the memory drill: ``start_session("memory", now)``, ``memory_cards()`` to load the FSRS
    cards, then ``record_review(...)`` for every answer;
  - ``karuta stats``: ``per_poem()``, ``export_csv()``; ``--plot`` also ``per_session()``
    (progress over time).

Rules kept here:
  - **Each answer is committed as it happens** (one transaction per tap or review, WAL journal,
    ``synchronous=FULL``), so a drill that is killed keeps every answer given so far.
  - **Time is passed in.**  Every ``ts`` is an aware ``datetime`` from the caller's clock, stored
    as ISO 8601 UTC text; nothing here reads a clock (session ids are random, not time-based).
  - **Never print.**  A corrupt file is moved aside to ``stats.sqlite3.corrupt-<n>`` (with its
    ``-wal``/``-shm`` companions), a new database is started, and ``StatsDB.notice`` holds one
    line for the caller to show.
  - Schema version in ``PRAGMA user_version``; a file from a newer karuta is refused
    (``KarutaError``) rather than moved aside, since it is not corrupt.

Location: ``$KARUTA_DATA_DIR/stats.sqlite3`` if that variable is set (tests set it), else
``platformdirs.user_data_dir("karuta")/stats.sqlite3``.
"""
from __future__ import annotations

import csv
import json
import os
import sqlite3
import statistics
import uuid
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from reader.base.errors import KarutaError
from reader.base.dirs import data_dir as default_data_dir

__all__ = [
    "StatsDB", "PoemStats", "SessionStats", "PlayerStats", "Tap", "Review", "SCHEMA_VERSION",
    "DB_NAME",
    "default_data_dir", "default_db_path",
]

SCHEMA_VERSION = 1
DB_NAME = "stats.sqlite3"

_SCHEMA_V1 = """
CREATE TABLE sessions (
    id       TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,              -- 'memory', 'speed', ...
    started  TEXT NOT NULL,              -- ISO 8601 UTC
    settings TEXT                        -- JSON, free form
);
-- One row per tap of the speed drill / grab timer.
CREATE TABLE taps (
    id           INTEGER PRIMARY KEY,
    session      TEXT NOT NULL,
    poem         INTEGER NOT NULL CHECK (poem BETWEEN 1 AND 100),
    ts           TEXT NOT NULL,          -- ISO 8601 UTC, when the tap happened
    kimariji     TEXT NOT NULL,          -- the poem's kimariji at that moment (card form)
    reaction_ms  REAL,                   -- from the end of the kimariji sound to the tap (< 0: early)
    from_kami_ms REAL,                   -- from the start of the 上の句 to the tap
    correct      INTEGER NOT NULL,       -- 1: the read card was taken
    anticipation INTEGER NOT NULL DEFAULT 0,  -- 1: tapped before the kimariji was heard
    fault        INTEGER NOT NULL DEFAULT 0   -- 1: a wrong card (お手つき)
);
CREATE INDEX taps_poem ON taps (poem);
-- One row per memory-drill answer.
CREATE TABLE reviews (
    id          INTEGER PRIMARY KEY,
    session     TEXT NOT NULL,
    poem        INTEGER NOT NULL CHECK (poem BETWEEN 1 AND 100),
    ts          TEXT NOT NULL,
    mode        TEXT NOT NULL,           -- 'kami', 'kimariji', 'reverse'
    correct     INTEGER NOT NULL,
    response_ms REAL,
    rating      INTEGER NOT NULL,        -- FSRS rating 1..4 (Again, Hard, Good, Easy)
    chosen      INTEGER                  -- the poem the player picked (NULL: no answer)
);
CREATE INDEX reviews_poem ON reviews (poem);
-- The FSRS card of each poem that has been introduced (latest state only).
CREATE TABLE memory (
    poem      INTEGER PRIMARY KEY CHECK (poem BETWEEN 1 AND 100),
    state     TEXT NOT NULL,             -- 'learning', 'review', 'relearning'
    due       TEXT NOT NULL,             -- ISO 8601 UTC
    stability REAL,                      -- days
    card      TEXT NOT NULL,             -- fsrs Card.to_json()
    updated   TEXT NOT NULL
);
"""





def default_db_path() -> Path:
    return default_data_dir() / DB_NAME


def _iso(ts: datetime) -> str:
    if not isinstance(ts, datetime) or ts.tzinfo is None or ts.utcoffset() is None:
        raise ValueError(f"timestamps must be timezone-aware datetimes, got {ts!r}")
    return ts.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _parse(ts: str | None) -> datetime | None:
    try:
        return None if ts is None else datetime.fromisoformat(ts)
    except (TypeError, ValueError):  # a value damaged on disk: unknown, not a traceback
        return None


@dataclass(frozen=True)
class Tap:
    id: int
    session: str
    poem: int
    ts: datetime
    kimariji: str
    reaction_ms: float | None
    from_kami_ms: float | None
    correct: bool
    anticipation: bool
    fault: bool


@dataclass(frozen=True)
class Review:
    id: int
    session: str
    poem: int
    ts: datetime
    mode: str
    correct: bool
    response_ms: float | None
    rating: int
    chosen: int | None


@dataclass(frozen=True)
class PoemStats:
    """One poem's summary, as ``karuta stats`` shows it.

    Reaction figures use correct taps that were not anticipations (an anticipation is a guess,
    not a reaction).  ``memory_state`` is ``'new'`` for a poem the memory drill has not
    introduced yet; ``due`` and ``stability`` (days) are then ``None``.
    """

    poem: int
    kimariji: str
    color: str
    taps: int
    correct: int
    median_reaction_ms: float | None
    best_reaction_ms: float | None
    anticipations: int
    faults: int
    reviews: int
    reviews_correct: int
    memory_state: str
    due: str | None
    stability: float | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SessionStats:
    """One session's figures, for progress over time (``karuta stats --plot``).

    ``median_reaction_ms`` over its right taps that were not anticipations (timed ones);
    ``tap_accuracy``: right taps / taps; ``review_accuracy``: right answers / reviews (None
    where the session had none)."""

    session: str
    kind: str
    started: datetime
    taps: int
    median_reaction_ms: float | None
    tap_accuracy: float | None
    reviews: int
    review_accuracy: float | None


@dataclass(frozen=True)
class PlayerStats:
    """One player's figures over the matches played on a phone's or tablet's page (each
    seat's takes are filed under its player's name: ``reader.practice.record.record_web``).

    ``median_reaction_ms`` over the right taps that were timed and not anticipations;
    ``uncalibrated``: right taps left out of it because their device was not calibrated."""

    name: str
    taps: int
    takes: int
    faults: int
    median_reaction_ms: float | None
    timed: int
    uncalibrated: int

    def to_dict(self) -> dict:
        return asdict(self)


def _sql_errors(method):
    """A public ``StatsDB`` method: an SQLite failure (locked past the busy timeout, a disk
    error, a page damaged since it was opened) is one ``KarutaError`` naming the file."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *a, **kw):
        try:
            return method(self, *a, **kw)
        except sqlite3.Error as e:
            raise KarutaError(_sql_message(self.path, e)) from None

    return wrapper


def _sql_message(path: Path, e: sqlite3.Error) -> str:
    if "locked" in str(e) or "busy" in str(e):
        return (f"the stats database {path} is in use by another program (still locked after "
                f"{BUSY_TIMEOUT_S:g} s): close it (another karuta drill?) and try again")
    folder = path.parent
    if "unable to open" in str(e) and folder.is_dir() and not os.access(folder, os.W_OK):
        return (f"cannot use the stats database {path}: its folder {folder} is read-only "
                "(SQLite keeps its journal beside the file): make it writable, or set "
                "KARUTA_DATA_DIR to a folder you can write in")
    from reader.base.sqldb import disk_full

    if disk_full(path, e):
        return (f"cannot use the stats database {path}: the disk is full (SQLite needs room "
                "beside the file, even to read it): free some space; what was saved is kept")
    return f"cannot use the stats database {path}: {e}"


#: how long a locked stats database is waited for
BUSY_TIMEOUT_S = 5.0


class StatsDB:
    """The stats database.  Open with ``StatsDB(path)`` or ``StatsDB()`` for the default path.

    After opening, ``notice`` is ``None`` or one line to show the user (the old file was corrupt
    and has been moved aside).  Use as a context manager or call ``close()``.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, reading: bool = False):
        self.path = Path(path) if path is not None else default_db_path()
        self.notice: str | None = None
        from reader.base.sqldb import writable_here

        if reading and not writable_here(self.path):
            # only to be read (``karuta stats``), in a read-only folder or disk: shown as it is
            self._conn = self._open_snapshot()
            return
        from reader.base.dirs import make_folder

        make_folder(self.path.parent, "the data folder")
        try:
            self._conn = self._open()
        except _Corrupt as e:
            moved = self._move_aside()
            self._conn = self._open()
            from reader.drills.stats_salvage import salvage

            got = salvage(moved, self._conn)
            self.notice = (
                f"the stats database {self.path} was damaged ({e}); it was kept as {moved.name} "
                + (f"and a new one started with what could be read: {got}" if got else
                   "and a new one started (nothing in it could be read)")
            )

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.OperationalError as e:
            why = str(e)
            if self.path.is_dir():
                why = "it is a folder, not a database (move it away)"
            elif os.path.islink(self.path) and not self.path.exists():
                why = (f"it is a link to {os.readlink(self.path)}, which does not exist "
                       "(mount it or fix the link)")
            raise KarutaError(f"cannot open the stats database {self.path}: {why}") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                conn.close()
                raise KarutaError(
                    f"the stats database {self.path} is from a newer karuta "
                    f"(schema {version}, this one knows {SCHEMA_VERSION})"
                )
            # quick_check reads every page: finds truncation and garbage, not just a bad header
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise _Corrupt(check.splitlines()[0])
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise KarutaError(f"the stats database {self.path} cannot use WAL (journal mode {mode})")
            # FULL: a committed answer survives even a power cut, and answers come at human pace
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            if version == 0:
                self._create(conn)
            else:
                from reader.base.statefiles import STATS_ROWS

                have = {n for (n,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                lost = [t for t in STATS_ROWS if t not in have]
                if lost:  # a damaged schema: kept and salvaged like any damaged file
                    raise _Corrupt(f"its table {lost[0]} is missing")
            return conn
        except sqlite3.DatabaseError as e:
            conn.close()
            # only "corrupt" and "not a database" mean a bad file; "locked", "read-only",
            # "disk full" are conditions to report, not reasons to move the user's data away
            if getattr(e, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
                raise _Corrupt(str(e)) from None
            raise KarutaError(_sql_message(self.path, e)) from None
        except BaseException:
            conn.close()
            raise

    def _open_snapshot(self) -> sqlite3.Connection:
        """The database as it is on a read-only folder or disk, never changed: no answers yet
        if there is no file; a damaged one is left as it is (moving it aside and salvaging
        need a folder that can be written)."""
        from reader.base.sqldb import NotReadable, open_snapshot

        where = f"the stats database {self.path} (in a read-only folder)"
        if not self.path.exists():
            conn = sqlite3.connect(":memory:", isolation_level=None)
            self._create(conn)
            return conn
        try:
            conn = open_snapshot(self.path)
        except NotReadable as e:
            raise KarutaError(f"cannot read {where}: {e}; make the folder writable") from None
        except sqlite3.Error as e:
            raise KarutaError(f"cannot read {where}: {e}") from None
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            have = {n for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            conn.close()
            check, version, have = str(e), 0, set()
        from reader.base.statefiles import STATS_ROWS

        if version > SCHEMA_VERSION:
            conn.close()
            raise KarutaError(f"the stats database {self.path} is from a newer karuta "
                              f"(schema {version}, this one knows {SCHEMA_VERSION})")
        if check == "ok" and version == 0 and not have:  # an empty file: no answers yet
            conn.close()
            conn = sqlite3.connect(":memory:", isolation_level=None)
            self._create(conn)
            return conn
        if check != "ok" or version == 0 or any(t not in have for t in STATS_ROWS):
            conn.close()
            lost = [t for t in STATS_ROWS if t not in have]
            why = (check.splitlines()[0] if check != "ok" else
                   "not a karuta stats database" if version == 0 else
                   f"its table {lost[0]} is missing")
            # what can still be read is shown (copied into memory; the file is not touched),
            # and the one line says the rest
            mem = sqlite3.connect(":memory:", isolation_level=None)
            self._create(mem)
            from reader.drills.stats_salvage import salvage

            got = salvage(self.path, mem)
            self.notice = (f"{where} is damaged ({why}): it was left as it is"
                           + (f"; what could be read is shown ({got})" if got else
                              "; nothing in it could be read")
                           + "; make the folder writable and run karuta stats again to keep a "
                           "copy and start a new one with what can be read")
            return mem
        return conn

    def _create(self, conn: sqlite3.Connection) -> None:
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            # version 0 with tables in it: some other program's database, not ours
            raise _Corrupt("not a karuta stats database")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA_V1.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _move_aside(self) -> Path:
        n = 1
        while any(Path(f"{self.path}.corrupt-{n}{s}").exists() for s in ("", "-wal", "-shm")):
            n += 1
        target = Path(f"{self.path}.corrupt-{n}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                try:
                    os.replace(src, f"{target}{suffix}")
                except OSError as e:
                    raise KarutaError(
                        f"the stats database {self.path} is corrupt and cannot be moved aside: {e.strerror}"
                    ) from None
        return target

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> StatsDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _tx(self):
        from reader.base.sqldb import immediate

        return immediate(self._conn)

    # -- writing (each call is one committed transaction) ------------------------------------

    @_sql_errors
    def start_session(self, kind: str, ts: datetime, settings: dict | None = None) -> str:
        """Register a drill session; returns its id (random hex) for ``record_*``."""
        sid = uuid.uuid4().hex
        with self._tx() as c:
            c.execute(
                "INSERT INTO sessions (id, kind, started, settings) VALUES (?, ?, ?, ?)",
                (sid, kind, _iso(ts), json.dumps(settings or {}, ensure_ascii=False, sort_keys=True)),
            )
        return sid

    @_sql_errors
    def record_tap(
        self,
        session: str,
        poem: int,
        ts: datetime,
        *,
        kimariji: str,
        reaction_ms: float | None,
        from_kami_ms: float | None,
        correct: bool,
        anticipation: bool = False,
        fault: bool = False,
    ) -> int:
        """One tap of the speed drill, committed before returning.  Returns the row id.

        ``poem`` is the poem that was read; ``kimariji`` its kimariji at that moment (it shrinks
        as cards are read); ``reaction_ms`` is measured from the end of the kimariji sound
        (negative for a tap before it), ``from_kami_ms`` from the start of the 上の句.
        """
        _check_poem(poem)
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO taps (session, poem, ts, kimariji, reaction_ms, from_kami_ms, correct,"
                " anticipation, fault) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session, poem, _iso(ts), kimariji, reaction_ms, from_kami_ms,
                 int(bool(correct)), int(bool(anticipation)), int(bool(fault))),
            )
        return cur.lastrowid

    @_sql_errors
    def record_review(
        self,
        session: str,
        poem: int,
        ts: datetime,
        *,
        mode: str,
        correct: bool,
        response_ms: float | None,
        rating: int,
        chosen: int | None,
        state: str,
        due: datetime,
        stability: float | None,
        card_json: str,
    ) -> int:
        """One memory-drill answer and the poem's new FSRS card, in one committed transaction."""
        _check_poem(poem)
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO reviews (session, poem, ts, mode, correct, response_ms, rating, chosen)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session, poem, _iso(ts), mode, int(bool(correct)), response_ms, int(rating), chosen),
            )
            c.execute(
                "INSERT INTO memory (poem, state, due, stability, card, updated) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (poem) DO UPDATE SET state = excluded.state, due = excluded.due,"
                " stability = excluded.stability, card = excluded.card, updated = excluded.updated",
                (poem, state, _iso(due), stability, card_json, _iso(ts)),
            )
        return cur.lastrowid

    # -- reading ------------------------------------------------------------------------------

    @_sql_errors
    def memory_cards(self) -> dict[int, str]:
        """poem -> the FSRS card JSON saved by the last review (introduced poems only)."""
        from reader.base.statefiles import decode_json

        out = {}
        for poem, card in self._conn.execute("SELECT poem, card FROM memory ORDER BY poem"):
            try:  # a row damaged on disk is skipped (the poem is new again), not a traceback
                if isinstance(poem, int) and 1 <= poem <= 100 and isinstance(card, str) and \
                        isinstance(decode_json(card), dict):
                    out[poem] = card
            except ValueError:
                pass
        return out

    @_sql_errors
    def taps(self, poem: int | None = None) -> list[Tap]:
        sql = "SELECT * FROM taps" + (" WHERE poem = ?" if poem is not None else "") + " ORDER BY id"
        rows = self._conn.execute(sql, () if poem is None else (poem,)).fetchall()
        from reader.base.statefiles import row_ok

        return [Tap(r[0], r[1], r[2], _parse(r[3]), r[4], r[5], r[6], bool(r[7]), bool(r[8]), bool(r[9]))
                for r in rows if row_ok("taps", r)]  # a row damaged on disk is left out

    @_sql_errors
    def reviews(self, poem: int | None = None) -> list[Review]:
        sql = "SELECT * FROM reviews" + (" WHERE poem = ?" if poem is not None else "") + " ORDER BY id"
        rows = self._conn.execute(sql, () if poem is None else (poem,)).fetchall()
        from reader.base.statefiles import row_ok

        return [Review(r[0], r[1], r[2], _parse(r[3]), r[4], bool(r[5]), r[6], r[7], r[8])
                for r in rows if row_ok("reviews", r)]

    @_sql_errors
    def sessions(self) -> list[tuple[str, str, datetime]]:
        """(id, kind, started) of every session, oldest first."""
        return [(i, k, _parse(s)) for i, k, s in
                self._conn.execute("SELECT id, kind, started FROM sessions ORDER BY started, rowid")]

    @_sql_errors
    def per_session(self) -> list[SessionStats]:
        """Each session with taps or reviews, oldest first (sessions that recorded nothing
        are left out)."""
        taps: dict[str, list[tuple]] = {}
        for sid, ms, ok, ant in self._conn.execute(
                "SELECT session, reaction_ms, correct, anticipation FROM taps ORDER BY id"):
            taps.setdefault(sid, []).append((ms, ok, ant))
        reviews: dict[str, list[int]] = {}
        for sid, ok in self._conn.execute("SELECT session, correct FROM reviews ORDER BY id"):
            reviews.setdefault(sid, []).append(ok)
        out = []
        for sid, kind, started in self.sessions():
            t, rv = taps.get(sid, []), reviews.get(sid, [])
            if started is None or not (t or rv):
                continue
            rs = [ms for ms, ok, ant in t if ok and not ant and isinstance(ms, (int, float))
                  and ms == ms]  # (a value damaged on disk is left out)
            out.append(SessionStats(
                session=sid, kind=kind, started=started, taps=len(t),
                median_reaction_ms=statistics.median(rs) if rs else None,
                tap_accuracy=sum(bool(ok) for _, ok, _ in t) / len(t) if t else None,
                reviews=len(rv), review_accuracy=sum(bool(x) for x in rv) / len(rv) if rv else None))
        return out

    @_sql_errors
    def per_player(self) -> list[PlayerStats]:
        """Each named player of the matches played on a page (sessions whose settings have
        ``web`` and ``player``), by name.  A right tap with no reaction time in a session whose
        device was not calibrated (``calibration_ms`` null) is counted in ``uncalibrated``."""
        from reader.base.statefiles import decode_json

        who: dict[str, tuple[str, bool]] = {}  # session -> (player, its device calibrated)
        for sid, settings in self._conn.execute(
                "SELECT id, settings FROM sessions WHERE kind = 'practice'"):
            try:
                st = decode_json(settings) if isinstance(settings, str) else None
            except ValueError:  # (damaged on disk: not a player's)
                st = None
            if isinstance(st, dict) and st.get("web") is True and \
                    isinstance(st.get("player"), str) and st["player"]:
                who[sid] = (st["player"][:24], st.get("calibration_ms") is not None)
        figures: dict[str, list] = {}  # name -> [taps, takes, faults, reactions, uncalibrated]
        for sid, ms, ok, ant, fault in self._conn.execute(
                "SELECT session, reaction_ms, correct, anticipation, fault FROM taps ORDER BY id"):
            if sid not in who:
                continue
            name, calibrated = who[sid]
            f = figures.setdefault(name, [0, 0, 0, [], 0])
            f[0] += 1
            f[1] += bool(ok)
            f[2] += bool(fault)
            timed = isinstance(ms, (int, float)) and ms == ms
            if ok and not ant and timed:
                f[3].append(ms)
            elif ok and not timed and not calibrated:
                f[4] += 1
        return [PlayerStats(name=n, taps=t, takes=k, faults=fl,
                            median_reaction_ms=statistics.median(rs) if rs else None,
                            timed=len(rs), uncalibrated=u)
                for n, (t, k, fl, rs, u) in sorted(figures.items())]

    @_sql_errors
    def per_poem(self, only_with_data: bool = False) -> list[PoemStats]:
        """Summary of each of the 100 poems (or only those with taps, reviews or a card)."""
        from poems import all_poems

        reactions: dict[int, list[float]] = {}
        tap_counts: dict[int, tuple[int, int, int, int]] = {}
        for poem, n, ok, ant, fault in self._conn.execute(
            "SELECT poem, count(*), sum(correct), sum(anticipation), sum(fault) FROM taps GROUP BY poem"
        ):
            tap_counts[poem] = (n, ok, ant, fault)
        for poem, ms in self._conn.execute(
            "SELECT poem, reaction_ms FROM taps WHERE correct = 1 AND anticipation = 0"
            " AND reaction_ms IS NOT NULL"
        ):
            if isinstance(ms, (int, float)) and ms == ms:  # a damaged row is left out
                reactions.setdefault(poem, []).append(ms)
        review_counts = {p: (n, ok) for p, n, ok in self._conn.execute(
            "SELECT poem, count(*), sum(correct) FROM reviews GROUP BY poem")}
        memory = {p: (s, d, st) for p, s, d, st in self._conn.execute(
            "SELECT poem, state, due, stability FROM memory")}
        out = []
        for p in all_poems():
            n, ok, ant, fault = tap_counts.get(p.no, (0, 0, 0, 0))
            rv, rv_ok = review_counts.get(p.no, (0, 0))
            state, due, stab = memory.get(p.no, ("new", None, None))
            if only_with_data and not (n or rv or p.no in memory):
                continue
            rs = reactions.get(p.no)
            out.append(PoemStats(
                poem=p.no, kimariji=p.kimariji, color=p.color, taps=n, correct=ok,
                median_reaction_ms=statistics.median(rs) if rs else None,
                best_reaction_ms=min(rs) if rs else None,
                anticipations=ant, faults=fault, reviews=rv, reviews_correct=rv_ok,
                memory_state=state, due=due, stability=stab,
            ))
        return out

    @_sql_errors
    def export_csv(self, out: IO[str], only_with_data: bool = False) -> int:
        """Write ``per_poem()`` as CSV (header + one row a poem); returns the number of rows."""
        rows = self.per_poem(only_with_data)
        w = csv.writer(out, lineterminator="\n")
        w.writerow([f.name for f in fields(PoemStats)])
        for r in rows:
            w.writerow(["" if v is None else v for v in asdict(r).values()])
        return len(rows)


_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


class _Corrupt(Exception):
    """The file is not a readable SQLite database (garbage, truncated, someone else's)."""


def _check_poem(poem: int) -> None:
    if not isinstance(poem, int) or not 1 <= poem <= 100:
        raise ValueError(f"no poem number {poem!r} (poems are 1-100)")
