"""Turning a ``Plan`` into sound: the block-by-block ``PlanCursor`` and whole-file rendering.

Who calls what:

  - ``PlanCursor(plan, voice, live=..., start_segment=...)``: the playback backends (``audio.output``) call
    ``read(n)`` from their feeder thread; the session (UI / key thread) calls ``release()``,
    ``hold()``, ``resume()``, ``repeat_last_shimo()``, ``stop()`` and reads ``state``,
    ``plan_frame_at()``, ``stream_frame_at()``, ``segment_at()``.
  - ``render(plan, voice)``: the whole reading as one float32 array (tests, short plans).
  - ``render_to_file(plan, voice, path)``: ``karuta render``; streams the reading to a file in
    blocks, so a 100-card reading (~35 min) never sits in memory whole.
  - ``write_audio(samples, rate, path)``: write an array (or an iterable of blocks) to WAV/FLAC
    (soundfile) or MP3/OGG (ffmpeg, the encoder pydub is configured with).

Units: every position, length and offset here is in **frames** at ``plan.sample_rate`` (mono,
so a frame is one sample) unless a name ends in ``_ms``.

Two timelines:

  - the *plan* timeline: ``Segment.start``/``end`` frames.  A file is exactly this timeline.
  - the *stream* timeline: frames the cursor has produced (``emitted``).  Without interaction
    it equals the plan timeline.  Live waits, holds and repeated 下の句 add stream frames that
    do not advance the plan; a release skips plan frames.  ``anchors`` records every place the
    mapping changes, so a stream frame (e.g. when a key was pressed, from the output's DAC
    clock) maps back to the plan (``plan_frame_at``) and the other way (``stream_frame_at``).
"""
from __future__ import annotations

import bisect
import collections
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np

from reader.base.errors import AudioFileError, OutputError
from reader.base.statefiles import OUTPUT_MARK, check_output
from audio.plan import Plan, Segment

__all__ = [
    "Anchor", "CursorState", "PlanCursor", "render", "render_to_file", "write_audio",
    "quantize16", "FORMATS",
]

#: default block size of file rendering, frames (~1.4 s at 48 kHz: big enough to be fast,
#: small enough that memory stays flat)
RENDER_BLOCK = 65536

#: output formats by file suffix -> how they are written
FORMATS = {"wav": "soundfile", "flac": "soundfile", "mp3": "ffmpeg", "ogg": "ffmpeg"}
_SUBTYPES = ("PCM_16", "PCM_24", "FLOAT")


def quantize16(x: np.ndarray) -> np.ndarray:
    """float32 [-1, 1] -> int16, clipped, ``round(x * 32767)``.

    The one conversion used for 16-bit files, 16-bit device streams and the tests, so a
    captured stream can be compared bit for bit with a rendered file.
    """
    y = np.clip(x, -1.0, 1.0) * 32767.0
    return np.rint(y).astype(np.int16)


class Anchor(NamedTuple):
    """A point where the stream -> plan mapping changes.

    From ``stream_frame`` on (until the next anchor) the plan is at ``plan_frame`` and, when
    ``advancing``, moves one plan frame per stream frame; otherwise it stands still (a live
    wait, a hold, or a repeated 下の句 — ``insert`` is then that 下の句's plan segment).
    ``event``: "start", "wait", "release", "hold", "resume", "repeat", "repeat-end", "restart",
    "stop", "end".
    """

    stream_frame: int
    plan_frame: int
    advancing: bool
    event: str
    insert: Segment | None = None


@dataclass(frozen=True)
class CursorState:
    """A snapshot for the UI, taken after each ``read``.  Describes the cursor's *head*, which
    runs ahead of what is heard by the output's queue (≤ ~100 ms) plus its latency; to know
    what is audible map the output's ``frame_now()`` through ``PlanCursor.segment_at``."""

    index: int  # index of the current plan segment (len(segments) when finished)
    segment: Segment | None
    position: int  # plan frame
    emitted: int  # stream frame
    waiting: bool  # live mode, standing at a wait segment until release()
    held: bool  # hold() in force
    repeating: Segment | None  # the 下の句 being repeated, if any
    finished: bool


