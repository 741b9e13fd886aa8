"""The one seed picker: every command that shuffles takes ``--seed`` or gets one from here.

A seed chosen here is printed or saved by the caller, so any reading, drill or match can be
repeated.  Seeds are 0..999,999 (short enough to read out at a club).
"""
from __future__ import annotations

import secrets

SEED_RANGE = 1_000_000


def pick_seed(seed: int | None = None) -> int:
    """``seed`` when given, else a fresh random one."""
    return seed if seed is not None else secrets.randbelow(SEED_RANGE)
