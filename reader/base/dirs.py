"""Per-user folders.  One place decides where karuta keeps things.

  data    stats, voice packs, recordings, saved sessions   KARUTA_DATA_DIR
  config  default voice, device calibration                KARUTA_CONFIG_DIR
  cache   synthesized clips (safe to delete)               KARUTA_CACHE_DIR

Each environment variable, when set, replaces the platform's folder (platformdirs); the tests
set all three to temporary folders.
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


def data_dir() -> Path:
    return _dir("KARUTA_DATA_DIR", "data")


def config_dir() -> Path:
    return _dir("KARUTA_CONFIG_DIR", "config")


def cache_dir() -> Path:
    return _dir("KARUTA_CACHE_DIR", "cache")
