"""The reading of an online match, heard when the timeline says (``--sound``).

Each machine plays the plan from its own PortAudio stream; every buffer's DAC time (the
instant it reaches the speaker, on the stream's clock, turned into ``time.perf_counter`` by
paired readings, then into the host's clock by the measured offset) says which plan frames it
holds (``frames_for``): frame F is heard at the host instant the ``online.Timeline`` gives
it, on both machines, whenever the buffer was made.  A sync point (a new anchor) therefore
needs no command to the sound: the buffers made after it simply hold the new frames.  The
speech is fetched from the voice on a worker thread ahead of the reading; a buffer whose
speech is not ready plays silence and is counted (``late``).
"""
from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

import numpy as np

from audio.output.audio_process import OFFSET, keep_paired, narrowest_pair

__all__ = ["cut_by", "frames_for", "TimelineSound", "SoundProcess"]

#: the output's latency (s): the DAC times place every buffer, so a safe one costs nothing
#: (a sync point is decided ``online.MIN_MARGIN_S`` ahead: more than this plus the link)
LATENCY_S = 0.25


#: the stream is opened again this long before the reading's first sync point (s): as long
#: ahead as the first is ever decided (``online.MIN_MARGIN_S`` + ``FIRST_LEAD_S``)
REOPEN_LEAD_S = 1.6

#: a buffer whose DAC time is this far from where the last one ended slipped (s)
SLIP_S = 0.002


def cut_by(old, new, made_to: float | None) -> float:
    """How much of the reading new anchors cut (s; 0: none): an anchor not in ``old`` whose
    instant is before ``made_to`` (the instant up to which the sound had made its buffers,
    on the old anchors) came too late -- its first ``made_to - at`` were already silence or
    the old timeline's, and will not be heard."""
    if made_to is None:
        return 0.0
    seen = {(a.at, a.frame) for a in old}
    return max([0.0, *(made_to - a.at for a in new if (a.at, a.frame) not in seen)])


def frames_for(timeline, t0: float, n: int) -> np.ndarray:
    """The plan frame heard at each of ``n`` samples from instant ``t0`` (the timeline's
    clock), or -1 where nothing is (before the first anchor, standing at a wait's end, past
    the plan)."""
    rate = timeline.rate
    t = t0 + np.arange(n) / rate
    out = np.full(n, -1, dtype=np.int64)
    anchors = list(timeline.anchors)
    for a, nxt in zip(anchors, anchors[1:] + [None]):
        mask = t >= a.at
        if nxt is not None:
            mask &= t < nxt.at
        if not mask.any():
            continue
        f = a.frame + np.floor((t[mask] - a.at) * rate + 0.5).astype(np.int64)
        w = timeline._wait_after(a.frame)
        top = w[1] if w is not None else timeline.frames
        out[mask] = np.where(f < top, f, -1)
    return out


class _Speech:
    """The plan's speech segments' samples, fetched ahead on one worker thread."""

    def __init__(self, plan, voice):
        self.voice = voice
        self.segs = [s for s in plan.segments if s.is_speech]
        self.starts = [s.start for s in self.segs]
        self.cache: dict[int, np.ndarray] = {}
        self._want = threading.Event()
        self._from = 0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="karuta-netsound", daemon=True)
        self._thread.start()

    def ahead_of(self, frame: int) -> None:
        self._from = max(0, bisect.bisect_right(self.starts, frame) - 1)
        self._want.set()

    def _run(self) -> None:
        while not self._stop:
            self._want.wait(0.2)
            self._want.clear()
            i0 = self._from
            for i in range(i0, min(i0 + 4, len(self.segs))):
                if i not in self.cache and not self._stop:
                    s = self.segs[i]
                    data = np.asarray(self.voice.samples(s.speech), dtype=np.float32).reshape(-1)
                    self.cache[i] = data
            for i in list(self.cache):
                if i < i0 - 1:
                    del self.cache[i]

    def fill(self, frames: np.ndarray, out: np.ndarray) -> bool:
        """Put the samples of plan ``frames`` (-1: silence) into ``out``; False if some
        speech was not fetched yet (silence there)."""
        ok = True
        live = frames >= 0
        if not live.any():
            return True
        f0 = int(frames[live][0])
        i = max(0, bisect.bisect_right(self.starts, f0) - 1)
        for k in range(i, min(i + 3, len(self.segs))):
            s = self.segs[k]
            m = live & (frames >= s.start) & (frames < s.end)
            if not m.any():
                continue
            data = self.cache.get(k)
            if data is None:
                ok = False
                continue
            idx = np.minimum(frames[m] - s.start, data.shape[0] - 1)
            out[m] = data[idx]
        return ok

    def close(self) -> None:
        self._stop = True
        self._want.set()


