"""The parent's side of the audio process (``audio_process.py``): the shared-memory ring the
feeder writes into, the timeline read from shared memory, and the child's life."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from reader.base.procs import end_helper

from audio.output import audio_process as ap
from audio.output.timeline import Timeline

__all__ = ["SharedRing", "SharedTimeline", "AudioProcess"]


class SharedRing:
    """The feeder's side of the shared ring (``BlockRing``'s producer interface)."""

    def __init__(self, lay: ap.SharedLayout, capacity: int | None = None):
        self.lay = lay
        self.capacity = min(lay.nblocks, capacity or lay.nblocks)

    def __len__(self) -> int:
        return int(self.lay.ctl[ap.W] - self.lay.ctl[ap.R])

    def full(self) -> bool:
        return len(self) >= self.capacity

    def empty(self) -> bool:
        return len(self) == 0

    def consumed(self) -> int:
        """Items the child has taken (its absolute read count)."""
        return int(self.lay.ctl[ap.R])

    def truncate(self, w: int) -> bool:
        """Drop the queued items from absolute index ``w`` on (the producer writes there
        next); False (nothing changed) if the child has reached ``w`` meanwhile.  The child
        treats ``R >= W`` as empty, so while ``W`` is briefly below its read count it plays
        silence (counted), never a stale slot."""
        ctl = self.lay.ctl
        old = int(ctl[ap.W])
        if w >= old or int(ctl[ap.R]) >= w:
            return False
        ctl[ap.W] = w
        if int(ctl[ap.R]) >= w:  # the child got there between the two readings: undo
            ctl[ap.W] = old
            return False
        return True

    def put(self, item, halt: threading.Event, poll_s: float = 0.002, on_full=None) -> bool:
        ctl = self.lay.ctl
        while int(ctl[ap.W] - ctl[ap.R]) >= self.capacity:
            if on_full is not None:
                on_full()
            if halt.is_set():
                return False
            time.sleep(poll_s)
        if halt.is_set():
            return False
        w = int(ctl[ap.W])
        k = w % self.lay.nblocks  # the slot the child reads (capacity only limits the fill)
        if item is None:
            self.lay.ring_frames[k] = ap.END
        else:
            frame, block = item
            self.lay.ring[k] = block
            self.lay.ring_frames[k] = frame
        ctl[ap.W] = w + 1  # publish after the slot is written
        return True


class SharedTimeline(Timeline):
    """A ``Timeline`` over the child's shared arrays (read-only here)."""

    def __init__(self, rate: int, lay: ap.SharedLayout):
        super().__init__(rate, size=1)
        self.size = lay.tl_size
        self.frames, self.times, self.currents = lay.tl_frames, lay.tl_times, lay.tl_cur
        self._ctl = lay.ctl

    @property
    def n(self) -> int:
        return int(self._ctl[ap.TL_N]) if self._ctl is not None else 0

    @n.setter
    def n(self, value) -> None:  # Timeline.__init__ sets it
        pass

    @property
    def first_time(self):
        return float(self.times[0]) if self.n else None

    @first_time.setter
    def first_time(self, value) -> None:
        pass

    @property
    def first_frame(self):
        return int(self.frames[0]) if self.n else None

    @first_frame.setter
    def first_frame(self, value) -> None:
        pass

    def snapshot(self) -> Timeline:
        """A plain copy (kept after the shared block is gone)."""
        frames, times, cur = self.triples()
        tl = Timeline(self.rate, size=max(1, frames.shape[0]))
        for f, t, c in zip(frames, times, cur):
            tl.record(int(f), float(t), float(c))
        return tl


class AudioProcess:
    """One child playing one stream; ``open()`` returns its latency or raises ``OSError``
    with the child's one-line reason.  ``timeline``: (shared block, ``TimelineLayout``, its
    JSON spec) of a timeline source the child plays instead of the ring (``timed.py``);
    closed with the rest.  The one place that decides whether the child ended by itself
    (``start``'s watch): ``lost`` (the stream ended before the reading did) or ``died``."""

    def __init__(self, device: int, rate: int, blocksize: int, channels: int, dtype: str,
                 latency, lead_frames: int = 0, timeline=None):
        from multiprocessing import shared_memory

        self.shm = shared_memory.SharedMemory(create=True,
                                              size=ap.SharedLayout.size(blocksize, dtype))
        self.lay = ap.SharedLayout(self.shm.buf, blocksize, dtype)
        self.lay.ctl[:] = 0
        self.lay.clk[:] = np.nan
        self.args = [str(self.shm.name), str(device), str(rate), str(blocksize), str(channels),
                     dtype, str(latency), str(int(lead_frames))]
        self.timeline = timeline
        if timeline is not None:
            import json

            self.args.append(json.dumps(timeline[2]))
        self.proc: subprocess.Popen | None = None
        self.done = threading.Event()
        self.died: str | None = None
        self.aborted = False  # stopped by the parent (``abort``): its end is no death
        self.lost = False  # the device stopped the stream before the reading's end

    def open(self) -> float:
        self.proc = subprocess.Popen([sys.executable, "-S", str(Path(ap.__file__)), *self.args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1, env=_child_env())
        line = self.proc.stdout.readline().strip()
        if not line.startswith("open "):
            why = line.removeprefix("error ").strip() or self._ended_how()
            self.close()
            raise OSError(why)
        return float(line.split()[1])

    def _ended_how(self) -> str:
        """Why a child that said nothing did not start: how it ended (a signal's name, its exit
        status), so a crash in the sound library is told apart from a refusal."""
        import signal

        try:
            rc = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return "the audio process did not start (it said nothing and is still running)"
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"the audio process did not start (it ended by {name})"
        return f"the audio process did not start (it ended with exit status {rc})"

    def start(self, on_done) -> None:
        self.proc.stdin.write("start\n")
        self.proc.stdin.flush()

        p = self.proc

        def watch():
            line = p.stdout.readline().strip()
            if line == "lost":
                self.lost = True
                self.died = "stopped during the reading"
            elif line != "done" and not self.aborted:
                self.died = f"the audio process ended unexpectedly (exit {p.wait()})"
            self.done.set()
            on_done()

        threading.Thread(target=watch, name="karuta-audio-watch", daemon=True).start()

    def reopen(self) -> None:
        """Close the stream and play on in a new one (a timeline source's: see
        ``timed.REOPEN_LEAD_S``)."""
        self._say("reopen")

    def _say(self, cmd: str) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        try:
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def abort(self) -> None:
        p = self.proc
        if p is None or p.poll() is not None:
            return
        self.aborted = True
        try:
            p.stdin.write("abort\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def close(self) -> None:
        p = self.proc
        if p is not None:
            end_helper(p, timeout=2.0)
            p.stdout.close()
            self.proc = None
        if self.shm is not None:
            self.lay.release()
            try:
                self.shm.close()
                self.shm.unlink()
            except (BufferError, FileNotFoundError):
                pass
            self.shm = None
        if self.timeline is not None:
            shm, lay, _ = self.timeline
            lay.release()
            try:
                shm.close()
                shm.unlink()
            except (BufferError, FileNotFoundError):
                pass
            self.timeline = None


def _child_env():
    """The child runs with ``-S`` (no site: fast start) and finds numpy and sounddevice on
    this interpreter's path."""
    import os

    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env
