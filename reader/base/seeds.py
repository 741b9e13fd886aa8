"""The one seed picker and the one way a seed becomes random numbers.

Every command that shuffles takes ``--seed`` or gets one from ``pick_seed``; a seed chosen here
is printed or saved by the caller, so any reading, drill or match can be repeated.  Seeds are
0..999,999 (short enough to read out at a club).

``rng(seed, *names)`` is every ``random.Random`` the app draws from: the seed's own stream, or
its stream ``names`` (the deal, the bots, a round's pairing ...), so two uses of one seed never
share numbers and each is repeatable on its own.  ``tests/test_conventions.py`` keeps other
modules from building their own.
"""
from __future__ import annotations

import random
import secrets

__all__ = ["SEED_RANGE", "pick_seed", "rng"]

SEED_RANGE = 1_000_000


def pick_seed(seed: int | None = None) -> int:
    """``seed`` when given, else a fresh random one."""
    return seed if seed is not None else secrets.randbelow(SEED_RANGE)


def secret(n: int) -> int:
    """A number below ``n`` no one can guess (a join code): from ``secrets``, never a seed."""
    return secrets.randbelow(n)


def rng(seed: int | str, *names: object) -> random.Random:
    """The random stream of ``seed`` — with ``names``, its stream so named:
    ``random.Random("SEED/NAME/...")`` (a string seed: the same numbers on every Python
    version).  ``rng(7)`` is ``random.Random(7)``; ``rng(7, "deal")`` is
    ``random.Random("7/deal")``."""
    if not names:
        return random.Random(seed)
    return random.Random("/".join(str(x) for x in (seed, *names)))
