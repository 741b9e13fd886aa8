"""Bounds on the numbers a user types: one place, so no option forgets them.

click's ``float`` and ``FloatRange`` accept ``nan`` and ``inf`` (``FloatRange`` lets nan
through every comparison), which then ended in tracebacks or in renders of many gigabytes.
``FINITE`` / ``finite_range(lo, hi)`` are click types that refuse them with click's usual
one-line "Invalid value" error; ``MAX_PAUSE_S`` is the longest silence a reading may ask for
(``reader.settings.ReadingSettings`` checks every pause against it, so a session file or a
caller that bypasses the command line meets the same bound).
"""
from __future__ import annotations

import math

import click

#: the longest 間, 余韻, take or gap, seconds: longer than any club or classroom uses (間 is 1 s
#: in kyogi, 2 s for beginners; a take in --auto mode a few seconds), short enough that a
#: 100-card file stays a few GB at most
MAX_PAUSE_S = 60.0
#: no option of karuta means anything beyond this magnitude
HUGE = 1e9
#: the longest memorisation, minutes (kyogi uses 15)
MAX_MEMORIZE_MIN = 60.0


class FiniteFloat(click.ParamType):
    """A float that is a real number (not nan, inf or -inf), optionally within [lo, hi]."""

    name = "float"

    def __init__(self, lo: float | None = None, hi: float | None = None):
        self.lo, self.hi = lo, hi

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            x = float(value)
        else:
            try:
                x = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if abs(x) > HUGE:
            self.fail(f"{value!r} is far too large", param, ctx)
        if self.lo is not None and x < self.lo or self.hi is not None and x > self.hi:
            lo = "" if self.lo is None else f"{self.lo:g}"
            hi = "" if self.hi is None else f"{self.hi:g}"
            self.fail(f"{x:g} is not in the range {lo}..{hi}", param, ctx)
        return x

    def __repr__(self):
        return f"FiniteFloat({self.lo}, {self.hi})"


FINITE = FiniteFloat()


def finite_range(lo: float | None = None, hi: float | None = None) -> FiniteFloat:
    return FiniteFloat(lo, hi)


def check_pause_ms(name: str, ms) -> None:
    """A pause in ms must be an integer in [0, MAX_PAUSE_S]; ``KarutaError`` otherwise."""
    from reader.errors import KarutaError

    if isinstance(ms, bool) or not isinstance(ms, int):
        raise KarutaError(f"{name} must be a whole number of milliseconds, not {ms!r}")
    if ms < 0:
        raise KarutaError(f"{name} must not be negative")
    if ms > MAX_PAUSE_S * 1000:
        raise KarutaError(f"{name} {ms / 1000:g} s is longer than any reading uses "
                          f"(at most {MAX_PAUSE_S:g} s)")
