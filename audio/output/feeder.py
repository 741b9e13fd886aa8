"""The feeder: a thread that turns the cursor into device blocks ahead of the device, and the
lock-free ring of blocks the device side takes them from.

    cursor.read(blocksize) ──feeder thread──> BlockRing ──get_nowait()──> callback / player

The ring is single producer (the feeder), single consumer (the realtime side).  Its slots and
counters are plain Python objects written once each (an int assignment is atomic under the
GIL), so the consumer takes a block without a lock, without waiting and without allocating:
``get_nowait()`` returns the ``(stream_frame, block)`` or ``EMPTY``; never blocks.  Only the
producer ever waits (a short sleep while the ring is full).
"""
from __future__ import annotations

import threading
import time

import numpy as np

__all__ = ["BlockRing", "EMPTY", "Feeder"]

#: what ``BlockRing.get_nowait`` returns when no block is ready (``None`` is the end mark)
EMPTY = object()


class BlockRing:
    """A bounded single-producer single-consumer ring of ``(frame, block)`` items (``None``:
    the end).  ``capacity`` items."""

    def __init__(self, capacity: int):
        self.capacity = max(2, int(capacity))
        self._slots: list = [None] * self.capacity
        self._w = 0  # items put (producer only)
        self._r = 0  # items taken (consumer only)

    def __len__(self) -> int:
        return self._w - self._r

    def full(self) -> bool:
        return self._w - self._r >= self.capacity

    def empty(self) -> bool:
        return self._w == self._r

    def put(self, item, halt: threading.Event, poll_s: float = 0.002,
            on_full=None) -> bool:
        """Put ``item`` (producer), sleeping ``poll_s`` at a time while the ring is full;
        False if ``halt`` was set first.  ``on_full()`` is called each time it finds it full."""
        while self._w - self._r >= self.capacity:
            if on_full is not None:
                on_full()
            if halt.is_set():
                return False
            time.sleep(poll_s)
        if halt.is_set():
            return False
        self._slots[self._w % self.capacity] = item
        self._w += 1  # publish after the slot is written
        return True

    def get_nowait(self):
        """The next item, or ``EMPTY`` (consumer; never waits, never allocates)."""
        r = self._r
        if r == self._w:
            return EMPTY
        k = r % self.capacity
        item = self._slots[k]
        self._slots[k] = None
        self._r = r + 1
        return item

    def get(self, timeout: float, poll_s: float = 0.001):
        """The next item, waiting up to ``timeout`` s (for consumers that are not realtime
        callbacks: the pygame player thread); ``EMPTY`` if none came."""
        end = time.perf_counter() + timeout
        while True:
            item = self.get_nowait()
            if item is not EMPTY or time.perf_counter() >= end:
                return item
            time.sleep(poll_s)


def _raise_priority(nice: int = -10) -> None:
    """Ask for a better nice value for this thread (Linux: per thread), where allowed (root,
    CAP_SYS_NICE, a raised nice limit): CPU-bound programs then take its time less often."""
    import os

    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):
        pass


class Feeder(threading.Thread):
    """Reads blocks of exactly ``blocksize`` frames from the cursor (the last one padded with
    silence) and puts ``(stream_frame, block)`` on a ``BlockRing`` of ``maxblocks``, then
    ``None`` at the end.  ``convert`` turns a float32 block into what the device takes (done
    here, never on the realtime side).  ``lead_blocks`` of silence go first (negative stream
    frames), ``tail_blocks`` after the end.  An exception is kept in ``error`` and ends the
    stream.  ``prefilled`` is set once the ring is full (or the reading ended)."""

    def __init__(self, cursor, blocksize: int, maxblocks: int, convert,
                 tail_blocks: int = 0, lead_blocks: int = 0):
        super().__init__(name="karuta-feeder", daemon=True)
        self.tail_blocks = tail_blocks
        self.lead_blocks = lead_blocks
        self.cursor = cursor
        self.blocksize = blocksize
        self.q = BlockRing(maxblocks)
        self.convert = convert
        self.halt = threading.Event()
        self.prefilled = threading.Event()
        self.error: BaseException | None = None
        self.frames = 0  # stream frames put on the ring (padding included)
        self._poll_s = min(0.002, blocksize / 48000 / 4)

    def _put(self, item) -> bool:
        return self.q.put(item, self.halt, self._poll_s, self.prefilled.set)

    def run(self):
        _raise_priority()
        try:
            # silence before the reading (negative stream frames): device start-up effects
            # fall on it, not on the first sound
            silence = self.convert(np.zeros(self.blocksize, np.float32))
            for k in range(self.lead_blocks, 0, -1):
                if not self._put((-k * self.blocksize, silence)):
                    return
            while not self.halt.is_set():
                block = self.cursor.read(self.blocksize)
                n = block.shape[0]
                if n == 0:
                    # silence after the end, so closing the stream cuts no sound that is
                    # still in the device's / sound server's buffer
                    for _ in range(self.tail_blocks):
                        frame = self.frames
                        self.frames += self.blocksize
                        if not self._put((frame, silence)):
                            return
                    break
                if n < self.blocksize:
                    block = np.concatenate([block, np.zeros(self.blocksize - n, np.float32)])
                frame = self.frames
                self.frames += self.blocksize
                if not self._put((frame, self.convert(block))):
                    return
                if self.q.full():
                    self.prefilled.set()
        except BaseException as e:  # surfaced by Output.wait()
            self.error = e
        finally:
            self.prefilled.set()
            self._put(None)
