"""SQLite's write transaction, one way for every database karuta keeps (stats, tournament)."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction with the file's write lock taken at once (``BEGIN IMMEDIATE``,
    waiting up to the connection's busy timeout): what is read inside it cannot change under
    it, so a check and the write it allows are one step.  Rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
