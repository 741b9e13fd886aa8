"""The reading of an online match, heard when the timeline says (``--sound``).

Each machine plays the plan through the one audio stack: a ``audio.output.timed``
``TimelineSource`` on a ``TimelineOutput`` (the audio process of every PortAudio output,
making each buffer in its callback from its DAC time).  Frame F is heard at the host instant
the ``online.Timeline`` gives it, on both machines, whenever the buffer was made: a sync point
(a new anchor) needs no command to the sound, the buffers made after it simply hold the new
frames.  This module only ties it to a match: the plan and voice from the host's log, this
machine's timeline and its clock's offset, and the counts the host is told of.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

from audio.output.timed import (LATENCY_S, PUSH_S, REOPEN_LEAD_S, TimelineOutput,
                                TimelineSource, cut_by)
from reader.base.errors import DeviceError, KarutaError

__all__ = ["cut_by", "SoundProcess", "LATENCY_S", "REOPEN_LEAD_S"]


class SoundProcess:
    """The reading's sound of one machine: its match's plan (``online.match_of_log``: the
    host's log, its plan's digest checked) played by ``timeline_of()`` (the current
    ``online.Timeline``) through a ``TimelineOutput``, whose audio process holds the stream:
    the app's process (a window drawing, the transport, garbage collections) holds its GIL,
    and a PortAudio callback waiting for it underruns — a sound next to an underrun is heard
    tens of ms off.  ``offset_of()``: the timeline's clock minus ours (``None``: not known yet,
    silence).  The anchors and the offset reach the audio process through shared memory,
    looked at every ``PUSH_S``: a sync point is decided ``Host.margin`` ahead, with room for
    that, the link and the buffers the stream makes ahead (``online.SOUND_AHEAD_S``).

    The stream opens at once (a device that cannot play is said at start) and again
    ``REOPEN_LEAD_S`` before the first sync point.  ``underruns``: buffers PortAudio played
    late or whose DAC time slipped, once the reading has begun; ``late``: buffers whose speech
    was not fetched in time; ``cuts`` / ``cut_ms``: sync points it heard of too late, the
    largest cut (``cut_by``); ``error``: why it could not start, or that it ended by itself
    (a ``DeviceError``: ``AudioProcess`` decides, as for every audio process).
    ``KARUTA_NETSOUND_TRACE=FILE``: at the stop, where each speech segment's first frame was
    placed (``[[frame, perf_counter s, ...], ...]``, the benchmark's)."""

    PUSH_S = PUSH_S

    def __init__(self, log_text: str, digest: str, voice_spec, timeline_of: Callable,
                 offset_of: Callable, device=None):
        self._init = (log_text, digest, voice_spec)
        self.timeline_of = timeline_of
        self.offset_of = offset_of
        self.device = device
        self.output: TimelineOutput | None = None
        self.device_info = None
        self._error: KarutaError | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._opening: threading.Thread | None = None

    def start(self, wait: bool = True) -> None:
        """Start the sound; with ``wait``, until it plays (``DeviceError``: it cannot; a
        ``KarutaError``: another plan).  Without, ``error`` says later why it did not (a
        caller that cannot wait: an event loop)."""
        self._error = None
        if wait:
            self._open()
            if self._error is not None:
                self.stop()
                raise self._error
        else:
            self._opening = threading.Thread(target=self._open, name="karuta-netsound-open",
                                             daemon=True)
            self._opening.start()

    def _open(self) -> None:
        from reader.practice import online

        try:
            m = online.match_of_log(*self._init)
            out = TimelineOutput(self.device, sample_rate=m.plan.sample_rate,
                                 reopen_lead_s=REOPEN_LEAD_S)
            with self._lock:
                if self._stopped:
                    return
                self.output = out
            out.play(TimelineSource(m.plan, m.voice, self.timeline_of, self.offset_of))
            self.device_info = out.device_info
        except KarutaError as e:
            self._error = e

    @property
    def error(self) -> KarutaError | None:
        if self._error is not None:
            return self._error
        out = self.output
        if out is not None and out.ended_by_itself() is not None:
            return DeviceError("the reading's sound stopped (its process ended: the device "
                               "or the sound server went away?)")
        return None

    @property
    def proc(self):
        """The audio process (``subprocess.Popen``; None before it runs or after it ended)."""
        out = self.output
        p = None if out is None else out._proc
        return None if p is None else p.proc

    def _counts(self) -> tuple[int, int, int, float]:
        out = self.output
        if out is None:
            return 0, 0, 0, 0.0
        out._sync_counters()
        return out.xruns, out.underflows, out.cuts, out.cut_s

    @property
    def underruns(self) -> int:
        return self._counts()[0]

    @property
    def late(self) -> int:
        return self._counts()[1]

    @property
    def cuts(self) -> int:
        return self._counts()[2]

    @property
    def cut_ms(self) -> int:
        return round(self._counts()[3] * 1000)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        if self._opening is not None and self._opening is not threading.current_thread():
            self._opening.join(10)
        out = self.output
        if out is None:
            return
        out.stop()
        trace = os.environ.get("KARUTA_NETSOUND_TRACE")  # (the benchmark's: where it placed)
        if trace:
            with open(trace, "w") as f:
                json.dump(out.placed, f)
