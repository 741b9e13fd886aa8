"""The DAC timeline: one ``(stream frame, DAC time, callback time)`` triple per buffer played,
recorded by the realtime side without allocating, and the mapping of a time to the frame heard
then (``frame_at``), with the settling test a drill waits on (``settled``)."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["Timeline"]


class Timeline:
    """(stream_frame, time) pairs, one per played buffer, in preallocated arrays so the
    realtime callback records without allocating.  Keeps the last ``size`` buffers."""

    def __init__(self, rate: int, size: int = 1 << 16):
        self.rate = rate
        self.size = size
        self.frames = np.zeros(size, dtype=np.int64)
        self.times = np.zeros(size, dtype=np.float64)
        self.currents = np.full(size, np.nan, dtype=np.float64)  # the callback's currentTime
        self.n = 0
        self.last: dict | None = None  # how the last ``frame_at`` decided (diagnostics)
        self.first_time: float | None = None
        self.first_frame: int | None = None

    def record(self, frame: int, t: float, current: float = math.nan) -> None:  # realtime-safe
        k = self.n % self.size
        self.frames[k] = frame
        self.times[k] = t
        self.currents[k] = current
        if self.n == 0:
            self.first_time, self.first_frame = t, frame
        self.n += 1

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """All kept pairs in order (copies)."""
        n = self.n
        if n <= self.size:
            return self.frames[:n].copy(), self.times[:n].copy()
        k = n % self.size
        return (np.concatenate([self.frames[k:], self.frames[:k]]),
                np.concatenate([self.times[k:], self.times[:k]]))

    def triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frames, DAC times, callback times) of the kept buffers in order (copies, all three
        from one reading of ``n``: the callback may record meanwhile)."""
        n = self.n
        if n <= self.size:
            return self.frames[:n].copy(), self.times[:n].copy(), self.currents[:n].copy()
        k = n % self.size

        def ordered(a):
            return np.concatenate([a[k:], a[:k]])

        return ordered(self.frames), ordered(self.times), ordered(self.currents)

    #: DAC-time model: the buffer playing at ``t`` and its DAC time, unless that time is more
    #: than ``OUTLIER_S`` off the median of (time − frame/rate) over the buffers of the last
    #: ``WINDOW_S`` (after the last jump larger than ``JUMP_S``: a stall or an underrun moves
    #: the whole line); then the median.  Per-buffer DAC times jitter by
    #: 0.02 ms on an idle machine and ±1 ms on a loaded one (the callback runs late); the
    #: median of ~30 buffers does not.  The drift over the window is ppm of 0.3 s.
    WINDOW_S = 0.3
    JUMP_S = 0.002
    OUTLIER_S = 0.0002

    #: Settling (``settled``): PortAudio's DAC times of a PulseAudio stream (ALSA ``pulse``
    #: plugin: libpulse's interpolated latency) wander by up to ±5 ms over the stream's first
    #: ~12 s and then settle, while the sound itself (an observer on the sink's monitor) and
    #: the callback times keep one steady line (measured: within 0.1 ms).  The lower envelope
    #: of the callback times over ``ENVELOPE_S`` is a steady reference: the DAC line is
    #: settled once (DAC line − envelope), in ``BIN_S`` bins, has stayed within ``SETTLE_TOL_S``
    #: for ``SETTLE_SPAN_S``.  The callbacks of the first ``PREFILL_S`` (the device's buffer
    #: filled in a burst: early callback times) are left out of the envelope: with them, a 1 s
    #: test fired on a plateau 95 ms off.  Measured on the null sink, 4 streams under load
    #: (2026-12-01): a 1 s span of 0.1 s bins within 0.2 ms fired 1.5-3.2 s into a stream
    #: (once 9 s, after a disruption), within 0.6 ms of the line's later value; the former
    #: 3 s span of 0.25 s bins fired at 5-25 s or never.
    ENVELOPE_S = 2.0
    PREFILL_S = 0.5
    BIN_S = 0.1
    SETTLE_SPAN_S = 1.0
    SETTLE_TOL_S = 0.0002

    def dac_minus_envelope(self, span: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(bin end times, median DAC line − callback-time envelope per bin) over the last
        ``span`` s, or None without callback times (a host API that gives none)."""
        frames, times, cur = self.triples()
        ok = np.isfinite(cur) & (cur > 0)
        if not ok.any():
            return None
        # the device's first buffers are asked for in a burst (its buffer is filled at once):
        # their callback times are early and would pull the envelope down
        ok &= times >= (times[0] if self.first_time is None else self.first_time) + self.PREFILL_S
        if not ok.any():
            return None
        frames, times, cur = frames[ok], times[ok], cur[ok]
        end = times[-1]
        lo = int(np.searchsorted(times, end - span - self.ENVELOPE_S, side="left"))
        frames, times, cur = frames[lo:], times[lo:], cur[lo:]
        base = frames / self.rate
        c_off, d_off = cur - base, times - base
        ends = end - self.BIN_S * np.arange(int(round(span / self.BIN_S)))[::-1]
        out = []
        for b in ends:
            inbin = (times > b - self.BIN_S) & (times <= b)
            env = (cur > b - self.ENVELOPE_S) & (cur <= b)
            if not inbin.any() or not env.any():
                out.append(np.nan)
                continue
            out.append(float(np.median(d_off[inbin]) - c_off[env].min()))
        return ends, np.array(out)

    def settled(self, min_age: float = 0.5) -> tuple[bool, float | None]:
        """(whether the DAC line has settled, its spread over the last ``SETTLE_SPAN_S`` in s).
        True without callback times to judge by."""
        if self.first_time is None or self.n == 0:
            return False, None
        last = self.times[(self.n - 1) % self.size]
        if last - self.first_time < min_age + self.SETTLE_SPAN_S:
            return False, None
        got = self.dac_minus_envelope(self.SETTLE_SPAN_S)
        if got is None:
            return True, None
        d = got[1]
        if np.isnan(d).any():
            return False, None
        spread = float(d.max() - d.min())
        return spread <= self.SETTLE_TOL_S, spread

    def frame_at(self, t: float, settle: float = 0.0) -> float | None:
        """Frame heard at time ``t`` (pairs from the first ``settle`` seconds are skipped when
        later ones exist: their times are unreliable)."""
        frames, times = self.pairs()
        if frames.shape[0] == 0:
            return None
        if settle and self.first_time is not None:
            ok = times >= self.first_time + settle
            if ok.any():
                frames, times = frames[ok], times[ok]
        k = int(np.searchsorted(times, t, side="right")) - 1
        k = min(max(k, 0), frames.shape[0] - 1)
        lo = int(np.searchsorted(times, times[k] - self.WINDOW_S, side="left"))
        off = times[lo:k + 1] - frames[lo:k + 1] / self.rate
        if off.shape[0] >= 2:
            jumps = np.flatnonzero(np.abs(np.diff(off)) > self.JUMP_S)
            if jumps.size:
                off = off[jumps[-1] + 1:]
        own = float(frames[k] + (t - times[k]) * self.rate)
        self.last = {"frame": int(frames[k]), "dac": float(times[k]), "window": int(off.shape[0])}
        if off.shape[0] < 3:
            self.last.update(mode="own", residual=None)
            return own
        med = float(np.median(off))
        res = (times[k] - frames[k] / self.rate) - med
        self.last.update(residual=float(res), median_off=med)
        if abs(res) <= self.OUTLIER_S:
            self.last["mode"] = "own"
            return own  # a buffer on the line: its own DAC time (exact where they agree)
        self.last["mode"] = "median"
        return float((t - med) * self.rate)


