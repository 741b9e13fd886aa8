"""A plan played from a timeline: the frame source of an online reading, in the audio process.

    source = TimelineSource(plan, voice, timeline_of, offset_of)
    out = TimelineOutput(device=None)              # DeviceError if there is no device
    out.play(source)                               # the one ``Output`` sequence
    ...                                            # the anchors change: nothing to tell it
    out.stop()

Each buffer's DAC time (the instant it reaches the speaker, on the stream's clock, turned into
``time.perf_counter`` by the audio process's paired readings, then into the timeline's clock
by ``offset_of()``) says which plan frames it holds: frame F is heard at the instant the
timeline's anchors give it, whenever the buffer was made.  A new anchor (a sync point) needs
no command to the sound: the buffers made after it simply hold the new frames.

The audio process (``audio_process.py``, ``TimelineFill``) makes every buffer in its callback
from shared memory, allocating nothing: the anchors (written here under a sequence count),
the timeline's offset, and the speech's samples in a pool of slots this side's feeder thread
(``TimelineFeeder``) fills a few segments ahead of the frame the callback last asked for.  A
buffer whose speech is not in the pool yet plays silence and is counted (``underflows``: the
source's ``late``); a buffer PortAudio played late, or whose DAC time slipped, is counted in
``xruns``.  Whether the audio process ended by itself is decided where every audio process's
is (``process.AudioProcess``).
"""
from __future__ import annotations

import bisect
import math
import threading

import numpy as np

from audio.output import audio_process as ap
from audio.output.base import Output
from audio.output.portaudio import AudioProcessOutput
from reader.base.clock import SYSTEM_CLOCK

__all__ = ["TimelineSource", "TimelineOutput", "TimelineFeeder", "cut_by", "LATENCY_S",
           "REOPEN_LEAD_S", "PUSH_S"]

#: the output's latency (s): the DAC times place every buffer, so a safe one costs nothing
#: (an online sync point is decided ``online.MIN_MARGIN_S`` ahead: more than this plus the link)
LATENCY_S = 0.25

#: with ``reopen_lead_s``: the stream is opened again this long before the first anchor (s)
REOPEN_LEAD_S = 1.6

#: how often the feeder looks at the timeline and its offset (s)
PUSH_S = 0.01

#: speech segments held in shared memory at once: the one heard, the one before and the
#: next ones fetched ahead
NSLOTS = 6
AHEAD_SEGMENTS = 4


def cut_by(old, new, made_to: float | None) -> float:
    """How much of the reading new anchors cut (s; 0: none): an anchor not in ``old`` whose
    instant is before ``made_to`` (the instant up to which the sound had made its buffers,
    on the old anchors) came too late -- its first ``made_to - at`` were already silence or
    the old timeline's, and will not be heard."""
    if made_to is None:
        return 0.0
    seen = {(a.at, a.frame) for a in old}
    return max([0.0, *(made_to - a.at for a in new if (a.at, a.frame) not in seen)])


class TimelineSource:
    """What a ``TimelineOutput`` plays: ``plan``'s frames, each heard at the instant the
    timeline ``timeline_of()`` returns gives it (its ``anchors``: each an ``at``, an instant on
    the timeline's clock, and the ``frame`` heard then; counting on from each at the sample
    rate, standing at the end of the first wait it reaches until the next; ``None``: no
    timeline yet, silence).  ``offset_of()``: the timeline's clock minus
    ``time.perf_counter`` (``None``: not known yet, silence).  ``ahead``: fetch the next
    segments' speech ahead of the one heard (False: only that one, as a feeder with no
    look-ahead).  For the ``Output`` sequence it is the cursor: ``sample_rate``, ``stop()``
    (``finished``), ``close()``."""

    def __init__(self, plan, voice, timeline_of, offset_of, *, ahead: bool = True):
        self.plan, self.voice = plan, voice
        self.sample_rate = plan.sample_rate
        self.frames = plan.frames
        self.timeline_of, self.offset_of = timeline_of, offset_of
        self.ahead = ahead
        self.speech = [s for s in plan.segments if s.is_speech]
        #: the end frame of each wait (after a first segment), in plan order
        self.wait_ends = [s.end for i, s in enumerate(plan.segments) if s.wait and i > 0]
        self.finished = False

    def samples(self, i: int) -> np.ndarray:
        """Speech segment ``i``'s samples (float32, mono)."""
        return np.asarray(self.voice.samples(self.speech[i].speech),
                          dtype=np.float32).reshape(-1)

    def stop(self) -> None:
        self.finished = True

    def close(self) -> None:
        pass