class _Samples:
    """Voice samples fetched ahead on one worker thread (``voice.prefetch`` first when the
    voice has it).  Called only by the cursor's reading thread."""

    def __init__(self, voice, threaded: bool):
        self.voice = voice
        self.rate = voice.sample_rate
        self._futures: dict = {}
        self._threaded = threaded
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="karuta-voice") if threaded else None
        self._prefetch = getattr(voice, "prefetch", None)
        self.prefetch_error: Exception | None = None

    def request(self, items) -> None:
        new = [it for it in dict.fromkeys(items) if it not in self._futures]
        if not new:
            return
        if self._pool is None and self._threaded:  # closed at the plan's end, then rewound
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="karuta-voice")
        if self._pool is None:
            for it in new:
                self._futures[it] = None  # fetched on demand
            return
        if callable(self._prefetch):
            self._pool.submit(self._safe_prefetch, new)
        for it in new:
            self._futures[it] = self._pool.submit(self.voice.samples, it)

    def _safe_prefetch(self, items):
        try:
            self._prefetch(items)
        except Exception as e:  # prefetch is only a hint: samples() reports real failures,
            self.prefetch_error = e  # and this one is kept for a debugger, not lost

    def get(self, item, frames: int) -> np.ndarray:
        fut = self._futures.get(item)
        if isinstance(fut, Future):
            data = fut.result()
        elif isinstance(fut, np.ndarray):
            data = fut
        else:
            data = self.voice.samples(item)
        data = np.asarray(data, dtype=np.float32).reshape(-1)
        if data.shape[0] != frames:
            raise AudioFileError(
                f"voice {getattr(self.voice, 'name', '?')!r} gave {data.shape[0]} frames for "
                f"{item.key} {item.part}, its layout promised {frames}")
        self._futures[item] = data
        return data

    def keep_only(self, items) -> None:
        keep = set(items)
        for it in list(self._futures):
            if it not in keep:
                fut = self._futures.pop(it)
                if isinstance(fut, Future):
                    fut.cancel()

    def forget_cancelled(self) -> None:
        """Drop requests cancelled by ``close`` (a rewind asks for them again)."""
        for it, fut in list(self._futures.items()):
            if isinstance(fut, Future) and fut.cancelled():
                del self._futures[it]

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True, eq=False)
class _Head:
    """Everything a ``PlanCursor``'s reading thread changes as it reads, but its anchors (they
    only grow: a rewind cuts them back to their count at the checkpoint).  Replaced, never
    changed, so a checkpoint keeps the object itself and a rewind puts it back."""

    i: int  # the plan segment at the head
    off: int = 0  # frames of it produced
    emitted: int = 0  # stream frames produced
    held: bool = False
    release_pending: bool = False  # a release while held: applied on resume
    release_at_wait: bool = False  # a release during the 上の句 before a wait
    repeat_pending: bool = False  # a repeat asked for during a speech segment
    insert: Segment | None = None  # the 下の句 being repeated
    insert_data: np.ndarray | None = None
    insert_off: int = 0
    restart_after_insert: bool = False  # the repeat came in the middle of a ma: it restarts
    restart_on_resume: bool = False  # held in the middle of a ma: it restarts
    stopped: bool = False
    frozen: bool = False  # whether the last anchor is not advancing
    last_shimo: Segment | None = None  # the last 下の句 begun (before the start, at first)


class _Draft:
    """A ``_Head`` being changed by one ``read`` (plain attributes: the read loop is hot),
    frozen again at its end.  It has exactly the head's fields."""

    __slots__ = tuple(f.name for f in fields(_Head))

    def __init__(self, head: _Head):
        for k in self.__slots__:
            setattr(self, k, getattr(head, k))

    def to_head(self) -> _Head:
        return _Head(**{k: getattr(self, k) for k in self.__slots__})


class _Checkpoint(NamedTuple):
    head: _Head
    anchors: int  # how many anchors there were
    state: CursorState


