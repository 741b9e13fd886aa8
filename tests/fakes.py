"""The tests' one fake clock (``reader.base.clock.Clock``): time moves only when a test says so.

``FakeClock(t=1000.0, step_ms=0.0, wall=...)``: ``seconds()``/``ms()``/``ns()`` read the
monotonic time; each read first moves it on by ``step_ms`` (0: it stands still);
``advance(s)`` moves it by ``s`` seconds; ``t`` (seconds) may be set directly.  ``now()`` is
``wall`` plus the time moved since the start.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


class FakeClock:
    def __init__(self, t: float = 1000.0, step_ms: float = 0.0, wall: datetime = T0):
        self.t = float(t)
        self.step = step_ms / 1000.0
        self._t0 = self.t
        self.wall = wall

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def seconds(self) -> float:
        self.t += self.step
        return self.t

    def ms(self) -> float:
        return self.seconds() * 1000.0

    def ns(self) -> int:
        return round(self.seconds() * 1e9)

    def now(self) -> datetime:
        return self.wall + timedelta(seconds=self.t - self._t0)
