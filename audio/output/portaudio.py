"""PortAudio output through sounddevice, callback mode: the callback only copies a block the
feeder made ahead, and records that buffer's DAC time.  Two transports, one class each:
``SounddeviceOutput`` runs the stream in this process; ``AudioProcessOutput`` runs it in an
audio process of its own (``process.py``, ``audio_process.py``), fed through shared memory.
What both share (the options, the DAC timeline and what is read off it) is ``_PortAudio``."""
from __future__ import annotations

import math
import time

import numpy as np

from audio.output.audio_process import narrowest_pair
from audio.output.base import Output
from audio.output.devices import _sd, resolve_device
from audio.output.feeder import EMPTY
from audio.render import quantize16
from reader.base.errors import DeviceError

__all__ = ["SounddeviceOutput", "AudioProcessOutput"]


class _PortAudio(Output):
    """PortAudio output (sounddevice ``OutputStream``, callback mode): what both transports share.

    ``device``: None, index or name (see ``resolve_device``).  ``blocksize``: frames per
    buffer (fixed: every callback gets exactly one queued block).  ``queue_ms``: how much
    audio the feeder keeps ready ahead of the device (default 150 ms: a command reaches the
    ear within that plus ``latency``; the feeder may be kept off the CPU or the GIL that long
    by a redraw, a garbage collection or other programs before a gap is heard).  ``dtype``:
    "int16" (default; the feeder quantizes with ``quantize16``, so the device gets exactly the
    16-bit file's samples) or "float32".  ``channels``: 1, or 2 (mono duplicated).
    ``latency``: PortAudio's "low" / "high" / seconds (default 60 ms: what the device buffers
    beyond the callback, i.e. how late a callback may run before the device runs dry; with
    "low" (20 ms on PulseAudio) a busy 2-core machine had ALSA underruns).
    ``tail_ms``: silence played after the reading before the stream closes (closing drops
    what PulseAudio still buffers: measured, the last ~70 ms were lost without it).
    ``lead_ms``: silence played before the reading's frame 0 (stream frames < 0): PulseAudio
    was seen to drop the first ~4 ms of a stream, and DAC times of a stream's first
    0.1-0.15 s are off by 30-100 ms; both fall on this silence.

    The callback never waits for late audio on a device with a clock: it takes the next
    block off the lock-free ring (``BlockRing.get_nowait``), copies it and stores three
    numbers; on an empty ring it plays silence and counts ``underflows`` (``xruns`` counts
    PortAudio's own underflow flags).  One exception: a device *without* a clock (ALSA
    ``null``/``file``, as in the tests' capture: it takes audio far faster than real time and
    nobody hears it) has no deadline to miss, so there the callback waits for the feeder
    rather than write silence into the file (``_clockless``).  ``frame_at(t)`` uses the
    per-buffer DAC times (``now()`` is PortAudio's stream clock, which follows the wall
    clock, not ``time.monotonic``); the first 0.15 s of DAC times are skipped once later ones
    exist (they are off by 30-100 ms on PulseAudio).
    """

    SETTLE_S = 0.15
    dac_timeline = True
    #: the stream ended by itself (device or sound server gone): ``wait`` raises DeviceError
    lost = False
    _ended = _stopping = False

    def __init__(self, device=None, sample_rate: int = 48000, blocksize: int = 480,
                 queue_ms: float = 150.0, dtype: str = "int16", channels: int = 1,
                 latency=0.06, tail_ms: float = 250.0, lead_ms: float = 150.0):
        if dtype not in ("int16", "float32"):
            raise ValueError("dtype must be 'int16' or 'float32'")
        self.device_info = resolve_device(device)
        self.device = self.device_info["index"]
        self.sample_rate = int(sample_rate)
        self.blocksize = int(blocksize)
        self.queue_ms = float(queue_ms)
        self.dtype = dtype
        self.channels = int(channels)
        self._latency_req = latency
        self.tail_ms = float(tail_ms)
        self.lead_ms = float(lead_ms)
        self._died: str | None = None
        self._latency = 0.0
        self.buffers = 0
        self.lead_xruns = 0  # device underruns during the lead-in silence (not heard)
        self._lead_frames = 0
        self._init_state()

    def stop(self) -> None:
        self._stopping = True
        super().stop()

    def _convert(self, block):
        return quantize16(block) if self.dtype == "int16" else block

    def _prepare(self) -> None:
        self._sdmod = _sd()
        self.buffers = 0
        self.lead_xruns = 0
        self._lead_frames = self._feeder.lead_blocks * self.blocksize
        self._died = None
        self._ended = self._stopping = self.lost = False
        self._open()

    def _open(self) -> None:
        """Open the stream (the transport's own); DeviceError if the device refuses."""
        raise NotImplementedError

    def _active(self) -> bool:
        """A stream is open (or its process runs)."""
        raise NotImplementedError

    def _cannot_open(self, why: str) -> DeviceError:
        return DeviceError(f"cannot open sound device {self.device_info['name']!r} ({why}): "
                           f"use `karuta render --out reading.wav` to write the reading to a "
                           f"file")

    def wait(self, timeout: float | None = None) -> bool:
        ended = super().wait(timeout)
        if ended and self._died:
            why, self._died = self._died, None
            raise DeviceError(f"sound device {self.device_info['name']!r}: {why}")
        return ended

    @property
    def latency(self) -> float:
        """PortAudio's reported output latency of the last stream, seconds (not the true
        delay: DAC times are better, and a user calibration better still)."""
        return self._latency

    @property
    def started_at(self) -> tuple[int, float] | None:
        """(first stream frame, its DAC time) of the first buffer played."""
        tl = self.timeline
        return None if tl.first_time is None else (tl.first_frame, tl.first_time)

    def dac_times(self) -> tuple[np.ndarray, np.ndarray]:
        """(stream frames, DAC times) of the buffers played (the last 65536)."""
        return self.timeline.pairs()

    def timing_settled(self) -> bool:
        """Whether the DAC times have settled (see ``_Timeline.settled``); a drill waits for
        this (silence, "get ready") before its first card."""
        return self._active() and self.timeline.settled()[0]

    def timing_debug(self, t_perf: float) -> dict:
        """How a tap at ``t_perf`` was mapped (``KARUTA_TIMING_DEBUG``): stream age, the DAC
        buffer used and its residual from the window's median line, the clock pairing, and
        ``origin_perf``: the perf time at which stream frame 0 is heard per this mapping
        (a benchmark compares it with its own observer)."""
        d: dict = {}
        if not self._active():
            return d
        lm = getattr(self, "_last_map", None)
        if lm is not None and lm[0] == t_perf:  # the mapping just made for this tap
            _, t, f, (w, off), last = lm
        else:
            t = self.perf_to_now(t_perf)
            w, off = getattr(self, "_pair_last", (math.nan, math.nan))
            f = self.frame_at(t)
            last = self.timeline.last or {}
        tl = self.timeline
        d["age_s"] = round(t - tl.first_time, 4) if tl.first_time is not None else None
        d["pair_w_us"] = round(w * 1e6, 1)
        d["clock_off"] = off
        d["latency_ms"] = round(float(self.latency) * 1000, 3)
        if f is not None:
            d["origin_perf"] = t_perf - f / self.sample_rate
        res = last.get("residual")
        d["residual_ms"] = None if res is None else round(res * 1000, 4)
        d["mode"] = last.get("mode")
        d["window"] = last.get("window")
        if "dac" in last:
            d["dac_age_ms"] = round((t - last["dac"]) * 1000, 3)
        # DAC - current of the recent buffers: PortAudio's idea of the delay
        frames, times, cur = tl.triples()
        env = tl.dac_minus_envelope(0.5)
        if env is not None and np.isfinite(env[1]).any():
            d["dac_env_ms"] = round(float(np.nanmedian(env[1])) * 1000, 3)
        if frames.shape[0]:
            d["dac_minus_cur_ms"] = round(float(np.nanmedian(times[-30:] - cur[-30:])) * 1000, 3)
        return d

    def timing_dump(self, path, **extra) -> None:
        """Write the DAC timeline (frames, DAC times, currentTime), a clock pairing of the
        wall clock with ``perf_counter`` and the arrays in ``extra`` (a benchmark's record)."""
        frames, times, cur = self.timeline.triples()
        a = time.perf_counter()
        w = time.time()
        b = time.perf_counter()
        np.savez(path, frames=frames, times=times, currents=cur,
                 wall_minus_perf=w - (a + b) / 2, rate=self.sample_rate, **extra)

    def frame_at(self, t: float) -> float | None:
        f = self.timeline.frame_at(t, settle=self.SETTLE_S)
        if f is not None and self.lost:  # nothing after the last buffer the device took
            frames, _ = self.timeline.pairs()
            f = min(f, float(frames[-1]) + self.blocksize) if frames.shape[0] else f
        return f

    def frame_at_perf(self, t_perf: float) -> float | None:
        t = self.perf_to_now(t_perf)
        f = self.frame_at(t)
        self._last_map = (t_perf, t, f, getattr(self, "_pair_last", (math.nan, math.nan)),
                          dict(self.timeline.last or {}))
        return f