class PlanCursor:
    """Produces a plan's frames in order, block by block, sample-exact.

    ``read(n)`` is called by one thread only (a backend's feeder, or the file renderer).  The
    command methods (``release``, ``hold``, ``resume``, ``repeat_last_shimo``, ``stop``) may
    be called from any thread: they only append to a queue and return at once; the reading
    thread applies them at the start of its next ``read`` (so they act within one queued
    block plus the output's latency).

    Modes:
      - ``live=False`` (auto mode, and files): a ``take`` (``wait=True``) lasts its planned
        length.  ``hold()`` pauses that countdown (silence, plan frozen) until ``resume()``;
        ``release()`` during a take skips its rest.
      - ``live=True``: at a ``wait`` segment the cursor emits silence, the plan frozen at the
        segment's start, until ``release()``; then the rest of the take is skipped and the next
        segment begins.  A ``release()`` while ``hold()`` is in force is kept and applied on
        ``resume()`` (a hand is up: the wait goes on).  A ``release()`` during the speech just
        before a wait (the card was taken while its 上の句 was still being read) is kept: that
        wait is skipped when the 上の句 ends, as a reader goes on to the 下の句.  At any other
        point (a 下の句, a 間) it is ignored.  Auto mode does the same with its takes.

        ``hold()`` in live mode pauses the reading at the next silence boundary, also in a
        plan without waits (goshiki): at once when the head is in silence (a ``ma``, ``gap``
        or take) or between two segments, else when the speech segment it is in ends (a line
        is never cut).  Silence is emitted, the plan frozen, until ``resume()``.  Held in the
        middle of a ``ma``, the ``ma`` restarts from its beginning on ``resume()`` (the 間
        before a 上の句 stays exact, as after a repeat); any other silence goes on where it
        stood.

    ``repeat_last_shimo()`` inserts the last 下の句 that has begun again: at once when the
    cursor is in silence, else when the current speech segment ends.  Inserted into a ``ma``,
    the ``ma`` restarts from its beginning afterwards (the 間 before a 上の句 stays exact);
    into a wait or other silence, it continues where it was.

    With ``live=False`` and no commands the produced stream equals ``render(plan, voice)``.

    ``lookahead``: how many upcoming speech segments' samples are requested ahead on a worker
    thread (``threaded=True``), so the reading thread rarely waits for synthesis; it never runs
    in an audio callback.

    Running ahead (the live outputs): ``checkpoint()`` before a ``read`` and ``rewind(cp)``
    take the reading back to that point (frames produced after it are dropped: its anchors
    too), so an output can keep seconds of audio queued and still let a command act ~0.1 s
    ahead of the ear: on a command (``on_command`` is called) it drops what it queued beyond
    that, rewinds, and reads on.  ``view``, when an output sets it, returns the
    ``CursorState`` at the point commands would act (the head as the UI should see it);
    ``state``, ``position``, ``emitted``, ``current`` and ``finished`` then describe that
    point, not the far head.

    ``start_segment``: begin at segment ``i`` of the plan instead of its start (the club's step
    back and ``--resume``).  The plan is *not* re-based: plan frames, ``anchors``, ``state``
    and ``segment_at`` are those of ``plan`` (the first anchor maps stream frame 0 to plan
    frame ``plan.segments[i].start``; earlier plan frames were never produced, so
    ``stream_frame_at`` gives ``None`` for them).  The segments before ``i`` count as said:
    ``repeat_last_shimo()`` right away says the last 下の句 before segment ``i`` (its samples
    are requested ahead).  Without commands the stream equals
    ``render(plan, voice)[plan.segments[i].start:]``.
    """

    def __init__(self, plan: Plan, voice, live: bool = False, *, lookahead: int = 3,
                 threaded: bool = True, start_segment: int = 0):
        if voice.sample_rate != plan.sample_rate:
            raise AudioFileError(
                f"voice {getattr(voice, 'name', '?')!r} runs at {voice.sample_rate} Hz but the "
                f"plan at {plan.sample_rate} Hz")
        self.plan = plan
        self.voice = voice
        self.live = bool(live)
        self.sample_rate = plan.sample_rate
        self.lookahead = max(1, int(lookahead))
        self._segs = plan.segments
        self._speech_idx = [i for i, s in enumerate(self._segs) if s.is_speech]
        start_segment = int(start_segment)
        if start_segment and not 0 <= start_segment < len(self._segs):
            raise ValueError(f"start_segment {start_segment} is not in the plan "
                             f"(0-{len(self._segs) - 1})")
        self._samples = _Samples(voice, threaded)
        self._commands: collections.deque = collections.deque()
        # the reading thread's state: a frozen _Head between reads, replaced by each read
        # (which changes a _Draft of it); a checkpoint keeps it, a rewind puts it back
        self._h: _Head | _Draft = _Draft(_Head(i=start_segment, last_shimo=next(
            (s for s in reversed(self._segs[:start_segment]) if s.kind == "shimo"), None)))
        self._stop_requested = False
        self._anchors: list[Anchor] = []
        self._anchor_frames: list[int] = []
        #: called (any thread) after a command is queued; an output's feeder wakes on it
        self.on_command = None
        #: set by an output that runs ahead: () -> the CursorState commands would act at
        self.view = None
        self._anchor(0, self._position(), True, "start")
        self._h = self._h.to_head()
        self._lookahead()
        if self._h.last_shimo is not None:  # a repeat right after the start must not wait
            self._samples.request([self._h.last_shimo.speech])
        self._state = self._snapshot()

    # ------------------------------------------------------------------ commands (any thread)
    def release(self) -> None:
        """End the current wait (live) or the rest of the current take (auto).  Non-blocking."""
        self._commands.append("release")
        self._woken()

    def hold(self) -> None:
        """A hand is up: keep waiting / pause the take countdown until ``resume()``; in live
        mode also pause at the next silence boundary (see the class doc)."""
        self._commands.append("hold")
        self._woken()

    def resume(self) -> None:
        """Undo ``hold()``; a release that came during the hold is applied now."""
        self._commands.append("resume")
        self._woken()

    def repeat_last_shimo(self) -> None:
        """Say the last 下の句 that has begun again, then continue (see the class doc)."""
        self._commands.append("repeat")
        self._woken()

    def stop(self) -> None:
        """End the stream: the next ``read`` returns an empty array (``finished`` is True at
        once)."""
        self._stop_requested = True
        self._commands.append("stop")
        self._woken()

    def _woken(self) -> None:
        hook = self.on_command
        if hook is not None:
            hook()

    @property
    def commands_pending(self) -> bool:
        """A command waits for the next ``read``."""
        return bool(self._commands)

    # ------------------------------------------------------------------ running ahead (reading thread)
    def checkpoint(self) -> _Checkpoint:
        """The reading state before the next ``read`` (for ``rewind``; reading thread only)."""
        return _Checkpoint(self._h, len(self._anchors), self._state)

    def rewind(self, cp: _Checkpoint) -> None:
        """Back to ``checkpoint()`` ``cp``: the next ``read`` produces what followed it again
        (queued commands then act there).  Anchors made after it are dropped."""
        self._h = cp.head
        del self._anchor_frames[cp.anchors:]
        del self._anchors[cp.anchors:]
        self._samples.forget_cancelled()
        self._lookahead()
        if self._h.insert is not None:
            self._samples.request([self._h.insert.speech])
        self._state = cp.state

    # ------------------------------------------------------------------ observers (any thread)
    @property
    def position(self) -> int:
        """Plan frame of the cursor head."""
        return self.state.position

    @property
    def emitted(self) -> int:
        """Stream frames produced so far."""
        return self.state.emitted

    @property
    def state_at_head(self) -> CursorState:
        """The state after the last ``read`` (whatever ``view`` says)."""
        return self._state

    @property
    def state(self) -> CursorState:
        view = self.view
        if view is not None:
            st = view()
            if st is not None:
                return st
        return self._state

    @property
    def current(self) -> Segment | None:
        """The plan segment at the cursor head (the UI may prefer ``segment_at``)."""
        return self.state.segment

    @property
    def finished(self) -> bool:
        """The plan has been produced to its end, or ``stop()`` was called."""
        return self._stop_requested or self.state.finished

    @property
    def anchors(self) -> list[Anchor]:
        return list(self._anchors)

    def _anchor_before(self, stream_frame: int) -> Anchor:
        n = len(self._anchors)
        frames = self._anchor_frames[:n]
        k = bisect.bisect_right(frames, stream_frame) - 1
        return self._anchors[max(k, 0)]

    def plan_frame_at(self, stream_frame: int) -> int:
        """The plan frame heard at ``stream_frame`` (frozen spans map to where the plan stood)."""
        a = self._anchor_before(stream_frame)
        if a.advancing:
            return a.plan_frame + max(0, stream_frame - a.stream_frame)
        return a.plan_frame

    def stream_frame_at(self, plan_frame: int) -> int | None:
        """The stream frame where the plan (most recently) reached ``plan_frame``; ``None`` if
        it has not been produced (yet, or it was skipped by a release)."""
        anchors = list(self._anchors)
        end = self._h.emitted
        for k in range(len(anchors) - 1, -1, -1):
            a = anchors[k]
            nxt = anchors[k + 1].stream_frame if k + 1 < len(anchors) else end
            if a.advancing:
                if a.plan_frame <= plan_frame < a.plan_frame + (nxt - a.stream_frame):
                    return a.stream_frame + plan_frame - a.plan_frame
            elif a.plan_frame == plan_frame and a.insert is None:
                return a.stream_frame
        return None

    def segment_at(self, stream_frame: int) -> tuple[Segment | None, bool]:
        """(segment heard at ``stream_frame``, is it a repeat).  For the UI: pass the output's
        ``frame_now()``."""
        a = self._anchor_before(stream_frame)
        if a.insert is not None:
            return a.insert, True
        p = self.plan_frame_at(stream_frame)
        return self._segment_for_plan_frame(p), False

    def _segment_for_plan_frame(self, p: int) -> Segment | None:
        segs = self._segs
        lo, hi = 0, len(segs)
        while lo < hi:
            mid = (lo + hi) // 2
            if segs[mid].end <= p:
                lo = mid + 1
            else:
                hi = mid
        return segs[lo] if lo < len(segs) else None

    # ------------------------------------------------------------------ reading (one thread)
    def read(self, n: int) -> np.ndarray:
        """The next ``n`` stream frames, float32 mono.  Shorter only at the end of the plan or
        after ``stop()``; empty once finished.  May wait for synthesis if the look-ahead is
        behind (never call it from an audio callback)."""
        self._h = _Draft(self._h)
        try:
            return self._read(n)
        finally:
            self._h = self._h.to_head()

    def _read(self, n: int) -> np.ndarray:
        self._apply_commands()
        if self._h.stopped or self._h.i >= len(self._segs) and self._h.insert is None:
            self._state = self._snapshot()
            return np.zeros(0, dtype=np.float32)
        out = np.zeros(n, dtype=np.float32)
        filled = 0
        while filled < n:
            if self._h.insert is not None:
                filled += self._read_insert(out, filled)
                continue
            if self._h.i >= len(self._segs):
                break
            seg = self._segs[self._h.i]
            if self._stands(seg):
                # live wait, a held countdown, or a live hold at a silence boundary: silence,
                # plan frozen, for the rest of the block
                if not self._h.frozen:
                    if self._h.held and seg.kind == "ma" and self._h.off > 0:
                        self._h.restart_on_resume = True
                    self._anchor(self._h.emitted + filled, self._position(), False,
                                 "hold" if self._h.held else "wait")
                filled = n
                break
            if self._h.frozen:
                event = "resume"
                if self._h.restart_on_resume:
                    self._h.restart_on_resume = False
                    if seg.kind == "ma":
                        self._h.off = 0
                        event = "restart"
                self._anchor(self._h.emitted + filled, self._position(), True, event)
            take = min(n - filled, seg.frames - self._h.off)
            if seg.is_speech:
                data = self._samples.get(seg.speech, seg.frames)
                out[filled:filled + take] = data[self._h.off:self._h.off + take]
                if seg.kind == "shimo":
                    self._h.last_shimo = seg
            filled += take
            self._h.off += take
            if self._h.off >= seg.frames:
                self._h.i += 1
                self._h.off = 0
                self._lookahead()
                if self._h.release_at_wait:  # taken during that 上の句: no wait
                    self._h.release_at_wait = False
                    if self._in_wait():
                        if self._h.held and self.live:
                            self._h.release_pending = True
                        else:
                            self._h.i += 1
                            self._lookahead()
                            self._anchor(self._h.emitted + filled, self._position(), True,
                                         "release")
                if self._h.repeat_pending:  # asked for during that speech segment
                    self._h.repeat_pending = False
                    self._start_insert(self._h.emitted + filled)
        if filled < n:
            out = out[:filled]
        self._h.emitted += filled
        if self._h.i >= len(self._segs) and self._h.insert is None:
            self._anchor(self._h.emitted, self._position(), False, "end")
            self._samples.close()
        self._state = self._snapshot()
        return out

    def __iter__(self):
        """Blocks of ``RENDER_BLOCK`` frames until the end (for ``write_audio``)."""
        while True:
            block = self.read(RENDER_BLOCK)
            if block.shape[0] == 0:
                return
            yield block

    def close(self) -> None:
        """Free the look-ahead worker (the output calls it when playback ends)."""
        self._samples.close()

    # ------------------------------------------------------------------ internals
    def _stands(self, seg: Segment) -> bool:
        """Whether the head stands still (silence, plan frozen) at ``seg``."""
        if seg.wait and (self._h.held or self.live):
            return True
        # live hold: at once in silence or between segments, else after this speech segment
        return self._h.held and self.live and (not seg.is_speech or self._h.off == 0)

    def _position(self) -> int:
        if self._h.i >= len(self._segs):
            return self.plan.frames
        return self._segs[self._h.i].start + self._h.off

    def _anchor(self, stream_frame, plan_frame, advancing, event, insert=None):
        # two changes at one stream frame: both are kept, the later one rules (bisect_right)
        a = Anchor(int(stream_frame), int(plan_frame), bool(advancing), event, insert)
        self._anchors.append(a)
        self._anchor_frames.append(a.stream_frame)
        self._h.frozen = not advancing

    def _snapshot(self) -> CursorState:
        seg = self._segs[self._h.i] if self._h.i < len(self._segs) else None
        finished = self._h.stopped or (self._h.i >= len(self._segs) and self._h.insert is None)
        waiting = bool(seg is not None and seg.wait and self.live and self._h.insert is None
                       and not finished)
        h = self._h
        return CursorState(h.i, seg, self._position(), h.emitted, waiting, h.held, h.insert,
                           finished)

    def _apply_commands(self) -> None:
        while self._commands:
            cmd = self._commands.popleft()
            if cmd == "stop":
                if not self._h.stopped:
                    self._h.stopped = True
                    self._anchor(self._h.emitted, self._position(), False, "stop")
                    self._samples.close()
            elif cmd == "hold":
                self._h.held = True
            elif cmd == "resume":
                self._h.held = False
                if self._h.release_pending:
                    self._h.release_pending = False
                    self._do_release()
            elif cmd == "release":
                if self._h.held and self.live:
                    self._h.release_pending = True
                else:
                    self._do_release()
            elif cmd == "repeat":
                self._request_repeat()

    def _in_wait(self) -> bool:
        h = self._h
        return h.i < len(self._segs) and self._segs[h.i].wait and h.insert is None

    def _wait_is_next(self) -> bool:
        i = self._h.i
        return (self._h.insert is None and i + 1 < len(self._segs) and self._segs[i].is_speech
                and self._segs[i + 1].wait)

    def _do_release(self) -> None:
        if not self._in_wait():
            if self._wait_is_next():
                self._h.release_at_wait = True
            return
        self._h.i += 1
        self._h.off = 0
        self._lookahead()
        self._anchor(self._h.emitted, self._position(), True, "release")

    def _request_repeat(self) -> None:
        if self._h.insert is not None or self._h.stopped:
            return
        if self._h.i < len(self._segs):
            seg = self._segs[self._h.i]
            if seg.is_speech and self._h.off > 0:
                self._h.repeat_pending = True  # after this speech segment
                return
        self._start_insert(self._h.emitted)

    def _start_insert(self, at: int) -> bool:
        shimo = self._h.last_shimo
        if shimo is None:
            return False
        seg = self._segs[self._h.i] if self._h.i < len(self._segs) else None
        self._h.insert = shimo
        self._h.insert_data = self._samples.get(shimo.speech, shimo.frames)
        self._h.insert_off = 0
        self._h.restart_after_insert = bool(seg is not None and seg.kind == "ma"
                                            and self._h.off > 0)
        self._anchor(at, self._position(), False, "repeat", shimo)
        return True

    def _read_insert(self, out: np.ndarray, filled: int) -> int:
        data = self._h.insert_data
        take = min(out.shape[0] - filled, data.shape[0] - self._h.insert_off)
        out[filled:filled + take] = data[self._h.insert_off:self._h.insert_off + take]
        self._h.insert_off += take
        if self._h.insert_off >= data.shape[0]:
            self._h.insert = None
            self._h.insert_data = None
            if self._h.restart_after_insert:
                self._h.off = 0
            at = self._h.emitted + filled + take
            if self._h.i < len(self._segs):
                advancing = not self._stands(self._segs[self._h.i])
                self._anchor(at, self._position(), advancing,
                             "restart" if self._h.restart_after_insert else "repeat-end")
            self._h.restart_after_insert = False
        return take

    def _lookahead(self) -> None:
        k = bisect.bisect_left(self._speech_idx, self._h.i)
        upcoming = [self._segs[j].speech for j in self._speech_idx[k:k + self.lookahead]]
        keep = list(upcoming)
        last = self._last_shimo_candidate()
        if last is not None:
            keep.append(last.speech)
        self._samples.keep_only(keep)
        self._samples.request(upcoming)

    def _last_shimo_candidate(self) -> Segment | None:
        # the shimo repeat_last_shimo() would say: the last one begun (or the one just ended)
        for j in range(min(self._h.i, len(self._segs) - 1), -1, -1):
            if self._segs[j].kind == "shimo" and (j < self._h.i or self._h.off > 0):
                return self._segs[j]
        return None


