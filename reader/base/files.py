"""Writing files so that a failure leaves nothing half-written (temp file + fsync + rename).

A path that is a symbolic link is written *through* the link: the file it points to is
replaced, and the link stays (a user who linked a save into a synced folder keeps the link, and
the linked copy keeps updating).  ``write_target`` says which file that is.
"""
from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from reader.base.errors import OutputError

#: the most a file karuta reads whole may hold (its logs, saves and sheets are far smaller)
READ_MAX = 64 * 1024 * 1024


def read_bounded(path: Path | str, limit: int = READ_MAX) -> bytes:
    """The bytes of ``path``, at most ``limit``: a device that never ends (/dev/zero given
    as a log) or a huge file is ``OSError`` (EFBIG) after ``limit`` + 1 bytes, not a process
    that reads until memory runs out.  A named pipe nothing writes to reads as empty at once
    (opening one for reading would otherwise wait for a writer that never comes); a pipe with
    a writer (``<(command)``) is read to its end."""
    import errno
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit // 2**20} MiB: too large to be one of "
                                   "karuta's files")
    return data


def write_target(path: Path | str) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or, when ``path`` is a symbolic
    link (a dangling one too), the file at the end of its chain of links."""
    path = Path(path)
    if os.path.islink(path):
        return Path(os.path.realpath(path))
    return path


def _named(path: Path, target: Path) -> str:
    return str(path) if target == path else f"{path} (a link to {target})"


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; an unwritable path is one ``OutputError``.

    A temp file in the same folder, fsync, ``os.replace``, then fsync of the folder: after it
    returns the file is on disk (a crash a moment later loses nothing); a crash during it
    leaves the previous version.  A symbolic link is written through (``write_target``); an
    existing file keeps its permissions.
    """
    atomic_write_texts([(path, text)])


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """``atomic_write_text`` for bytes (a PNG, ...): the whole file or the one before."""
    atomic_write_texts([(path, data)])


def atomic_write_texts(files) -> None:
    """Write several ``(path, text)`` files (``text`` may be ``bytes``), each atomically, all or none as far as the disk
    allows: every new version is written and synced to a temp file first, and only when all of
    them are on disk are they renamed into place (in the order given).  So a file that cannot
    be written (an unwritable folder, a full disk, a path that is a folder) is one
    ``OutputError`` before any of the files is replaced."""
    staged: list[tuple[Path, Path, str]] = []  # (asked, target, temp)
    try:
        for path, text in files:
            path = Path(path)
            target = write_target(path)
            folder = _check_writable(path, target)
            tmp = _stage(path, target, folder, text)
            staged.append((path, target, tmp))
    except BaseException:
        for _, _, tmp in staged:
            _unlink(tmp)
        raise
    done: list[Path] = []
    for i, (path, target, tmp) in enumerate(staged):
        try:
            os.replace(tmp, target)
        except OSError as e:
            for _, _, rest in staged[i:]:
                _unlink(rest)
            saved = f" ({', '.join(map(str, done))} written)" if done else ""
            raise OutputError(f"cannot write {_named(path, target)}: {e.strerror}{saved}") from None
        done.append(path)
    for folder in {t.parent for _, t, _ in staged}:
        _fsync_folder(folder)


def _check_writable(path: Path, target: Path) -> Path:
    """The folder of ``target`` (checked: ``target`` is no folder, the folder exists)."""
    try:
        if target.is_dir():
            raise OutputError(f"cannot write {_named(path, target)}: it is a folder")
        folder = target.parent if str(target.parent) else Path(".")
        if not folder.is_dir():
            raise OutputError(f"cannot write {_named(path, target)}: folder {folder} does not exist")
    except OSError as e:  # a name too long, a folder we may not look into, a loop of links
        raise OutputError(f"cannot write {_named(path, target)}: {e.strerror or e}") from None
    return folder