class TimelineFeeder(threading.Thread):
    """This side's work for a ``TimelineOutput``, every ``PUSH_S``: the timeline's anchors and
    offset into shared memory when they change (anchors that came after the buffers of their
    instant were made are counted: ``cuts``, the largest ``cut_s``), and the speech of the
    segment the callback last asked for (``WANT``) and the next ones into the pool.  An
    exception (a voice that failed) is kept in ``error`` and ends the stream."""

    lead_blocks = 0

    def __init__(self, output: "TimelineOutput", source: TimelineSource):
        super().__init__(name="karuta-timeline-feeder", daemon=True)
        self.output, self.source = output, source
        self.halt = threading.Event()
        self.prefilled = threading.Event()
        self.error: BaseException | None = None
        self.lay: ap.TimelineLayout | None = None
        self.cuts = 0
        self.cut_s = 0.0
        self.starts = [s.start for s in source.speech]
        self._sent = None  # the anchors written (the timeline's own objects)
        self._offset = None
        self._reopen_at: float | None = None
        self._slot_seg = [-1] * NSLOTS

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self._push()
                self.prefilled.set()
                self._fetch()
                if self._reopen_at is not None and self.output._started \
                        and SYSTEM_CLOCK.seconds() >= self._reopen_at:
                    self._reopen_at = None
                    self.output._reopen()
                self.halt.wait(PUSH_S)
        except BaseException as e:  # surfaced by Output.wait()
            self.error = e
            self.output._abort()
        finally:
            self.prefilled.set()

    def _push(self) -> None:
        lay, src = self.lay, self.source
        off = src.offset_of()
        if off is not None and (self._offset is None or abs(off - self._offset) > 1e-6):
            lay.tf[ap.T_OFFSET] = off
            self._offset = off
        tl = src.timeline_of()
        if tl is None:
            return
        new = list(tl.anchors)
        if self._sent is not None and [(a.at, a.frame) for a in new] == \
                [(a.at, a.frame) for a in self._sent]:
            return
        made = float(lay.tf[ap.MADE_TO])
        late = cut_by(self._sent or [], new, None if math.isnan(made) else made)
        if late > 0.0:
            self.cuts += 1
            self.cut_s = max(self.cut_s, late)
        lead = self.output.reopen_lead_s
        if lead is not None and not self._sent and new:
            # the first anchor: the stream is opened again shortly before it (measured: one
            # that played silence for the seconds before plays the reading tens of ms off its
            # DAC times on a busy sound server; opened within 2 s of it, within 3 ms) --
            # minutes later after a memorisation
            self._reopen_at = SYSTEM_CLOCK.seconds() if self._offset is None else \
                new[0].at - self._offset - lead
        kept = new[-ap.MAXA:]
        tctl = lay.tctl
        tctl[ap.ASEQ] += 1  # odd: being written
        for j, a in enumerate(kept):
            lay.a_at[j] = a.at
            lay.a_fr[j] = a.frame
        tctl[ap.NANCH] = len(kept)
        tctl[ap.ASEQ] += 1
        self._sent = new

    def _fetch(self) -> None:
        lay, src = self.lay, self.source
        want = int(lay.tctl[ap.WANT if src.ahead else ap.HOLDS])
        if want < 0:
            return
        i0 = max(0, bisect.bisect_right(self.starts, want) - 1)
        upto = min(i0 + (AHEAD_SEGMENTS if src.ahead else 1), len(self.starts))
        for i in range(i0, upto):
            if lay.s_slot[i] >= 0:
                continue
            if self.halt.is_set():
                return
            data = src.samples(i)
            k = self._free_slot(i0, upto)
            if k is None:
                return
            n = min(data.shape[0], lay.slotlen)
            lay.pool[k, :n] = data[:n]
            lay.s_len[i] = n
            lay.s_slot[i] = k  # published after its samples
            self._slot_seg[k] = i

    def _free_slot(self, i0: int, upto: int) -> int | None:
        """A slot to fetch into: a free one, else the one holding a segment before the one
        heard but one (dropped), else the one furthest beyond the wanted ones."""
        seg = self._slot_seg
        for k, i in enumerate(seg):
            if i < 0:
                return k
        k = min(range(len(seg)), key=lambda k: seg[k])
        if seg[k] >= i0 - 1:
            k = max(range(len(seg)), key=lambda k: seg[k])
            if seg[k] < upto:
                return None
        self.lay.s_slot[seg[k]] = -1  # unpublished before it is written over
        seg[k] = -1
        return k