# ---------------------------------------------------------------------- whole readings
def render(plan: Plan, voice) -> np.ndarray:
    """The whole reading as one float32 mono array of ``plan.frames`` frames: each speech
    segment's ``voice.samples`` at its start frame, silence elsewhere.  Holds everything in
    memory (4 bytes a frame: ~400 MB for 35 min at 48 kHz): files use ``render_to_file``."""
    if voice.sample_rate != plan.sample_rate:
        raise AudioFileError(
            f"voice {getattr(voice, 'name', '?')!r} runs at {voice.sample_rate} Hz but the plan "
            f"at {plan.sample_rate} Hz")
    out = np.zeros(plan.frames, dtype=np.float32)
    cache: dict = {}
    for seg in plan.segments:
        if seg.is_speech:
            data = cache.get(seg.speech)
            if data is None:
                data = np.asarray(voice.samples(seg.speech), dtype=np.float32).reshape(-1)
                cache = {seg.speech: data}
            if data.shape[0] != seg.frames:
                raise AudioFileError(
                    f"voice {getattr(voice, 'name', '?')!r} gave {data.shape[0]} frames for "
                    f"{seg.speech.key} {seg.speech.part}, its layout promised {seg.frames}")
            out[seg.start:seg.end] = data
    return out


def render_to_file(plan: Plan, voice, path, fmt: str | None = None, subtype: str = "PCM_16",
                   block: int = RENDER_BLOCK, replace: bool = False) -> Path:
    """Render ``plan`` with ``voice`` straight into ``path``, ``block`` frames at a time
    (memory stays flat).  Same format rules and errors as ``write_audio``."""
    cursor = PlanCursor(plan, voice, live=False, lookahead=4)

    def blocks():
        try:
            while True:
                b = cursor.read(block)
                if b.shape[0] == 0:
                    return
                yield b
        finally:
            cursor.close()

    return write_audio(blocks(), plan.sample_rate, path, fmt=fmt, subtype=subtype,
                       frames=plan.frames, replace=replace)


