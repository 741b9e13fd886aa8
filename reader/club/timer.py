"""The memorisation timer before the jo-ka and its chimes (pure: the clock is passed in)."""
from __future__ import annotations

from dataclasses import dataclass, field

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import KarutaError


@dataclass
class MemorizeTimer:
    """The memorisation countdown before the jo-ka.

    ``total``: seconds; ``signals``: seconds after the start at which a signal sounds (the
    13-minute mark: practice swings allowed); the end sounds too.  ``clock()`` gives seconds
    (``clock``: a ``reader.base.clock.Clock``, the fake one in tests).  ``poll()`` returns the events that came due
    since the last poll, each once: ``("signal", t)`` and finally ``("end", elapsed)``;
    ``skip()`` ends it at once (no signals fire after a skip).
    """

    total: float
    signals: tuple[float, ...] = ()
    clock: Clock = SYSTEM_CLOCK
    t0: float | None = None
    fired: list[float] = field(default_factory=list)
    ended: bool = False
    skipped: bool = False

    def start(self) -> None:
        self.t0 = self.clock.seconds()

    def elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return max(0.0, self.clock.seconds() - self.t0)

    def remaining(self) -> float:
        return 0.0 if self.ended else max(0.0, self.total - self.elapsed())

    @property
    def swings(self) -> bool:
        """A signal has sounded: practice swings are allowed."""
        return bool(self.fired)

    def next_signal(self) -> float | None:
        left = [s for s in sorted(self.signals) if s not in self.fired and s < self.total]
        return left[0] if left else None

    def skip(self) -> None:
        self.skipped = True

    def poll(self) -> list[tuple[str, float]]:
        if self.ended:
            return []
        if self.t0 is None:
            self.start()
        now = self.elapsed()
        if self.skipped:
            self.ended = True
            return [("end", now)]
        out: list[tuple[str, float]] = []
        for s in sorted(self.signals):
            if s not in self.fired and s < self.total and now >= s:
                self.fired.append(s)
                out.append(("signal", s))
        if now >= self.total:
            self.ended = True
            out.append(("end", now))
        return out


def default_signals(total_min: float) -> tuple[float, ...]:
    """Minutes from the start: 2 minutes before the end (13 of 15), when that is after 0."""
    return (total_min - 2,) if total_min > 2 else ()


def parse_signals(spec: str | None, total_min: float) -> tuple[float, ...]:
    """``--signals "13"`` or ``"5,13"`` (minutes from the start) -> seconds."""
    if spec is None:
        mins = default_signals(total_min)
    elif spec.strip() in ("", "none"):
        mins = ()
    else:
        try:
            mins = tuple(float(x) for x in spec.split(",") if x.strip())
        except ValueError:
            raise KarutaError(f"--signals {spec!r}: give minutes from the start, e.g. 13 or 5,13") from None
        for m in mins:
            if not 0 < m < total_min:
                raise KarutaError(f"--signals {m:g} is not inside the {total_min:g}-minute memorisation")
    return tuple(round(m * 60.0, 3) for m in mins)


def chime(rate: int, kind: str = "signal"):
    """A short synthesized chime (float32): ``signal`` two bright beeps, ``end`` a falling
    three-note bell (the jo-ka follows)."""
    import numpy as np

    notes = [(1318.5, 0.16), (0, 0.08), (1318.5, 0.16)] if kind == "signal" else \
        [(1046.5, 0.35), (784.0, 0.35), (523.25, 0.7)]
    parts = []
    for f, dur in notes:
        n = int(rate * dur)
        t = np.arange(n, dtype=np.float64) / rate
        if f == 0:
            parts.append(np.zeros(n))
            continue
        env = np.exp(-3.0 * t / dur) * np.minimum(1.0, t / 0.005)
        parts.append(0.35 * env * (np.sin(2 * np.pi * f * t) + 0.3 * np.sin(4 * np.pi * f * t)))
    parts.append(np.zeros(int(rate * 0.15)))
    return np.concatenate(parts).astype(np.float32)


class ArrayCursor:
    """Plays a fixed array through an ``audio.output`` backend (the chimes): the subset of the
    ``PlanCursor`` interface the outputs use (``read``, ``stop``, ``close``, ``sample_rate``,
    ``finished``)."""

    def __init__(self, samples, sample_rate: int):
        self.data = samples
        self.sample_rate = sample_rate
        self.pos = 0
        self.stopped = False

    def read(self, n: int):
        if self.stopped:
            return self.data[:0]
        out = self.data[self.pos:self.pos + n]
        self.pos += out.shape[0]
        return out

    @property
    def finished(self) -> bool:
        """As ``PlanCursor.finished``: stopped, or every frame read."""
        return self.stopped or self.pos >= self.data.shape[0]

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        pass
