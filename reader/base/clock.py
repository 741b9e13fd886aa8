"""The one clock shape: what the app asks the time of, passed in so tests hand in a fake.

``Clock``: ``now()`` is the wall time (an aware datetime, UTC: what is saved and shown);
``ns()`` the monotonic time in nanoseconds, the clock input events are stamped on
(``time.perf_counter_ns``: CLOCK_MONOTONIC on Linux, as ``time.monotonic``); ``seconds()`` and
``ms()`` are that same monotonic time in seconds and milliseconds.

``SYSTEM_CLOCK`` is the real one; a command's is ``reader.cli.command_clock()`` (the one
``reader.cli.main`` was given), so the dates it writes can be fixed by a test.  The tests' one
fake is ``tests/fakes.py``'s ``FakeClock``.  ``tests/test_clock_places.py`` names, function by
function, the few places that read the real time themselves (a device's own clock, a process
that runs apart) and fails on any other ``time.perf_counter`` / ``monotonic`` / ``time``,
``datetime.now`` or second clock.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Protocol

__all__ = ["Clock", "SystemClock", "SYSTEM_CLOCK"]


class Clock(Protocol):
    def now(self) -> datetime: ...

    def ns(self) -> int: ...

    def seconds(self) -> float: ...

    def ms(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    def ns(self) -> int:
        return time.perf_counter_ns()

    def seconds(self) -> float:
        return time.perf_counter_ns() / 1e9

    def ms(self) -> float:
        return time.perf_counter_ns() / 1e6


SYSTEM_CLOCK = SystemClock()