def _format_for(path: Path, fmt: str | None) -> str:
    if fmt is None:
        fmt = path.suffix.lstrip(".").lower()
        if not fmt:
            raise OutputError(f"cannot tell the format of {path}: give it a suffix "
                              f"({', '.join('.' + f for f in FORMATS)})")
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise OutputError(f"cannot write {fmt!r} audio ({path}): use one of "
                          f"{', '.join('.' + f for f in FORMATS)}")
    return fmt


def _check_target(path: Path, replace: bool = False) -> None:
    try:
        _check_target_(path, replace)
    except OSError as e:  # a name too long, a folder we may not look into
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None


def _check_target_(path: Path, replace: bool) -> None:
    check_output(path, "--out", replace=replace)
    parent = path.parent
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder")
    if not parent.exists():
        raise OutputError(f"cannot write {path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: {parent} is not a folder")


def _ffmpeg() -> str:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydub warns at import when ffmpeg is missing
        try:
            from pydub import AudioSegment

            converter = AudioSegment.converter
        except Exception:
            converter = "ffmpeg"
    found = shutil.which(converter)
    if not found:
        raise OutputError("MP3/OGG output needs ffmpeg, which is not installed: "
                          "install ffmpeg or write a .wav (or .flac) instead")
    return found


def _as_blocks(samples) -> Iterable[np.ndarray]:
    if isinstance(samples, np.ndarray):
        data = samples.reshape(-1) if samples.ndim != 2 else samples
        for i in range(0, max(data.shape[0], 1), RENDER_BLOCK):
            yield data[i:i + RENDER_BLOCK]
    else:
        for b in samples:
            yield np.asarray(b)


