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
        from reader.base.clock import SYSTEM_CLOCK

        end = SYSTEM_CLOCK.seconds() + timeout  # (a real wait: it sleeps)
        while True:
            item = self.get_nowait()
            if item is not EMPTY or SYSTEM_CLOCK.seconds() >= end:
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
                 tail_blocks: int = 0, lead_blocks: int = 0, ahead_blocks: int = 0):
        super().__init__(name="karuta-feeder", daemon=True)
        #: commands act this many blocks ahead of the device (the queue without running ahead)
        self.near = max(2, int(maxblocks))
        #: ... or as few as this when speech would otherwise begin before they act (``_cut``)
        self.soon = max(2, self.near // 3)
        #: how far to run ahead when the cursor and the ring allow it (see ``_run_ahead``)
        self.ahead = int(ahead_blocks)
        self.wake = threading.Event()
        self.cuts = 0  # times queued audio was dropped and made again for a command
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
        if self._can_run_ahead():
            return self._run_ahead()
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

    # ------------------------------------------------------------------ running ahead
    def _can_run_ahead(self) -> bool:
        q, c = self.q, self.cursor
        return (self.ahead > self.near and hasattr(q, "truncate") and hasattr(q, "consumed")
                and hasattr(c, "checkpoint") and hasattr(c, "rewind"))

    def _run_ahead(self) -> None:
        """Keep up to ``ahead`` blocks queued (seconds: a stall of the app's process — the GIL
        held by a thread the CPU-bound programs keep off the CPU, a redraw, a garbage
        collection — is bridged by what is queued), yet let commands act ``near`` blocks ahead
        of the device as before: on a command the blocks queued beyond that point are dropped
        (``q.truncate``), the cursor goes back to its checkpoint there (``rewind``) and reads on
        with the command.  ``cursor.view`` shows the UI the cursor's state at that point.

        Each queued item keeps ``(checkpoint before it or None, cursor state after it, its
        stream frame)`` in ``_hist`` (by item index; the ring's absolute write count)."""
        q, cursor, bs = self.q, self.cursor, self.blocksize
        target = min(self.ahead, q.capacity)
        self._hist = [None] * (q.capacity + 2)
        self._w = 0
        self._first = self.lead_blocks  # the first item made by the cursor
        ended = False
        try:
            silence = self.convert(np.zeros(bs, np.float32))
            start = (None, cursor.state_at_head, 0)
            for k in range(self.lead_blocks, 0, -1):
                if not self._emit((-k * bs, silence), start):
                    return
            cursor.on_command = self.wake.set
            cursor.view = self._view
            phase, tail_left, final = "body", self.tail_blocks, None
            while not self.halt.is_set():
                self.wake.clear()
                if cursor.commands_pending and self._cut():
                    phase, tail_left, ended = "body", self.tail_blocks, False
                if phase == "end" or len(q) >= target:
                    self.prefilled.set()
                    self.wake.wait(0.1)  # a command sets it
                    continue
                if phase == "body":
                    cp = cursor.checkpoint()
                    block = cursor.read(bs)
                    n = block.shape[0]
                    if n == 0:
                        phase, final = "tail", cursor.state_at_head
                        continue
                    if n < bs:
                        block = np.concatenate([block, np.zeros(bs - n, np.float32)])
                    item, entry = (self.frames, self.convert(block)), \
                        (cp, cursor.state_at_head, self.frames)
                    self.frames += bs
                elif tail_left > 0:
                    # silence after the end, so closing the stream cuts no sound that is
                    # still in the device's / sound server's buffer
                    item, entry = (self.frames, silence), (None, final, self.frames)
                    self.frames += bs
                    tail_left -= 1
                else:
                    item, entry, phase = None, (None, final, self.frames), "end"
                if not self._emit(item, entry):
                    return
                if item is None:
                    ended = True
                if len(q) >= self.near:
                    self.prefilled.set()
        except BaseException as e:  # surfaced by Output.wait()
            self.error = e
        finally:
            cursor.view = None
            cursor.on_command = None
            self.prefilled.set()
            if not ended:
                self._put(None)

    def _emit(self, item, entry) -> bool:
        self._hist[self._w % len(self._hist)] = entry  # before the item is published
        if not self._put(item):
            return False
        self._w += 1
        return True

    def _view(self):
        """The cursor's state ``near`` blocks ahead of the device (any thread)."""
        try:
            v = min(self._w, self.q.consumed() + self.near) - 1
            if v < 0:
                return None
            entry = self._hist[v % len(self._hist)]
        except Exception:  # noqa: BLE001 - the ring is gone (playback over): the head's state
            return None
        return None if entry is None else entry[1]

    def _cut(self) -> bool:
        """A command is waiting: drop what is queued beyond ``near`` blocks ahead of the
        device and take the cursor back there (the command then acts there).  If speech (a
        segment, or a repeated 下の句) begins before that point but at least ``soon`` blocks
        ahead of the device, the cut is made where it begins instead: a command acts on what
        the ear is at, so a hold pressed in a silence stands in that silence rather than after
        the line that had not begun yet (at the end of a reading, after the last line: not
        at all).  False when nothing is queued beyond that point, or it is past the
        reading's end."""
        for _ in range(20):
            done = self.q.consumed()
            c = max(done + self.near, self._first)
            early = self._speech_begins(max(done + self.soon, self._first), min(c, self._w))
            if early is not None:
                c = early
            elif c >= self._w:
                return False
            entry = self._hist[c % len(self._hist)]
            if entry is None or entry[0] is None:
                return False
            if self.q.truncate(c):
                break
            # the device reached c meanwhile (this thread was kept off the CPU or the GIL for
            # ``near`` blocks): again from where it is now
        else:
            return False
        self._w = c
        self.cursor.rewind(entry[0])
        self.frames = entry[2]
        self.cuts += 1
        return True

    def _speech_begins(self, lo: int, hi: int) -> int | None:
        """The first queued item in ``[lo, hi)`` in which speech begins (by the cursor states
        kept in ``_hist``), or None."""
        hist, n = self._hist, len(self._hist)
        for j in range(max(lo, 1), hi):
            before, after = hist[(j - 1) % n], hist[j % n]
            if before is None or after is None or after[0] is None:
                continue
            b, a = before[1], after[1]
            if a.repeating is not None and b.repeating is None:
                return j
            seg = a.segment
            if seg is not None and seg.is_speech and a.repeating is None \
                    and b.position <= seg.start < a.position:
                return j
        return None
