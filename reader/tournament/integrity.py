"""Is this a karuta tournament file, is it whole, and what an SQLite failure means (issue 22).

- ``identify(path)``: before anything opens the file for writing (WAL switch, locks): a file
  that is not a karuta tournament is refused with its bytes unchanged.  It is read
  ``immutable`` (no journal, no ``-shm``), so a valid tournament in a read-only folder is
  recognised as one.
- ``check(conn, path)``: every table of the file against what ``store`` writes: the settings
  (``meta``) through the ``tournament-meta`` schema (``reader.base.statefiles``), then
  players, rounds, tables, seats, result entries and lots, each row's types and every
  reference (a seat's player, a table's round, a result's counts per seat).  A damaged file
  is one ``TournamentError`` naming the file and the first fault; it is left as it is.
  A day's file holds a few hundred rows: the whole check takes milliseconds.
- ``sql_error(path, e)``: an SQLite failure (another karuta holding the file past the busy
  timeout, a read-only file or folder, a full disk) as one line.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from reader.base.sqldb import disk_full
from reader.tournament.errors import TournamentError

__all__ = ["identify", "check", "sql_error", "BUSY_TIMEOUT_S", "Damaged"]

#: how long a command waits for another karuta that holds the file
BUSY_TIMEOUT_S = 10.0

FORMAT = "karuta-tournament"
STAGES = ("prelim", "semi", "final")
KINDS = ("prelim", "semi", "final", "third")
#: table -> its columns, as ``store.SCHEMA`` makes them
COLUMNS = {
    "meta": ("key", "value"),
    "players": ("id", "name", "grp", "block", "joined_round", "withdrawn_round"),
    "rounds": ("no", "stage", "color", "reading_seed"),
    "tables": ("round", "no", "block", "kind"),
    "seats": ("round", "table_no", "seat", "player"),
    "entries": ("id", "round", "table_no", "counts", "faults", "source", "undone"),
    "lots": ("block", "player", "number", "seed"),
}


class Damaged(TournamentError):
    """The file is a tournament, but something in it is not as karuta wrote it."""


def _uri(path: Path, immutable: bool = True) -> str:
    from urllib.parse import quote

    ro = "mode=ro&immutable=1" if immutable else "mode=ro"
    return f"file:{quote(os.fsencode(path.resolve()))}?{ro}"


def _format_of(path: Path, immutable: bool):
    try:
        conn = sqlite3.connect(_uri(path, immutable), uri=True)
        try:
            return conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def identify(path: Path) -> None:
    """``TournamentError`` unless ``path`` is a karuta tournament file; writes nothing."""
    import stat

    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise TournamentError(f"{path}: not a karuta tournament file (not a regular file)")
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as e:
        raise TournamentError(f"cannot read {path}: {e.strerror or e}") from None
    if head != b"SQLite format 3\x00":
        raise TournamentError(f"{path}: not a karuta tournament file (not an SQLite "
                              "database); it was left as it is")
    row = _format_of(path, immutable=True)
    if row is None and os.path.exists(f"{path}-wal"):  # pages not yet copied from the WAL
        row = _format_of(path, immutable=False)
    if row is None or row[0] != f'"{FORMAT}"':
        raise TournamentError(f"{path}: not a karuta tournament file (another program's "
                              "SQLite database); it was left as it is")


def _damaged(path: Path, why: str) -> Damaged:
    return Damaged(f"the tournament file {path} is damaged ({why}); it was left as it is")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ints(text) -> tuple[int, ...] | None:
    if not isinstance(text, str):
        return None
    try:
        return tuple(int(x) for x in text.split(",")) if text else ()
    except ValueError:
        return None


def check(conn: sqlite3.Connection, path: Path) -> dict:
    """The decoded ``meta`` (settings) of a whole file; ``Damaged`` naming the first fault."""
    from reader.base.statefiles import StateFileError, check as check_shape, decode_json

    have = {n: tuple(c[1] for c in conn.execute(f"PRAGMA table_info({n})"))
            for n in COLUMNS}
    for name, cols in COLUMNS.items():
        if not have[name]:
            raise _damaged(path, f"its table {name} is missing")
        lost = [c for c in cols if c not in have[name]]
        if lost:
            raise _damaged(path, f"table {name} has no column {lost[0]}")
    meta = {}
    for k, v in conn.execute("SELECT key, value FROM meta"):
        try:
            meta[k] = decode_json(v) if isinstance(v, str) else None
        except ValueError:
            raise _damaged(path, f"setting {k} is not JSON") from None
    from reader.base.statefiles import SCHEMAS

    lost = [k for k in SCHEMAS["tournament-meta"]["required"] if k not in meta]
    if lost:
        raise _damaged(path, f"setting {lost[0]} is missing")
    try:
        check_shape(meta, "tournament-meta", "the tournament file", str(path))
    except StateFileError as e:
        raise Damaged(f"{e}; it was left as it is") from None

    players = {}
    for pid, name, grp, block, joined, withdrawn in conn.execute(
            "SELECT id, name, grp, block, joined_round, withdrawn_round FROM players"):
        if not (_is_int(pid) and isinstance(name, str) and isinstance(grp, str)
                and isinstance(block, str) and _is_int(joined)
                and (withdrawn is None or _is_int(withdrawn))):
            raise _damaged(path, f"player {pid!r} ({name!r}) has values of the wrong type")
        players[pid] = name
    rounds = {}
    for no, stage, color, seed in conn.execute("SELECT no, stage, color, reading_seed FROM rounds"):
        if not (_is_int(no) and stage in STAGES and color in _COLORS() and _is_int(seed)):
            raise _damaged(path, f"round {no!r} has values of the wrong type")
        rounds[no] = stage
    if sorted(rounds) != list(range(1, len(rounds) + 1)):
        gap = min(set(range(1, max(rounds) + 1)) - set(rounds))
        raise _damaged(path, f"round {gap} is missing but round {max(rounds)} is there")
    tables: dict[tuple[int, int], list[int]] = {}
    for r, no, block, kind in conn.execute("SELECT round, no, block, kind FROM tables"):
        if not (_is_int(r) and _is_int(no) and isinstance(block, str) and kind in KINDS):
            raise _damaged(path, f"round {r!r} table {no!r} has values of the wrong type")
        if r not in rounds:
            raise _damaged(path, f"table {no} belongs to round {r}, which is not paired")
        tables[r, no] = []
    for r in rounds:
        nos = sorted(t for rr, t in tables if rr == r)
        if nos != list(range(1, len(nos) + 1)) or not nos:
            gap = min(set(range(1, (max(nos) if nos else 0) + 2)) - set(nos))
            raise _damaged(path, f"round {r} has no table {gap}"
                           + (f" but a table {max(nos)}" if nos and gap < max(nos) else ""))
    for r, t, seat, p in conn.execute("SELECT round, table_no, seat, player FROM seats "
                                      "ORDER BY round, table_no, seat"):
        if not (_is_int(r) and _is_int(t) and _is_int(seat)):
            raise _damaged(path, f"a seat of round {r!r} table {t!r} has values of the wrong type")
        if (r, t) not in tables:
            raise _damaged(path, f"round {r} has a seat at table {t}, but no table {t}")
        if p not in players:
            raise _damaged(path, f"round {r} table {t}: a seat names player {p!r}, who is not "
                           "in the player list")
        tables[r, t].append(p)
    for (r, t), seats in sorted(tables.items()):
        if not 2 <= len(seats) <= 3:
            raise _damaged(path, f"round {r} table {t} has {len(seats)} player"
                           f"{'s' if len(seats) != 1 else ''} (2 or 3 play at a table)")
    for eid, r, t, counts, faults, undone in conn.execute(
            "SELECT id, round, table_no, counts, faults, undone FROM entries"):
        where = f"result entry {eid!r} (round {r!r} table {t!r})"
        if not (_is_int(eid) and _is_int(r) and _is_int(t) and undone in (0, 1)):
            raise _damaged(path, f"{where} has values of the wrong type")
        if (r, t) not in tables:
            raise _damaged(path, f"{where} is for a table that is not paired")
        c, f = _ints(counts), _ints(faults)
        if c is None or len(c) != len(tables[r, t]) or any(n < 0 or n > 100 for n in c):
            raise _damaged(path, f"{where}: cards {counts!r} are not {len(tables[r, t])} counts")
        if f is None or any(x not in tables[r, t] for x in f):
            raise _damaged(path, f"{where}: faults {faults!r} are not players of the table")
    for block, p, number, seed in conn.execute("SELECT block, player, number, seed FROM lots"):
        if not (isinstance(block, str) and p in players and _is_int(number)
                and isinstance(seed, str)):
            raise _damaged(path, f"a lot of block {block!r} is not a player's number")
    return meta


def _COLORS():
    import poems

    return poems.COLORS


def sql_error(path: Path, e: sqlite3.Error) -> TournamentError:
    """One line for an SQLite failure on the tournament file ``path``."""
    msg = str(e)
    folder = path.parent if str(path.parent) else Path(".")
    if "unable to open" in msg and folder.is_dir() and not os.access(folder, os.W_OK):
        return TournamentError(f"cannot use the tournament file {path}: its folder {folder} is "
                               "read-only (SQLite keeps its journal beside the file); copy it "
                               "to a folder you can write in")
    if "locked" in msg or "busy" in msg:
        return TournamentError(f"{path} is in use by another karuta (still locked after "
                               f"{BUSY_TIMEOUT_S:g} s): nothing was changed; try again when "
                               "it is done")
    if "readonly" in msg or "read-only" in msg:
        return TournamentError(f"cannot write {path}: the file or its folder is read-only; "
                               "nothing was changed")
    if disk_full(path, e):
        return TournamentError(f"cannot use {path}: the disk is full (SQLite needs room "
                               "beside the file, even to read it): free some space; nothing "
                               "was changed")
    if isinstance(e, (sqlite3.DatabaseError,)) and ("malformed" in msg or "not a database" in msg):
        return _damaged(path, msg)
    return TournamentError(f"cannot use {path}: {msg}")
