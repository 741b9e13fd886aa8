"""click types for the numbers a user types: real, finite numbers within bounds.

click's ``float`` and ``FloatRange`` accept ``nan`` and ``inf`` (``FloatRange`` lets nan
through every comparison), which then ended in tracebacks or in renders of many gigabytes.
``FINITE`` / ``finite_range(lo, hi)`` refuse them with click's usual one-line "Invalid value"
error.  The limits themselves are ``reader.base.limits``.
"""
from __future__ import annotations

import math

import click

from reader.base.limits import HUGE, MAX_MEMORIZE_MIN, MAX_PAUSE_S  # noqa: F401  (re-used by options)


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


class Utf8Text(click.ParamType):
    """Text that can be stored and printed: a command-line argument that is not valid UTF-8
    (Python keeps its bytes as surrogates) is refused with click's one-line error instead of
    failing later, in SQLite or in a page being written."""

    name = "text"

    def convert(self, value, param, ctx):
        value = str(value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(f"{value.encode('utf-8', 'surrogateescape')!r} is not UTF-8 text",
                      param, ctx)
        return value


UTF8 = Utf8Text()