def write_audio(samples, rate: int, path, fmt: str | None = None,
                subtype: str = "PCM_16", frames: int | None = None, replace: bool = False) -> Path:
    """Write float32 mono audio to ``path``; returns the path.

    ``samples``: a numpy array, or an iterable of float32 blocks (a ``PlanCursor``, a
    generator) written as they come.  ``fmt``: "wav", "flac", "mp3", "ogg" (default: from the
    suffix).  ``subtype`` (WAV/FLAC): "PCM_16" (default), "PCM_24", "FLOAT" (WAV only).
    Samples are clipped to [-1, 1]; 16-bit uses ``quantize16``.  MP3/OGG: 16-bit PCM piped
    to ffmpeg (the converter pydub is set to).  The file is written to a temporary name in
    the same folder and moved into place at the end: a failure leaves nothing behind.
    Raises ``OutputError`` (one line) for an unwritable path, an unknown format or no ffmpeg.
    ``frames`` (when known): a WAV whose data would pass 4 GiB is written as RF64 (a WAV
    header cannot hold its length); without it such a WAV stops with ``OutputError``.
    The file gets the permissions of any new file (``umask``), not mkstemp's 0600.
    An existing file karuta did not write is refused unless ``replace`` (``check_output``).
    """
    path = Path(path)
    check_output(path, "--out", replace=replace)  # a file karuta keeps is said as such, first
    fmt = _format_for(path, fmt)
    subtype = subtype.upper()
    if subtype not in _SUBTYPES:
        raise OutputError(f"unknown sample format {subtype!r}: use PCM_16, PCM_24 or FLOAT")
    if fmt == "flac" and subtype == "FLOAT":
        raise OutputError("FLAC cannot hold FLOAT samples: use PCM_16 or PCM_24, or a .wav")
    from reader.base.files import write_target

    path = write_target(path)  # a link is written through (the link stays)
    _check_target(path, replace)
    encoder = _ffmpeg() if FORMATS[fmt] == "ffmpeg" else None
    _remove_stale_parts(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".part",
                                   dir=path.parent)
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    os.close(fd)
    if fmt == "wav" and frames is not None and frames * _BYTES[subtype] > WAV_LIMIT:
        fmt = "rf64"
    try:
        from reader.base.files import share_like_new_file

        share_like_new_file(tmp)
        if encoder is None:
            _write_soundfile(samples, rate, tmp, fmt, subtype, name=path)
        else:
            _write_ffmpeg(samples, rate, tmp, fmt, encoder)
        os.replace(tmp, path)
    except OutputError:
        _unlink(tmp)
        raise
    except OSError as e:
        _unlink(tmp)
        raise OutputError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        _unlink(tmp)
        raise
    return path