class SounddeviceOutput(_PortAudio):
    """PortAudio output with the stream in this process (see ``_PortAudio``).  ``now()`` is
    PortAudio's stream clock, paired with ``perf_counter`` for ``frame_at_perf``."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._stream = None
        self._q = None
        self._t0: float | None = None

    # realtime callback: keep it tiny (no waiting, no allocation on a device with a clock)
    def _callback(self, outdata, frames, time_info, status):
        if status.output_underflow:
            # in the lead-in silence a device start-up hiccup is heard as nothing: apart
            if self.buffers * self.blocksize > self._lead_frames:
                self.xruns += 1
            else:
                self.lead_xruns += 1
        if self._t0 is None:
            self._t0 = time.perf_counter()
        item = self._q.get_nowait()
        if item is EMPTY:
            item = self._clockless() if self.buffers * self.blocksize > self._wait_frames \
                else EMPTY
            if item is EMPTY:
                outdata.fill(0)
                self.underflows += 1
                return
        if item is None:
            outdata.fill(0)
            self._ended = True
            raise self._sdmod.CallbackStop
        frame, block = item
        if self.channels == 1:
            outdata[:, 0] = block
        else:
            outdata[:] = block[:, None]
        self.timeline.record(frame, time_info.outputBufferDacTime, time_info.currentTime)
        self.buffers += 1

    def _clockless(self):
        """On an empty ring after more than twice ``latency`` was played: is this a device
        without a clock?  Such a device has taken far more audio than real time allows (more
        than 4x the elapsed time); a real device never holds more than its buffer
        (``latency``) beyond the elapsed time, so it never passes this test and never waits.
        Without a clock there is no deadline: wait for the feeder (≤ 1 s).  Returns the item
        or ``EMPTY``."""
        played = self.buffers * self.blocksize / self.sample_rate
        if played <= 4.0 * (time.perf_counter() - self._t0):
            return EMPTY
        return self._q.get(timeout=1.0, poll_s=0.0002)

    def _finished(self):
        if not self._ended and not self._stopping and self._feeder is not None \
                and self._feeder.error is None:
            # the stream ended by itself before the reading did: the device or the sound
            # server went away.  Reported through the usual path (``wait`` raises it).
            self.lost = True
            self._feeder.error = DeviceError(
                f"the sound device {self.device_info['name']!r} stopped during the reading")
        self._done.set()

    def _open(self) -> None:
        sd = self._sdmod
        self._t0 = None
        self._q = self._feeder.q
        try:
            self._stream = sd.OutputStream(
                samplerate=self.sample_rate, blocksize=self.blocksize, device=self.device,
                channels=self.channels, dtype=self.dtype, latency=self._latency_req,
                callback=self._callback, finished_callback=self._finished)
        except sd.PortAudioError as e:
            raise self._cannot_open(" ".join(str(e).split())) from None
        self._latency = float(self._stream.latency)
        # the clockless test applies only past twice the device's buffer
        self._wait_frames = int(2.0 * self._latency * self.sample_rate)

    def _active(self) -> bool:
        return self._stream is not None

    def _start(self) -> None:
        self._stream.start()

    def _abort(self) -> None:
        if self._stream is not None:
            try:
                self._stream.abort()
            except self._sdmod.PortAudioError:  # already closed by PortAudio
                pass

    def _release(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except self._sdmod.PortAudioError:  # already closed by PortAudio
                pass
            self._stream = None

    @property
    def latency(self) -> float:
        s = self._stream
        if s is not None:
            self._latency = float(s.latency)
        return self._latency

    def now(self) -> float:
        s = self._stream
        if s is None:
            return time.time()  # PortAudio's clock follows the wall clock here
        return float(s.time)

    def perf_to_now(self, t_perf: float) -> float:
        s = self._stream
        if s is None:
            return t_perf - time.perf_counter() + time.time()
        return t_perf + self._clock_offset(s)

    #: paired readings per mapping; a pair wider than ``PAIR_OK_S`` (the thread lost the GIL or
    #: the CPU between its two perf readings) is not trusted when a recent narrow one exists
    PAIRS = 5
    PAIR_OK_S = 0.0002
    PAIR_KEEP_S = 2.0

    def _clock_offset(self, s) -> float:
        """stream clock − perf_counter, from the narrowest of ``PAIRS`` paired readings.

        One pair (perf, stream.time, perf) taken with the midpoint is off by up to half its
        width: measured 2-9 ms wide now and then under load (``stream.time`` releases the GIL),
        which showed as taps reported early.  A narrow pair from the last ``PAIR_KEEP_S`` is
        used when this call's best is wide (the two clocks drift apart by ppm only)."""
        best_w, best_off = narrowest_pair(s, self.PAIRS, enough=self.PAIR_OK_S / 4)
        now = time.perf_counter()
        self._pair_last = (best_w, best_off)  # diagnostics
        if best_w <= self.PAIR_OK_S:
            self._pair = (now, best_off, s)  # (when, offset, stream)
            return best_off
        kept = getattr(self, "_pair", None)
        if kept is not None and kept[2] is s and now - kept[0] <= self.PAIR_KEEP_S:
            return kept[1]
        return best_off


