"""Bounds on the numbers a user can give (options, saved files): one place, so nothing forgets
them.  ``MAX_PAUSE_S`` is the longest silence a reading may ask for: the command line's types
(``reader.cli.bounds``) and ``ReadingSettings`` both check against it, so a session file or a
caller that bypasses the command line meets the same bound."""
from __future__ import annotations

#: the longest 間, 余韻, take or gap, seconds: longer than any club or classroom uses (間 is 1 s
#: in kyogi, 2 s for beginners; a take in --auto mode a few seconds), short enough that a
#: 100-card file stays a few GB at most
MAX_PAUSE_S = 60.0
#: no option of karuta means anything beyond this magnitude
HUGE = 1e9
#: the longest memorisation, minutes (kyogi uses 15)
MAX_MEMORIZE_MIN = 60.0


def check_pause_ms(name: str, ms) -> None:
    """A pause in ms must be an integer in [0, MAX_PAUSE_S]; ``KarutaError`` otherwise."""
    from reader.base.errors import KarutaError

    if isinstance(ms, bool) or not isinstance(ms, int):
        raise KarutaError(f"{name} must be a whole number of milliseconds, not {ms!r}")
    if ms < 0:
        raise KarutaError(f"{name} must not be negative")
    if ms > MAX_PAUSE_S * 1000:
        raise KarutaError(f"{name} {ms / 1000:g} s is longer than any reading uses "
                          f"(at most {MAX_PAUSE_S:g} s)")