def _stage(path: Path, target: Path, folder: Path, text: str | bytes) -> str:
    """A synced temp file beside ``target`` holding ``text``, with the permissions ``target``
    has (or a new file's)."""
    remove_stale_temps(target, ".tmp")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}-", suffix=".tmp",
                                   dir=folder)
    except OSError as e:
        raise OutputError(f"cannot write {_named(path, target)}: {e.strerror}") from None
    try:
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        except OSError:
            share_like_new_file(tmp)
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        _unlink(tmp)
        raise OutputError(f"cannot write {_named(path, target)}: {e.strerror}") from None
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def remove_stale_temps(path: Path, suffix: str) -> None:
    """Remove the ``.NAME.PID-xxxx<suffix>`` temp files of writes of ``path`` whose process is
    gone (killed with SIGKILL, or the power went: nothing could clean up then); a live
    process's are left alone.  ``suffix``: ".tmp" (``atomic_write_texts``), ".part" (renders)."""
    import glob
    import re

    pattern = re.compile(re.escape(f".{path.name}.") + r"(\d+)-[^/]*" + re.escape(suffix) + "$")
    try:
        candidates = list(path.parent.glob(f".{glob.escape(path.name)}.*{suffix}"))
    except OSError:
        return
    for p in candidates:
        m = pattern.match(p.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            _unlink(p)
        except OSError:
            pass


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


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


#: how long a command waits for another karuta to finish changing the same file
LOCK_WAIT_S = 30.0


def lock_path(path: Path | str) -> Path:
    """Where the lock of ``path`` is a file (not on Linux, see ``lock_name``): ``.NAME.lock``
    beside the file it names (through links, so every link to one file shares one lock)."""
    target = write_target(path)
    return target.with_name(f".{target.name}.lock")


def lock_name(path: Path | str) -> bytes:
    """The name of ``path``'s lock on Linux: an abstract Unix socket address (no file
    anywhere: nothing appears beside the user's file).  Made from the folder's device and
    inode and the file's name (through links, so every link to one file, and every way of
    spelling its folder, names one lock)."""
    import hashlib

    target = write_target(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        st = os.stat(folder)
        where = f"{st.st_dev}:{st.st_ino}"
    except OSError:  # (said where the folder is used)
        where = os.path.abspath(folder)
    key = f"{where}/{target.name}".encode("utf-8", "surrogateescape")
    return b"\0karuta-lock-" + hashlib.sha256(key).hexdigest()[:48].encode()


class _SocketLock:
    """An OS lock with no file: an abstract Unix socket bound to ``lock_name(path)``.  Only
    one socket can hold an address; the kernel frees it when the socket closes, so a killed
    process never leaves the file locked.  Sockets are close-on-exec: a program karuta
    starts does not inherit it."""

    def __init__(self, name: bytes):
        self.name = name
        self._sock = None

    def acquire(self, wait: float) -> bool:
        import errno
        import socket
        import time

        from reader.base.clock import SYSTEM_CLOCK

        end = SYSTEM_CLOCK.seconds() + wait  # (a real wait: it sleeps)
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(self.name)
            except OSError as e:
                sock.close()
                if e.errno != errno.EADDRINUSE:
                    raise
            else:
                self._sock = sock
                return True
            if SYSTEM_CLOCK.seconds() >= end:
                return False
            time.sleep(0.02)

    def release(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


@contextmanager
def locked(path: Path | str, what: str = "file", wait: float | None = None):
    """Hold ``path``'s lock (on Linux an abstract socket, ``lock_name``: no file; elsewhere an
    OS file lock on ``lock_path(path)``, ``filelock``) while the block reads, changes and
    writes ``path``: two karuta commands changing one file take
    turns, and neither writes over what the other saved.  Waits ``wait`` seconds (default
    ``LOCK_WAIT_S``) for another holder, then one ``OutputError``; the OS drops the lock of a
    killed process, so a crash never leaves the file locked."""
    lock = _acquire(path, what, LOCK_WAIT_S if wait is None else wait)
    try:
        yield
    finally:
        lock.release()


def hold(path: Path | str, what: str):
    """Take ``path``'s lock (the one ``locked`` takes) for as long as a command plays or reads
    from it — a practice match, a kept match, a club session — without waiting: a second
    karuta on the same file is refused at once with one ``OutputError`` line, before it
    writes anything.  Returns the held lock: ``.release()`` it (the OS does at exit)."""
    return _acquire(path, what, 0)


def _acquire(path: Path | str, what: str, wait: float):
    import sys

    target = write_target(path)
    if not target.name:
        raise OutputError(f"cannot write {what} {str(path)!r}: it names no file")
    if not os.path.isdir(target):  # (a folder may be held too: a voice's recordings)
        _check_writable(Path(path), target)  # filelock would make a missing folder: never
    if sys.platform.startswith("linux"):
        lock = _SocketLock(lock_name(path))
        try:
            got = lock.acquire(wait)
        except OSError as e:
            raise OutputError(f"cannot write {what} {path}: cannot lock it "
                              f"({e.strerror or e})") from None
        if not got:
            _refuse(what, path, wait)
        return lock
    import filelock

    lock = filelock.FileLock(str(lock_path(path)), timeout=wait)
    try:
        lock.acquire()
    except filelock.Timeout:
        _refuse(what, path, wait)
    except OSError as e:
        raise OutputError(f"cannot write {what} {path}: cannot lock it "
                          f"({e.strerror or e})") from None
    return lock


def _refuse(what: str, path, wait: float):
    if wait <= 0:
        raise OutputError(f"{what} {path} is in use by another karuta: finish or quit that "
                          "one first") from None
    raise OutputError(f"{what} {path} is being changed by another karuta (waited {wait:g} s): "
                      "try again when it is done") from None