class AudioProcessOutput(_PortAudio):
    """PortAudio output with the stream in an audio process of its own (``process.py``: the
    app's GIL cannot starve it), fed through a shared-memory ring; its DAC timeline and clock
    pairing come back through shared memory too (see ``_PortAudio`` for the other options).

    ``ahead_ms`` (default 3 s): how far the feeder runs ahead of the device beyond
    ``queue_ms``, so a stall of this process (its GIL held by a thread that other programs
    keep off the CPU: measured 0.4-0.7 s under load) is bridged by audio already in the audio
    process's ring.  Commands still act ``queue_ms`` ahead of the device: the feeder drops
    what it made beyond that and makes it again (``Feeder``).
    """

    def __init__(self, *args, ahead_ms: float = 3000.0, **kw):
        super().__init__(*args, **kw)
        self.ahead_ms = float(ahead_ms)
        self._proc = None

    def _open(self) -> None:
        from audio.output.process import AudioProcess, SharedRing, SharedTimeline

        proc = AudioProcess(self.device, self.sample_rate, self.blocksize, self.channels,
                            self.dtype, self._latency_req, self._lead_frames)
        try:
            self._latency = proc.open()
        except OSError as e:
            raise self._cannot_open(str(e)) from None
        self._proc = proc
        self._feeder.q = SharedRing(proc.lay, max(self._feeder.q.capacity, self._feeder.ahead))
        self.timeline = SharedTimeline(self.sample_rate, proc.lay)

    def _active(self) -> bool:
        return self._proc is not None

    def _start(self) -> None:
        self._proc.start(self._done.set)

    def _sync_counters(self) -> None:
        proc = self._proc
        if proc is not None and proc.lay.ctl is not None:
            from audio.output import audio_process as ap

            ctl = proc.lay.ctl
            self.underflows, self.xruns = int(ctl[ap.UNDERFLOWS]), int(ctl[ap.XRUNS])
            self.buffers = int(ctl[ap.BUFFERS])
            self.lead_xruns = int(ctl[ap.LEAD_XRUNS])

    def _abort(self) -> None:
        if self._proc is not None:
            self._proc.abort()

    def _release(self) -> None:
        proc = self._proc
        if proc is not None:
            if not proc.done.is_set():
                proc.abort()
            self._sync_counters()
            self.timeline = self.timeline.snapshot()
            self._died = self._died or proc.died
            self.lost = self.lost or proc.lost
            self._proc = None
            proc.close()

    def _shared_offset(self) -> float | None:
        """stream clock − perf_counter as the audio process paired them (None: not yet)."""
        proc = self._proc
        if proc is None or proc.lay.clk is None:
            return None
        from audio.output import audio_process as ap

        off = float(proc.lay.clk[ap.OFFSET])
        if math.isnan(off):
            return None
        self._pair_last = (float(proc.lay.clk[ap.WIDTH]), off)
        return off

    def now(self) -> float:
        off = self._shared_offset()
        if off is not None:
            return time.perf_counter() + off
        return time.time()  # PortAudio's clock follows the wall clock

    def perf_to_now(self, t_perf: float) -> float:
        off = self._shared_offset()
        if off is not None:
            return t_perf + off
        return t_perf - time.perf_counter() + time.time()
