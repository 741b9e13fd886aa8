"""SQLite for every database karuta keeps (stats, tournament): the one write transaction, and
reading a database where nothing may be written (a read-only folder or disk)."""
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


def writable_here(path) -> bool:
    """Can SQLite write ``path``: its folder (for the journal, ``-wal`` and ``-shm``) and the
    file itself, if there is one.  ``os.access`` also says no for a read-only mount."""
    import os
    from pathlib import Path

    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not os.access(folder, os.W_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def disk_full(path, e: sqlite3.Error) -> bool:
    """Whether SQLite's error ``e`` on the database ``path`` is a full disk: said so
    ("database or disk is full"), or a disk too full for even SQLite's small ``-shm`` file,
    which SQLite reports as "disk I/O error" (less than 64 KiB left in the folder)."""
    import shutil
    from pathlib import Path

    msg = str(e)
    if "full" in msg:
        return True
    if "disk I/O error" not in msg:
        return False
    folder = Path(path).parent if str(Path(path).parent) else Path(".")
    try:
        return shutil.disk_usage(folder).free < 64 * 1024
    except OSError:
        return False


class NotReadable(Exception):
    """A database in a read-only place that SQLite cannot show as it is (``str``: why)."""


def open_snapshot(path) -> sqlite3.Connection:
    """A read-only connection to ``path`` where nothing may be written beside it (a read-only
    folder, disk or file): opened ``immutable``, so SQLite needs no ``-shm`` file.  A WAL file
    left with answers not yet copied into the database (a writer killed there) would be
    skipped by such a connection: that is refused (``NotReadable``) rather than showing less
    than was saved."""
    import os
    from pathlib import Path
    from urllib.parse import quote

    path = Path(path)
    wal = Path(f"{path}-wal")
    try:
        pending = wal.stat().st_size > 0
    except FileNotFoundError:
        pending = False
    if pending:
        raise NotReadable(f"its newest changes are still in {wal.name}, which SQLite can only "
                          "read where it may write beside the file")
    return sqlite3.connect(f"file:{quote(os.fsencode(path.resolve()))}?mode=ro&immutable=1",
                           uri=True, isolation_level=None)