class TimelineOutput(AudioProcessOutput):
    """``play(TimelineSource)``: the source's plan, each frame at its timeline's instant, from
    an audio process (``AudioProcessOutput``'s: its shared memory, its clock pairing, its one
    test of an end by itself).  ``underflows``: buffers whose speech was not fetched in time
    (silence there); ``xruns``: buffers PortAudio played late or whose DAC time slipped
    (``audio_process.SLIP_S``), once the reading has begun.  ``frame_at_perf(t)``: the plan
    frame heard at ``t`` by the timeline (what the sound places there).  ``reopen_lead_s``:
    the stream is opened again that long before the first anchor (``REOPEN_LEAD_S``).
    ``placed``: where each speech segment's first frame was placed (``TimelineLayout``'s
    rows, the benchmark's); ``cuts`` / ``cut_s``: anchors that came too late (``cut_by``)."""

    def __init__(self, device=None, sample_rate: int = 48000, blocksize: int = 480,
                 latency=LATENCY_S, tail_ms: float = 250.0, reopen_lead_s: float | None = None):
        super().__init__(device, sample_rate=sample_rate, blocksize=blocksize, queue_ms=0.0,
                         dtype="float32", channels=1, latency=latency, tail_ms=tail_ms,
                         lead_ms=0.0, ahead_ms=0.0)
        self.reopen_lead_s = reopen_lead_s
        self.placed: list = []
        self.cuts = 0
        self.cut_s = 0.0
        self._tshm = None
        self._tlay = None
        self._heard = None  # a ``TimelineFill`` over the shared anchors, read here
        self._reopens = 0  # (how many times the stream was opened again)
        self._started = False

    def _cannot_open(self, why: str):
        from reader.base.errors import DeviceError

        return DeviceError(f"cannot open the sound output ({why})")

    def _make_feeder(self, source):
        if not isinstance(source, TimelineSource):
            raise TypeError("a TimelineOutput plays a TimelineSource")
        return TimelineFeeder(self, source)

    def _open(self) -> None:
        from multiprocessing import shared_memory

        from audio.output.process import AudioProcess, SharedTimeline

        src = self._feeder.source
        nseg, nwait = len(src.speech), len(src.wait_ends)
        slotlen = max([s.end - s.start for s in src.speech] or [1])
        shm = shared_memory.SharedMemory(create=True, size=ap.TimelineLayout.size(
            nseg, nwait, NSLOTS, slotlen))
        lay = ap.TimelineLayout(shm.buf, nseg, nwait, NSLOTS, slotlen)
        lay.tctl[:] = 0
        lay.tf[:] = np.nan
        lay.s_slot[:] = -1
        lay.s_len[:] = 0
        lay.s_start[:nseg] = [s.start for s in src.speech]
        lay.s_end[:nseg] = [s.end for s in src.speech]
        lay.w_end[:nwait] = src.wait_ends
        spec = {"name": shm.name, "nseg": nseg, "nwait": nwait, "nslots": NSLOTS,
                "slotlen": slotlen, "frames": src.frames, "tail": self.tail_ms / 1000.0}
        proc = AudioProcess(self.device, self.sample_rate, self.blocksize, self.channels,
                            self.dtype, self._latency_req, 0, timeline=(shm, lay, spec))
        self._tshm, self._tlay = shm, lay
        try:
            self._latency = proc.open()
        except OSError as e:
            raise self._cannot_open(str(e)) from None
        self._proc = proc
        self._feeder.lay = lay
        self._heard = ap.TimelineFill(lay, proc.lay.clk, self.sample_rate, src.frames,
                                      maxframes=1)
        self.timeline = SharedTimeline(self.sample_rate, proc.lay)
        self.placed = []
        self.cuts, self.cut_s = 0, 0.0
        self._started = False

    def _start(self) -> None:
        super()._start()
        self._started = True

    def _reopen(self) -> None:
        proc = self._proc
        if proc is not None:
            self._reopens += 1
            proc.reopen()

    def _sync_counters(self) -> None:
        lay, feeder = self._tlay, self._feeder
        tctl = None if lay is None else lay.tctl  # (released meanwhile: the last counts stay)
        if tctl is not None:
            self.underflows = int(tctl[ap.T_LATE])
            self.xruns = int(tctl[ap.T_UNDERRUNS])
            self.buffers = int(tctl[ap.T_BUFFERS])
        if feeder is not None and isinstance(feeder, TimelineFeeder):
            self.cuts, self.cut_s = feeder.cuts, feeder.cut_s

    def _release(self) -> None:
        lay = self._tlay
        if lay is not None and lay.tctl is not None and self._proc is not None:
            if not self._proc.done.is_set():
                self._proc.abort()
            self._sync_counters()
            n = int(lay.tctl[ap.NPLACED])
            self.placed = [[int(r[0]), *map(float, r[1:])] for r in lay.placed[:n]]
        self._heard = None
        super()._release()  # (the audio process closes the shared block)
        self._tshm = self._tlay = None

    def ended_by_itself(self) -> str | None:
        """Why the stream ended before it was stopped or played out (the device or the sound
        server went away, its process ended), as ``AudioProcess`` decided; None otherwise."""
        proc = self._proc
        if proc is not None:
            return proc.died if proc.done.is_set() else None
        return self._died

    # -------------------------------------------------------------- time: the timeline's
    def now(self) -> float:
        return Output.now(self)  # (perf_counter: the timeline's offset is from it)

    def perf_to_now(self, t_perf: float) -> float:
        return t_perf

    def frame_at(self, t: float) -> float | None:
        """The plan frame heard at ``perf_counter`` instant ``t`` by the timeline."""
        fill, lay = self._heard, self._tlay
        if fill is None or lay is None or lay.tf is None:
            return None
        off = float(lay.tf[ap.T_OFFSET])
        if math.isnan(off):
            return None
        fill._anchors()
        return fill.heard(t + off)

    def frame_at_perf(self, t_perf: float) -> float | None:
        return self.frame_at(t_perf)

    def timing_settled(self) -> bool:
        return self._active()
