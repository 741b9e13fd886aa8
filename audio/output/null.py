"""Outputs without a device: ``NullOutput`` (real time, sound discarded: ``--dry-run``) and
``SyncOutput`` (as fast as the cursor gives, no real time: tests and tools that want what
would have been played).  Both keep the blocks they consumed when asked (``keep=True``)."""
from __future__ import annotations

import threading
import time

import numpy as np

from audio.output.base import Output
from audio.output.feeder import EMPTY

__all__ = ["NullOutput", "SyncOutput"]


class _Keeper:
    """The blocks an output without a device consumed, in order (``keep=True``)."""

    def _keep_init(self, keep: bool) -> None:
        self.keep = keep
        self._kept: list[np.ndarray] = []

    def _consume(self, block) -> None:
        if self.keep:
            self._kept.append(block)

    def samples(self) -> np.ndarray:
        """Everything played so far (lead-in and padding included), float32."""
        if not self._kept:
            return np.zeros(0, np.float32)
        return np.concatenate(self._kept)


class NullOutput(_Keeper, Output):
    """Plays nothing: consumes the cursor in real time (``blocksize`` frames every
    ``blocksize / sample_rate`` s, on an absolute schedule) for ``--dry-run``.  ``frame_at``
    is exact against ``time.perf_counter`` (its ``now()``).  A block the feeder has not made
    by its due time is an underflow (counted; the schedule goes on), as on a real device."""

    dac_timeline = True

    def __init__(self, sample_rate: int = 48000, blocksize: int = 480, queue_ms: float = 100.0,
                 keep: bool = False):
        self.sample_rate = int(sample_rate)
        self.blocksize = int(blocksize)
        self.queue_ms = queue_ms
        self._keep_init(keep)
        self._init_state()

    def _start(self) -> None:
        self._kept = []
        self._thread = threading.Thread(target=self._run, name="karuta-null", daemon=True)
        self._thread.start()

    def _run(self):
        period = self.blocksize / self.sample_rate
        t0 = time.perf_counter()
        k = 0
        q = self._feeder.q
        try:
            while not self._halt.is_set():
                due = t0 + k * period
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                item = q.get_nowait()
                if item is EMPTY:
                    self.underflows += 1
                    self._consume(np.zeros(self.blocksize, np.float32))
                    k += 1
                    continue
                if item is None:
                    break
                self.timeline.record(item[0], due)
                self._consume(item[1])
                k += 1
        finally:
            self._done.set()


class SyncOutput(_Keeper, Output):
    """No device and no real time: a thread takes every block as soon as the feeder has made
    it (never an underflow: it waits, as a clockless device does).  Its clock is the stream
    itself: ``now()`` is the frames consumed / rate, so ``frame_at(now())`` is the frame
    just consumed.  ``keep=True`` (default) keeps the blocks (``samples()``)."""

    def __init__(self, sample_rate: int = 48000, blocksize: int = 480, queue_ms: float = 100.0,
                 keep: bool = True):
        self.sample_rate = int(sample_rate)
        self.blocksize = int(blocksize)
        self.queue_ms = queue_ms
        self._keep_init(keep)
        self._consumed = 0
        self._init_state()

    def _start(self) -> None:
        self._kept = []
        self._consumed = 0
        self._thread = threading.Thread(target=self._run, name="karuta-sync", daemon=True)
        self._thread.start()

    def _run(self):
        q = self._feeder.q
        try:
            while not self._halt.is_set():
                item = q.get(timeout=0.05)
                if item is EMPTY:
                    continue
                if item is None:
                    break
                frame, block = item
                self.timeline.record(frame, frame / self.sample_rate)
                self._consume(block)
                self._consumed = frame + self.blocksize
        finally:
            self._done.set()

    def now(self) -> float:
        return self._consumed / self.sample_rate

    def perf_to_now(self, t_perf: float) -> float:
        return self.now()
