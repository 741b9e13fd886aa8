"""Per-user folders.  One place decides where karuta keeps things.

  data    stats, voice packs, recordings, saved sessions   KARUTA_DATA_DIR
  config  default voice, device calibration                KARUTA_CONFIG_DIR
  cache   synthesized clips (safe to delete)               KARUTA_CACHE_DIR

Each environment variable, when set, replaces the platform's folder (platformdirs); the tests
set all three to temporary folders.

A data or config folder (or a folder above it) that is a link to nothing (a disk not mounted) or a file is
one ``OutputError`` line saying so, whatever the command: nothing is created at the link's
target, and no command fails later with "File exists".
"""
from __future__ import annotations

import os
from pathlib import Path


def _dir(env: str, kind: str) -> Path:
    value = os.environ.get(env)
    if value:
        return Path(value)
    import platformdirs

    return Path(getattr(platformdirs, f"user_{kind}_dir")("karuta"))


def _usable(path: Path, kind: str, env: str) -> Path:
    """``path``, unless it or a folder above it is a dangling link or a file."""
    from reader.base.errors import OutputError

    for p in (path, *path.parents):
        try:
            if os.path.islink(p) and not os.path.exists(p):
                where = "" if p == path else f" (in {path})"
                raise OutputError(f"the {kind} folder {p}{where} is a link to {os.readlink(p)}, "
                                  f"which does not exist: mount it or fix the link "
                                  f"(or set {env})")
            if os.path.exists(p) and not os.path.isdir(p):
                raise OutputError(f"the {kind} folder {path} cannot be made: {p} is a file "
                                  f"(set {env} to a folder)")
        except OSError:  # a name too long, a folder we may not look into: said where it is used
            break
    return path


def make_folder(folder: Path, what: str) -> Path:
    """``folder`` made (with the folders above it) for ``what`` ("the data folder"), or one
    ``OutputError`` line saying why not (a read-only home, a full disk)."""
    from reader.base.errors import OutputError

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create {what} {folder}: {e.strerror or e}") from None
    return folder


def data_dir() -> Path:
    return _usable(_dir("KARUTA_DATA_DIR", "data"), "data", "KARUTA_DATA_DIR")


def config_dir() -> Path:
    return _usable(_dir("KARUTA_CONFIG_DIR", "config"), "config", "KARUTA_CONFIG_DIR")


def cache_dir() -> Path:
    """Not checked like the others: a cache that cannot be written is only not used."""
    return _dir("KARUTA_CACHE_DIR", "cache")