class TimelineSound:
    """Plays ``timeline`` (``timeline_of()``: the current one) through a PortAudio output
    stream.  ``to_timeline(t_perf)``: a ``time.perf_counter`` instant on the timeline's clock
    (``None``: not known yet, silence).  ``underruns``: buffers PortAudio reported late, or
    whose DAC time is more than ``SLIP_S`` off where the last one ended (the stream's timing
    moved under what was already queued);
    ``late``: buffers whose speech was not fetched in time (both counted once the reading
    has begun)."""

    def __init__(self, plan, voice, timeline_of: Callable, to_timeline: Callable,
                 device=None, trace: bool = False):
        self.plan = plan
        self.rate = plan.sample_rate
        self.timeline_of = timeline_of
        self.to_timeline = to_timeline
        self.device = device
        self.speech = _Speech(plan, voice)
        self.underruns = 0
        self.late = 0
        #: the timeline's instant up to which buffers are made (what a new anchor must be
        #: after: ``cut_by``)
        self.made_to: float | None = None
        #: (plan frame, perf_counter s) of every speech segment's first frame as placed by
        #: its buffer's DAC time (``trace``: the benchmark's, against what the sink played)
        self.placed: list[tuple] | None = [] if trace else None
        #: (``trace``) every buffer: its first plan frame (-1: none), then as ``_trace``
        self.buffers: list[tuple] | None = [] if trace else None
        self._clk = [0.0, 0.0, 0.0]  # [OFFSET]: stream clock − perf_counter (``keep_paired``)
        self._end: float | None = None  # where the last buffer ends (its DAC time)
        self._halt = threading.Event()
        self.stream = None

    def start(self) -> None:
        from audio.output.devices import _sd
        from reader.base.errors import DeviceError

        sd = _sd()  # (ALSA's own lines kept off stderr, as for every output)

        try:
            self.stream = sd.OutputStream(samplerate=self.rate, channels=1, dtype="float32",
                                          callback=self._callback, latency=LATENCY_S,
                                          device=self.device)
            self._pair()
            self.stream.start()
            # (what calibrations are kept under: ``reader.drills.calibrate.device_key``)
            self.device_info = sd.query_devices(self.stream.device)
        except (sd.PortAudioError, ValueError) as e:
            raise DeviceError(f"cannot open the sound output ({e})") from None
        # paired again every 0.1 s, the narrowest of the last second kept, as the board's
        # audio process does: one pairing on a loaded machine may be ms wide
        threading.Thread(target=keep_paired, args=(self.stream, self._clk, self._halt),
                         name="karuta-netsound-clock", daemon=True).start()

    def _pair(self) -> None:
        """stream clock − perf_counter from the narrowest of 5 paired readings."""
        self._clk[OFFSET] = narrowest_pair(self.stream, 5)[1]

    def _callback(self, outdata, frames, time_info, status) -> None:
        out = np.zeros(frames, dtype=np.float32)
        dac = time_info.outputBufferDacTime - self._clk[OFFSET]
        t = self.to_timeline(dac)
        tl = self.timeline_of()
        if t is not None:
            self.made_to = t + frames / self.rate
        # a slip, on the stream's own clock (its pairing with perf_counter moves now and then)
        raw = time_info.outputBufferDacTime
        slipped = self._end is not None and abs(raw - self._end) > SLIP_S
        self._end = raw + frames / self.rate
        if (status.output_underflow or slipped) and t is not None and tl is not None \
                and tl.heard(t) is not None:
            self.underruns += 1  # (a stream's first buffers may underflow: not the reading's)
        if t is not None and tl is not None:
            idx = frames_for(tl, t, frames)
            if self.buffers is not None:
                self._trace_buffer(idx, dac, t - dac, time_info, status)
            if (idx >= 0).any():
                self.speech.ahead_of(int(idx[idx >= 0][0]))
                if self.placed is not None:
                    self._trace(idx, dac, t - dac, time_info)
                if not self.speech.fill(idx, out):
                    self.late += 1
            else:
                nxt = tl.heard(t + 1.0)
                if nxt is not None:
                    self.speech.ahead_of(int(nxt))
        outdata[:, 0] = out

    def _trace_buffer(self, idx, dac, offset, time_info, status) -> None:
        import time

        clk = list(self._clk)
        live = idx[idx >= 0]
        cur = getattr(time_info, "currentTime", None)
        now = time.perf_counter()
        self.buffers.append((int(live[0]) if live.size else -1, dac,
                             time_info.outputBufferDacTime, cur, clk[0], clk[1], now - clk[2],
                             offset, bool(status.output_underflow), now, len(idx)))

    def _trace(self, idx: np.ndarray, dac: float, offset: float, time_info) -> None:
        """``placed`` rows: (frame, perf s placed at, then what placed it: the buffer's DAC
        time and the callback's time on the stream's clock, the pairing's offset, width and
        age (s), the timeline's clock minus perf_counter used)."""
        import time

        starts = self.speech.starts
        first, last = int(idx[idx >= 0].min()), int(idx.max())
        # (a sync point between two samples rounds its first frame away: the segment's start
        # is one sample before the first it holds)
        k = bisect.bisect_left(starts, first - 1)
        clk = list(self._clk)
        cur = getattr(time_info, "currentTime", None)
        while k < len(starts) and starts[k] <= last:
            at = np.flatnonzero(idx >= starts[k])
            if at.size and int(idx[at[0]]) - starts[k] <= 1 \
                    and not (self.placed and self.placed[-1][0] == starts[k]):
                j = int(at[0]) - (int(idx[at[0]]) - starts[k])
                self.placed.append((starts[k], dac + j / self.rate,
                                    time_info.outputBufferDacTime, cur,
                                    clk[0], clk[1], time.perf_counter() - clk[2], offset))
            k += 1

    def stop(self) -> None:
        self._halt.set()
        self.speech.close()
        if self.stream is not None:
            try:
                self.stream.stop()
                self.stream.close()
            except Exception:
                pass


