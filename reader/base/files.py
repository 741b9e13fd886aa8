"""Writing files so that a failure leaves nothing half-written (temp file + fsync + rename)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reader.base.errors import OutputError


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; an unwritable path is one ``OutputError``.

    A temp file in the same folder, fsync, ``os.replace``, then fsync of the folder: after it
    returns the file is on disk (a crash a moment later loses nothing); a crash during it
    leaves the previous version.
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise OutputError(f"cannot write {path}: it is a folder")
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.is_dir():
            raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    except OSError as e:  # a name too long, a folder we may not look into
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    try:
        share_like_new_file(tmp)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def share_like_new_file(path) -> None:
    """Give a temp file (mkstemp: 0600) the permissions ``open()`` would give a new file
    (0666 less the umask), so what karuta writes is readable as the user expects."""
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(path, 0o666 & ~mask)
    except OSError:
        pass