#: bytes a WAV's data chunk can hold (32-bit sizes, less room for the header)
WAV_LIMIT = 0xFFFFFFFF - 4096
_BYTES = {"PCM_16": 2, "PCM_24": 3, "FLOAT": 4}


def _remove_stale_parts(path: Path) -> None:
    """Remove ``.NAME.PID-xxxx.part`` files of renders of ``path`` whose process is gone."""
    from reader.base.files import remove_stale_temps

    remove_stale_temps(path, ".part")


def _unlink(p) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def _write_soundfile(samples, rate, tmp, fmt, subtype, name=None) -> None:
    import soundfile as sf

    try:
        f = sf.SoundFile(tmp, "w", samplerate=int(rate), channels=1, format=fmt.upper(),
                         subtype=subtype)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise OutputError(f"cannot write {fmt.upper()} {subtype}: {e}") from None
    try:
        f.software = OUTPUT_MARK  # karuta's own render may be replaced (check_output)
    except (sf.LibsndfileError, RuntimeError):
        pass
    written = 0
    try:
        _write_blocks(f, samples, fmt, subtype, written)
    except sf.LibsndfileError as e:  # libsndfile's write/close errors (a full disk)
        free = shutil.disk_usage(os.path.dirname(os.path.abspath(tmp))).free
        why = "the disk is full" if free < 1 << 20 else " ".join(str(e).split())
        raise OutputError(f"cannot write {name or 'the ' + fmt.upper() + ' file'}: {why}; nothing was written "
                          f"(the partial file was removed)") from None