# ------------------------------------------------------------------------------- its own process
class SoundProcess:
    """A ``TimelineSound`` in a process of its own (``python -m reader.practice.netsound``),
    as the board's reading has its ``AudioProcessOutput``: the app's process (a window
    drawing, the transport, garbage collections) holds its GIL, and a PortAudio callback
    waiting for it underruns — a sound next to an underrun is heard tens of ms off.

    The child builds the same plan from the match log (``online.match_of_log``: the digest
    checked) and plays it by the timeline it is told: this side sends the anchors whenever
    they change and the offset of the timeline's clock from ``time.perf_counter`` (the same
    ``CLOCK_MONOTONIC`` in both processes) whenever it moves, both checked every
    ``PUSH_S`` — a sync point is decided ``Host.margin`` ahead, with room for that, the
    link and the buffers the child makes ahead (``online.SOUND_AHEAD_S``).  ``timeline_of()``: the current ``online.Timeline``;
    ``offset_of()``: the timeline's clock minus ours (``None``: not known yet, silence).
    The child opens its stream at once (a device that cannot play is said at start) and
    again ``REOPEN_LEAD_S`` before the first sync point (at once if that is sooner).
    ``underruns`` / ``late``: the child's counts (``TimelineSound``), reported every 0.25 s;
    ``cuts`` / ``cut_ms``: sync points it heard of too late, the largest cut (``cut_by``);
    ``error``: why it could not start, or that it ended by itself (a ``DeviceError``)."""

    PUSH_S = 0.01

    def __init__(self, log_text: str, digest: str, voice_spec, timeline_of: Callable,
                 offset_of: Callable, device=None):
        self._init = {"log": log_text, "digest": digest, "voice": voice_spec,
                      "device": device}
        self.timeline_of = timeline_of
        self.offset_of = offset_of
        self.underruns = 0
        self.late = 0
        self.cuts = 0  # sync points heard too late (``cut_by``) and the largest cut, ms
        self.cut_ms = 0
        self.device_info = None
        self.error = None
        self.proc = None
        self._halt = threading.Event()
        self._wlock = threading.Lock()

    def start(self, wait: bool = True) -> None:
        """Start the process; with ``wait``, until it plays (``DeviceError``: it cannot).
        Without, ``error`` says later why it did not (a caller that cannot wait: an event
        loop)."""
        import subprocess
        import sys

        self.error = None
        self.proc = subprocess.Popen([sys.executable, "-m", "reader.practice.netsound"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        self._write(self._init)
        if wait:
            self._opened()
            if self.error is not None:
                self.stop()
                raise self.error
        else:
            threading.Thread(target=self._opened, daemon=True).start()

    def _opened(self) -> None:
        from reader.base.errors import DeviceError
        from reader.base.statefiles import decode_json

        line = self.proc.stdout.readline().strip()
        if not line.startswith("open "):
            self.error = DeviceError(line.removeprefix("error ")
                                     or "the sound process did not start")
            return
        self.device_info = {"name": decode_json(line[5:])}
        threading.Thread(target=self._push, name="karuta-netsound-push", daemon=True).start()
        self._reader = threading.Thread(target=self._status, name="karuta-netsound-status",
                                        daemon=True)
        self._reader.start()

    def _write(self, msg) -> bool:
        import json

        try:
            with self._wlock:
                self.proc.stdin.write(json.dumps(msg) + "\n")
                self.proc.stdin.flush()
            return True
        except (OSError, ValueError):  # the child is gone: the status reader notices
            return False

    def _push(self) -> None:
        sent_anchors, sent_offset = None, None
        while not self._halt.wait(self.PUSH_S):
            tl = self.timeline_of()
            anchors = None if tl is None else [(a.at, a.frame) for a in tl.anchors]
            off = self.offset_of()
            msg = {}
            if anchors is not None and anchors != sent_anchors:
                msg["anchors"] = anchors
            if off is not None and (sent_offset is None or abs(off - sent_offset) > 1e-6):
                msg["offset"] = off
            if msg and self._write(msg):
                sent_anchors = anchors if "anchors" in msg else sent_anchors
                sent_offset = off if "offset" in msg else sent_offset

    def _status(self) -> None:
        from reader.base.errors import DeviceError

        try:
            for line in self.proc.stdout:
                parts = line.split()
                if len(parts) == 5 and parts[0] == "status":
                    self.underruns, self.late = int(parts[1]), int(parts[2])
                    self.cuts, self.cut_ms = int(parts[3]), int(parts[4])
        except (OSError, ValueError):  # (stopped)
            pass
        if not self._halt.is_set():  # it ended by itself: nothing is heard any more
            self.error = DeviceError("the reading's sound stopped (its process ended: the "
                                     "device or the sound server went away?)")

    def stop(self) -> None:
        import subprocess

        self._halt.set()
        if self.proc is None:
            return
        self._write({"stop": True})
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join(2)  # (its last status line read: the counts are final)
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass


def main() -> int:
    """The sound process (``SoundProcess``): one JSON line (the log, its plan's digest, the
    voice, the device), then ``{"anchors": [[at, frame], ...]}`` / ``{"offset": s}`` lines
    until ``{"stop": true}`` or the end of its input.  Says ``open "DEVICE NAME"`` (or
    ``error TEXT``) once playing, then ``status UNDERRUNS LATE CUTS CUT_MS`` every 0.25 s
    (``CUTS``: anchors heard after the buffers of their instant were made, ``CUT_MS`` the
    largest such cut).  ``KARUTA_NETSOUND_TRACE=FILE``: at the end, where each speech
    segment's first frame was placed (``[[frame, perf_counter s], ...]``, the benchmark's)."""
    import json
    import os
    import signal
    import sys

    import audio.quiet
    from audio.output.audio_process import realtime_priority
    from reader.base.clock import SYSTEM_CLOCK
    from reader.base.errors import KarutaError
    from reader.base.statefiles import decode_json
    from reader.practice import online

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the app stops it: its Ctrl-C is the app's)
    audio.quiet.ENABLED = True
    init = decode_json(sys.stdin.readline())
    offset = [None]
    placed: list = []
    buffers: list = []

    trace = os.environ.get("KARUTA_NETSOUND_TRACE")  # (the benchmark's: where it placed)

    def opened():
        s = TimelineSound(m.plan, m.voice, lambda: tl,
                          lambda t: None if offset[0] is None else t + offset[0],
                          device=init["device"], trace=bool(trace))
        # the stream's callback thread, made as it starts, inherits realtime priority (its
        # speech fetcher, made before, does not: synthesis must not hold a CPU)
        rt = realtime_priority()
        s.start()
        if rt:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        return s

    try:
        m = online.match_of_log(init["log"], init["digest"], init["voice"])
        tl = online.Timeline(m.plan)
        snd = opened()
    except KarutaError as e:
        print("error " + " ".join(str(e).split()), flush=True)
        return 1
    print("open " + json.dumps(str(snd.device_info.get("name", "default"))), flush=True)
    halt = threading.Event()

    cut = [0, 0.0]  # anchors heard too late, the largest cut (s)

    def reopen():
        nonlocal snd
        if halt.is_set():
            return
        placed.extend(snd.placed or [])
        buffers.extend((snd.buffers or []) + [("reopen",)])
        snd.stop()
        snd = opened()

    def status_line() -> str:
        return f"status {snd.underruns} {snd.late} {cut[0]} {round(cut[1] * 1000)}"

    def status():
        while not halt.wait(0.25):
            print(status_line(), flush=True)

    threading.Thread(target=status, daemon=True).start()
    try:
        for line in sys.stdin:
            msg = decode_json(line)
            if "anchors" in msg:
                new = [online.Anchor(float(a), int(f)) for a, f in msg["anchors"]]
                late = cut_by(tl.anchors, new, snd.made_to)
                if late > 0.0:
                    cut[0] += 1
                    cut[1] = max(cut[1], late)
                if not tl.anchors and new:
                    # the reading's first sync point: the stream is opened again shortly
                    # before it (measured: one that played silence for the seconds before
                    # plays the reading tens of ms off its DAC times on a busy sound server;
                    # opened within 2 s of it, within 3 ms) -- minutes later after a
                    # memorisation
                    at = None if offset[0] is None else new[0].at - offset[0]
                    wait = 0.0 if at is None else at - SYSTEM_CLOCK.seconds() - REOPEN_LEAD_S
                    timer = threading.Timer(max(0.0, wait), reopen)
                    timer.daemon = True
                    timer.start()
                tl.anchors = new
            if "offset" in msg:
                offset[0] = float(msg["offset"])
            if msg.get("stop"):
                break
    finally:
        halt.set()
        snd.stop()
        print(status_line(), flush=True)
        if trace:
            with open(trace, "w") as f:
                json.dump(placed + (snd.placed or []), f)
            with open(trace + ".buffers", "w") as f:
                json.dump(buffers + (snd.buffers or []), f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
