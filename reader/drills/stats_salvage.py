"""Salvage what SQLite can still read from a damaged stats database (issue 12, item 3).

``StatsDB`` keeps the damaged file (moved to ``stats.sqlite3.corrupt-N``) and starts a new
one; ``salvage(damaged, new_conn)`` then copies into the new one every row of ``sessions``,
``taps``, ``reviews`` and ``memory`` that can still be read: table by table, in rowid
ranges, and row by row inside a range that fails, so one bad page costs only the rows on it.
Rows whose values do not fit the schema (a damaged page can read back as wrong types) are
left out.  The damaged file itself is never written: a copy (with its ``-wal``) is read.
"""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

from reader.base.statefiles import STATS_ROWS as TABLES

CHUNK = 256
#: when the largest rowid cannot be read, ranges are tried up to this rowid
SCAN_LIMIT = 1_000_000
#: ... or until this many empty ranges in a row (16k rowids: deleted rows leave gaps)
EMPTY_CHUNKS = 64


def salvage(damaged: Path, new: sqlite3.Connection) -> str:
    """Copy the readable rows of ``damaged`` into ``new``; returns what was recovered, e.g.
    "120 taps, 30 reviews, 12 memory cards, 4 sessions" ("" when nothing)."""
    with tempfile.TemporaryDirectory(prefix="karuta-salvage-") as tmp:
        copy = Path(tmp) / "damaged.sqlite3"
        try:
            shutil.copyfile(damaged, copy)
            for suffix in ("-wal",):
                side = Path(f"{damaged}{suffix}")
                if side.exists():
                    shutil.copyfile(side, f"{copy}{suffix}")
            _pad_to_header_size(copy)
            src = sqlite3.connect(copy, isolation_level=None)
        except (OSError, sqlite3.Error):
            return ""
        try:
            counts = {t: _copy_table(src, new, t, cols) for t, cols in TABLES.items()}
        finally:
            src.close()
    names = {"taps": ("tap", "taps"), "reviews": ("review", "reviews"),
             "memory": ("memory card", "memory cards"), "sessions": ("session", "sessions")}
    got = [f"{n} {names[t][n != 1]}" for t, n in
           sorted(counts.items(), key=lambda kv: list(names).index(kv[0])) if n]
    if got and not counts["taps"] and not counts["reviews"]:
        got.append("no answers")  # sessions (or memory cards) only: say the answers are gone
    return ", ".join(got)


def _pad_to_header_size(path: Path) -> None:
    """A truncated file: SQLite refuses every read when the header promises more pages than
    the file has; zero pages in their place make only the rows on them unreadable."""
    with open(path, "r+b") as f:
        head = f.read(100)
        if len(head) < 100 or not head.startswith(b"SQLite format 3\0"):
            return
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        want = int.from_bytes(head[28:32], "big") * page
        f.seek(0, 2)
        if 0 < f.tell() < want <= 1 << 34:
            f.truncate(want)


def _copy_table(src: sqlite3.Connection, dst: sqlite3.Connection, table: str, cols: dict) -> int:
    names = ", ".join(cols)
    select = f"SELECT {names} FROM {table} WHERE rowid BETWEEN ? AND ?"
    insert = f"INSERT OR IGNORE INTO {table} ({names}) VALUES ({', '.join('?' * len(cols))})"
    checks = list(cols.values())
    try:
        top = src.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        top = None
    known = isinstance(top, int)
    top = top if known else SCAN_LIMIT
    rows: list[tuple] = []
    failures = empty = 0
    lo = 1 if table != "memory" else 0
    # without the largest rowid, stop after EMPTY_CHUNKS ranges in a row with nothing in them
    while lo <= top and failures < 64 and (known or empty < EMPTY_CHUNKS):
        hi = lo + CHUNK - 1
        try:
            got = src.execute(select, (lo, hi)).fetchall()
        except sqlite3.Error:
            got = []
            empty = 0
            for r in range(lo, hi + 1):
                try:
                    got += src.execute(select, (r, r)).fetchall()
                except sqlite3.Error:
                    failures += 1
                    if failures >= 64:
                        break
        empty = 0 if got else empty + 1
        rows += [row for row in got if all(ok(v) for ok, v in zip(checks, row))]
        lo = hi + 1
    if not rows:
        return 0
    dst.execute("BEGIN IMMEDIATE")
    try:
        before = dst.total_changes
        dst.executemany(insert, rows)
        n = dst.total_changes - before
        dst.execute("COMMIT")
    except sqlite3.Error:
        dst.execute("ROLLBACK")
        return 0
    return n