def _write_blocks(f, samples, fmt, subtype, written) -> None:
    with f:
        for b in _as_blocks(samples):
            b = np.asarray(b, dtype=np.float32).reshape(-1)
            written += b.shape[0] * _BYTES[subtype]
            if fmt == "wav" and written > WAV_LIMIT:
                raise OutputError("the reading is longer than a WAV file can hold (4 GiB): "
                                  "write a .flac, or shorten the pauses")
            if subtype == "PCM_16":
                f.write(quantize16(b))
            else:
                f.write(np.clip(b, -1.0, 1.0))


def _write_ffmpeg(samples, rate, tmp, fmt, encoder) -> None:
    codec = {"mp3": ["-f", "mp3", "-c:a", "libmp3lame", "-q:a", "2"],
             "ogg": ["-f", "ogg", "-c:a", "libvorbis", "-q:a", "5"]}[fmt]
    cmd = [encoder, "-hide_banner", "-loglevel", "error", "-y",
           "-f", "s16le", "-ar", str(int(rate)), "-ac", "1", "-i", "pipe:0", *codec,
           "-metadata", f"encoded_by={OUTPUT_MARK}", tmp]
    errlog = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        try:
            for b in _as_blocks(samples):
                proc.stdin.write(quantize16(np.asarray(b, dtype=np.float32).reshape(-1)).tobytes())
        except BrokenPipeError:
            pass
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        rc = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if rc != 0:
        errlog.seek(0)
        lines = [ln for ln in errlog.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        why = lines[-1].strip() if lines else f"exit status {rc}"
        raise OutputError(f"ffmpeg could not write {fmt.upper()}: {why}")
    errlog.close()
