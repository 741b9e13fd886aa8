"""Playback backends: play a ``PlanCursor`` on a sound device, in real time.

One small interface (``Output``), three backends:

  - ``SounddeviceOutput``: PortAudio through sounddevice.  The realtime callback only copies
    pre-filled blocks from a queue (``get_nowait``); a feeder thread fills the queue from the
    cursor (≤ ~100 ms ahead, so key commands act quickly).  It records, per buffer, the
    stream frame and PortAudio's ``outputBufferDacTime`` (when that buffer reaches the
    speaker), so a key press time maps to the frame being heard (``frame_at``).
  - ``PygameOutput``: pygame.mixer, queued ``Sound`` chunks on one ``Channel`` (SDL_mixer
    starts a queued chunk inside the same mix buffer: joins are sample-exact).  No DAC
    times: ``frame_at`` is estimated (see the class doc for its accuracy).
  - ``NullOutput``: consumes the cursor in real time and discards it (``--dry-run``).

How the session drives playback::

    out = SounddeviceOutput(device=None)        # DeviceError if there is no device
    cursor = PlanCursor(plan, voice, live=True)
    out.play(cursor)                             # returns at once; audio runs on its own
    ...  key thread: cursor.release() / hold() / resume() / repeat_last_shimo()
    ...  at a tap stamped t = time.perf_counter():
             frame = out.frame_at_perf(t)        # stream frame heard at t
             plan_frame = cursor.plan_frame_at(round(frame))
    out.wait()                                   # until the reading ends (re-raises errors)
    out.stop()                                   # quit early (idempotent)

Units: frames at ``sample_rate`` (mono frames; stereo duplicates them), times in seconds on
the named clock (``now()``: the backend's own clock; ``frame_at_perf``: ``time.perf_counter``).
"""
from __future__ import annotations

import math
import queue
import threading
import time

import numpy as np

from audio.render import PlanCursor, quantize16
from reader.errors import DeviceError

__all__ = [
    "Output", "SounddeviceOutput", "PygameOutput", "NullOutput", "list_devices",
    "reinit_portaudio", "NO_DEVICE",
]

NO_DEVICE = ("no sound device found: use `karuta render --out reading.wav` to write the "
             "reading to a file")


class _Feeder(threading.Thread):
    """Reads blocks of exactly ``blocksize`` frames from the cursor (the last one padded with
    silence) and puts ``(stream_frame, block)`` on a bounded queue, then ``None`` at the end.
    ``convert`` turns a float32 block into what the device takes (done here, never in the
    realtime callback).  An exception is kept in ``error`` and ends the stream."""

    def __init__(self, cursor: PlanCursor, blocksize: int, maxblocks: int, convert,
                 tail_blocks: int = 0, lead_blocks: int = 0):
        super().__init__(name="karuta-feeder", daemon=True)
        self.tail_blocks = tail_blocks
        self.lead_blocks = lead_blocks
        self.cursor = cursor
        self.blocksize = blocksize
        self.q: queue.Queue = queue.Queue(maxsize=max(2, maxblocks))
        self.convert = convert
        self.halt = threading.Event()
        self.prefilled = threading.Event()
        self.error: BaseException | None = None
        self.frames = 0  # stream frames put on the queue (padding included)

    def _put(self, item) -> bool:
        while not self.halt.is_set():
            try:
                self.q.put(item, timeout=0.05)
                return True
            except queue.Full:
                self.prefilled.set()
        return False

    def run(self):
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


class Output:
    """The interface every backend implements.

    ``play(cursor)``  start playing (returns at once; one cursor per ``play``)
    ``wait(timeout)`` block until playback has ended; True if it has.  Re-raises an error
                      from the feeder (e.g. a voice that failed).
    ``is_active``     playing now
    ``stop()``        stop at once (idempotent); also stops the cursor
    ``latency``       the backend's reported output latency, seconds
    ``underflows``    buffers the device asked for before the feeder had one (silence played)
    ``now()``         the backend's clock, seconds
    ``frame_at(t)``   the stream frame (``PlanCursor.emitted`` timeline) heard at ``now()``-
                      clock time ``t``; None before anything played
    ``frame_now()``   ``frame_at(now())``
    ``frame_at_perf(t)`` the same for a ``time.perf_counter()`` time (key presses)
    """

    sample_rate: int
    blocksize: int
    underflows: int = 0

    def play(self, cursor: PlanCursor) -> None:
        raise NotImplementedError

    # Backends keep ``_done`` (set when playback has ended), ``_feeder`` and ``_close()``.
    _done: threading.Event
    _feeder = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the reading has played out (True) or ``timeout`` s passed (False)."""
        if not self._done.wait(timeout):
            return False
        self._close()
        if self._feeder is not None and self._feeder.error is not None:
            err, self._feeder.error = self._feeder.error, None
            raise err
        return True

    @property
    def is_active(self) -> bool:
        return not self._done.is_set()

    def _close(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @property
    def latency(self) -> float:
        return 0.0

    def now(self) -> float:
        return time.perf_counter()

    def frame_at(self, t: float) -> float | None:
        raise NotImplementedError

    def frame_now(self) -> float | None:
        return self.frame_at(self.now())

    def perf_to_now(self, t_perf: float) -> float:
        """Convert a ``time.perf_counter()`` time to this backend's clock (paired readings)."""
        return t_perf

    def frame_at_perf(self, t_perf: float) -> float | None:
        return self.frame_at(self.perf_to_now(t_perf))

    def timing_settled(self) -> bool:
        """Whether ``frame_at`` can be trusted yet (a stream's first seconds may not be)."""
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _Timeline:
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
    #: for ``SETTLE_SPAN_S``.
    ENVELOPE_S = 2.0
    BIN_S = 0.25
    SETTLE_SPAN_S = 3.0
    SETTLE_TOL_S = 0.0002

    def dac_minus_envelope(self, span: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(bin end times, median DAC line − callback-time envelope per bin) over the last
        ``span`` s, or None without callback times (a host API that gives none)."""
        frames, times, cur = self.triples()
        ok = np.isfinite(cur) & (cur > 0)
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

    def settled(self, min_age: float = 1.0) -> tuple[bool, float | None]:
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


# ---------------------------------------------------------------------------- PortAudio
def _sd():
    from audio.quiet import filter_native_stderr

    filter_native_stderr()  # PortAudio/ALSA print to fd 2 when a device fails; karuta says it once
    try:
        import sounddevice as sd
    except OSError:  # libportaudio missing
        raise DeviceError(NO_DEVICE) from None
    return sd


def reinit_portaudio() -> None:
    """Terminate and re-initialise PortAudio, so it rereads its host configuration (ALSA's
    ``~/.asoundrc``, ``PULSE_SERVER``, ``XDG_RUNTIME_DIR`` ...) after the environment changed.
    Call with no stream open."""
    sd = _sd()
    sd._terminate()
    sd._initialize()


def list_devices() -> list[dict]:
    """Output devices: ``{"index", "name", "hostapi", "channels", "default_samplerate",
    "default"}``; an empty list when PortAudio finds none (or is not installed)."""
    try:
        sd = _sd()
        devices = sd.query_devices()
        apis = sd.query_hostapis()
    except Exception:
        return []
    try:
        default_out = sd.default.device[1]
        if default_out is None or default_out < 0:
            default_out = sd.query_devices(kind="output")["index"]
    except Exception:
        default_out = -1
    out = []
    for d in devices:
        if d["max_output_channels"] > 0:
            out.append({
                "index": d["index"], "name": d["name"], "hostapi": apis[d["hostapi"]]["name"],
                "channels": d["max_output_channels"],
                "default_samplerate": d["default_samplerate"],
                "default": d["index"] == default_out,
            })
    return out


def lookup_device(sd, device, kind: str) -> dict | None:
    """PortAudio's info for ``device``: None (the default ``kind`` device, "output" or
    "input"), an index (int or digit string) or a name (a case-insensitive substring,
    sounddevice's rule).  None when there is no such device."""
    try:
        if device is None:
            return sd.query_devices(kind=kind)
        if isinstance(device, str) and device.strip().isdigit():
            device = int(device)
        return sd.query_devices(device)
    except (sd.PortAudioError, ValueError):
        return None


def resolve_device(device=None) -> dict:
    """The PortAudio output device for ``device``: None (the default), an index (int or a
    digit string) or a name (a case-insensitive substring, sounddevice's rule).  Raises
    ``DeviceError`` with one line when there is none."""
    info = lookup_device(_sd(), device, "output")
    if info is None:
        if device is None:
            raise DeviceError(NO_DEVICE) from None
        names = ", ".join(repr(d["name"]) for d in list_devices()) or "none"
        raise DeviceError(f"no output device matches {device!r} (output devices: {names})") \
            from None
    if not info or info.get("max_output_channels", 0) <= 0:
        if device is None:
            raise DeviceError(NO_DEVICE)
        raise DeviceError(f"sound device {info.get('name', device)!r} has no output channels")
    return dict(info)


class SounddeviceOutput(Output):
    """PortAudio output (sounddevice ``OutputStream``, callback mode).

    ``device``: None, index or name (see ``resolve_device``).  ``blocksize``: frames per
    buffer (fixed: every callback gets exactly one queued block).  ``queue_ms``: how much
    audio the feeder keeps ready (default 100 ms: a command reaches the ear within that plus
    ``latency``).  ``dtype``: "int16" (default; the feeder quantizes with ``quantize16``, so
    the device gets exactly the 16-bit file's samples) or "float32".  ``channels``: 1, or 2
    (mono duplicated).  ``latency``: PortAudio's "low" / "high" / seconds (default 50 ms:
    with "low" (20 ms on PulseAudio) a busy 2-core machine had occasional ALSA underruns).
    ``tail_ms``: silence played after the reading before the stream closes (closing drops
    what PulseAudio still buffers: measured, the last ~70 ms were lost without it).
    ``lead_ms``: silence played before the reading's frame 0 (stream frames < 0): PulseAudio
    was seen to drop the first ~4 ms of a stream, and DAC times of a stream's first
    0.1-0.15 s are off by 30-100 ms; both fall on this silence.

    The callback runs no Python beyond a ``get_nowait``, one copy and two array stores; on an
    empty queue it plays silence and counts ``underflows`` (except on a device with no clock,
    see ``_late_block``) (and ``xruns`` for PortAudio's own
    underflow flags).  ``frame_at(t)`` uses the per-buffer DAC times (``now()`` is PortAudio's
    stream clock, which follows the wall clock, not ``time.monotonic``); the first 0.15 s of
    DAC times are skipped once later ones exist (they are off by 30-100 ms on PulseAudio).
    """

    SETTLE_S = 0.15
    #: the stream ended by itself (device or sound server gone): ``wait`` raises DeviceError
    lost = False
    _ended = _stopping = False

    def __init__(self, device=None, sample_rate: int = 48000, blocksize: int = 480,
                 queue_ms: float = 100.0, dtype: str = "int16", channels: int = 1,
                 latency=0.05, tail_ms: float = 250.0, lead_ms: float = 150.0):
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
        self._stream = None
        self._latency = 0.0
        self._feeder: _Feeder | None = None
        self._q: queue.Queue | None = None
        self._done = threading.Event()
        self._done.set()
        self._cursor: PlanCursor | None = None
        self.underflows = 0
        self.xruns = 0
        self.buffers = 0
        self._t0: float | None = None
        self._grace = 0.002
        self.timeline = _Timeline(self.sample_rate)

    # realtime callback: keep it tiny
    def _callback(self, outdata, frames, time_info, status):
        if status.output_underflow:
            self.xruns += 1
        if self._t0 is None:
            self._t0 = time.perf_counter()
        try:
            item = self._q.get_nowait()
        except queue.Empty:
            item = self._late_block()
            if item is False:
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

    def _late_block(self):
        """On an empty queue (underflow path only; returns the block or False):

        - wait a moment (≤ 2 ms, ≤ a quarter block) for the feeder: the device still holds
          ``latency`` of audio, so this costs nothing audible and often saves a gap;
        - a device that has taken far more audio than real time allows has no clock (ALSA
          ``null``/``file`` in tests: nobody listens in real time): wait for the feeder (≤ 1 s)
          rather than fill the stream with silence.  A real device cannot get here: it never
          holds more than its buffer (``latency``) beyond the elapsed time, and the test asks
          for more than 4x the elapsed time and more than twice the latency.
        """
        try:
            return self._q.get(timeout=self._grace)
        except queue.Empty:
            pass
        played = self.buffers * self.blocksize / self.sample_rate
        if played > 2.0 * self._latency and \
                played > 4.0 * (time.perf_counter() - self._t0):
            try:
                return self._q.get(timeout=1.0)
            except queue.Empty:
                pass
        return False

    def _finished(self):
        if not self._ended and not self._stopping and self._feeder is not None \
                and self._feeder.error is None:
            # the stream ended by itself before the reading did: the device or the sound
            # server went away.  Reported through the usual path (``wait`` raises it).
            self.lost = True
            self._feeder.error = DeviceError(
                f"the sound device {self.device_info['name']!r} stopped during the reading")
        self._done.set()

    def play(self, cursor: PlanCursor) -> None:
        """Start playing ``cursor`` (returns once ~``queue_ms`` is queued and the stream runs).
        Raises ``DeviceError`` if the device cannot be opened."""
        if self.is_active:
            raise RuntimeError("already playing: stop() or wait() first")
        if cursor.sample_rate != self.sample_rate:
            raise DeviceError(f"the reading runs at {cursor.sample_rate} Hz but the output was "
                              f"opened at {self.sample_rate} Hz")
        sd = self._sdmod = _sd()
        self._ended = self._stopping = self.lost = False
        self.underflows = self.xruns = self.buffers = 0
        self._t0 = None
        self.timeline = _Timeline(self.sample_rate)
        maxblocks = math.ceil(self.queue_ms * self.sample_rate / 1000.0 / self.blocksize)
        convert = quantize16 if self.dtype == "int16" else (lambda b: b)
        self._cursor = cursor
        tail = math.ceil(self.tail_ms * self.sample_rate / 1000.0 / self.blocksize)
        lead = math.ceil(self.lead_ms * self.sample_rate / 1000.0 / self.blocksize)
        self._feeder = _Feeder(cursor, self.blocksize, maxblocks, convert, tail, lead)
        self._q = self._feeder.q
        try:
            self._stream = sd.OutputStream(
                samplerate=self.sample_rate, blocksize=self.blocksize, device=self.device,
                channels=self.channels, dtype=self.dtype, latency=self._latency_req,
                callback=self._callback, finished_callback=self._finished)
        except sd.PortAudioError as e:
            self._feeder = None  # never started: nothing to stop
            raise DeviceError(f"cannot open sound device {self.device_info['name']!r} "
                              f"({' '.join(str(e).split())}): use `karuta render --out "
                              f"reading.wav` to write the reading to a file") from None
        self._latency = float(self._stream.latency)
        self._grace = min(0.002, self.blocksize / self.sample_rate / 4)
        self._done.clear()
        self._feeder.start()
        self._feeder.prefilled.wait()
        self._stream.start()

    def stop(self) -> None:
        self._stopping = True
        if self._cursor is not None:
            self._cursor.stop()
        if self._feeder is not None:
            self._feeder.halt.set()
        if self._stream is not None:
            try:
                self._stream.abort()
            except Exception:
                pass
        self._done.set()
        self._close()

    def _close(self):
        if self._feeder is not None:
            self._feeder.halt.set()
            self._feeder.join(timeout=2.0)
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception:
                pass
            self._stream = None
        if self._cursor is not None:
            self._cursor.close()

    @property
    def latency(self) -> float:
        """PortAudio's reported output latency of the last stream, seconds (not the true
        delay: DAC times are better, and a user calibration better still)."""
        s = self._stream
        if s is not None:
            self._latency = float(s.latency)
        return self._latency

    @property
    def started_at(self) -> tuple[int, float] | None:
        """(first stream frame, its DAC time) of the first buffer played."""
        tl = self.timeline
        return None if tl.first_time is None else (tl.first_frame, tl.first_time)

    def dac_times(self) -> tuple[np.ndarray, np.ndarray]:
        """(stream frames, DAC times) of the buffers played (the last 65536)."""
        return self.timeline.pairs()

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
        best_w, best_off = math.inf, 0.0
        for _ in range(self.PAIRS):
            a = time.perf_counter()
            st = float(s.time)
            b = time.perf_counter()
            if b - a < best_w:
                best_w, best_off = b - a, st - (a + b) / 2.0
                if best_w < self.PAIR_OK_S / 4:
                    break
        now = time.perf_counter()
        self._pair_last = (best_w, best_off)  # diagnostics
        if best_w <= self.PAIR_OK_S:
            self._pair = (now, best_off, s)  # (when, offset, stream)
            return best_off
        kept = getattr(self, "_pair", None)
        if kept is not None and kept[2] is s and now - kept[0] <= self.PAIR_KEEP_S:
            return kept[1]
        return best_off

    def timing_settled(self) -> bool:
        """Whether the DAC times have settled (see ``_Timeline.settled``); a drill waits for
        this (silence, "get ready") before its first card."""
        return self._stream is not None and self.timeline.settled()[0]

    def timing_debug(self, t_perf: float) -> dict:
        """How a tap at ``t_perf`` was mapped (``KARUTA_TIMING_DEBUG``): stream age, the DAC
        buffer used and its residual from the window's median line, the clock pairing, and
        ``origin_perf``: the perf time at which stream frame 0 is heard per this mapping
        (a benchmark compares it with its own observer)."""
        s = self._stream
        d: dict = {}
        if s is None:
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
        d["latency_ms"] = round(float(s.latency) * 1000, 3)
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

    def timing_dump(self, path) -> None:
        """Write the DAC timeline (frames, DAC times, currentTime) and a clock pairing."""
        frames, times, cur = self.timeline.triples()
        a = time.perf_counter()
        w = time.time()
        b = time.perf_counter()
        np.savez(path, frames=frames, times=times, currents=cur,
                 wall_minus_perf=w - (a + b) / 2, rate=self.sample_rate)

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


# ---------------------------------------------------------------------------- pygame
class PygameOutput(Output):
    """pygame.mixer output: the cursor's blocks become ``Sound`` chunks queued one ahead on a
    ``Channel`` (SDL_mixer starts a queued chunk within the same mix buffer, so joins are
    sample-exact).  16-bit, mono or stereo (duplicated), mixer at ``sample_rate``.

    Initialises pygame.mixer itself when it is not (``pre_init`` with this rate, ``buffer``
    frames); a mixer already running at another rate/format is an error.  ``chunk`` frames per
    Sound (default 2400 = 50 ms); ≤ 2 chunks are ahead of the ear plus the mixer buffer.

    Timing accuracy: SDL reports no DAC time.  ``frame_at`` takes the moment a poller thread
    (every ``poll_ms``) sees a chunk start (the queue slot empties), minus the mixer buffer:
    expect a constant offset of about one mixer buffer (``buffer``/rate, ~10 ms) that a user
    calibration absorbs, and jitter up to ``poll_ms`` + a few ms.  Prefer
    ``SounddeviceOutput`` for grab timing.
    """

    def __init__(self, sample_rate: int = 48000, channels: int = 1, buffer: int = 512,
                 chunk: int = 2400, poll_ms: float = 1.0):
        self.sample_rate = int(sample_rate)
        self.channels = int(channels)
        self.buffer = int(buffer)
        self.blocksize = int(chunk)
        self.poll_s = poll_ms / 1000.0
        self._thread: threading.Thread | None = None
        self._feeder: _Feeder | None = None
        self._cursor: PlanCursor | None = None
        self._done = threading.Event()
        self._done.set()
        self._halt = threading.Event()
        self.underflows = 0
        self.timeline = _Timeline(self.sample_rate)
        self._init_mixer()

    def _init_mixer(self):
        try:
            import pygame
        except ImportError:
            raise DeviceError(NO_DEVICE) from None
        self._pg = pygame
        got = pygame.mixer.get_init()
        if got is None:
            try:
                pygame.mixer.pre_init(self.sample_rate, -16, self.channels, self.buffer)
                pygame.mixer.init()
            except pygame.error as e:
                raise DeviceError(f"{NO_DEVICE} ({e})") from None
            got = pygame.mixer.get_init()
        if got[0] != self.sample_rate or got[1] != -16 or got[2] not in (1, 2):
            raise DeviceError(f"pygame.mixer runs at {got}, not {self.sample_rate} Hz 16-bit")
        self.channels = got[2]

    def _sound(self, block: np.ndarray):
        data = quantize16(block)
        if self.channels == 2:
            data = np.repeat(data[:, None], 2, axis=1)
        return self._pg.sndarray.make_sound(np.ascontiguousarray(data))

    def play(self, cursor: PlanCursor) -> None:
        if self.is_active:
            raise RuntimeError("already playing: stop() or wait() first")
        if cursor.sample_rate != self.sample_rate:
            raise DeviceError(f"the reading runs at {cursor.sample_rate} Hz but the output was "
                              f"opened at {self.sample_rate} Hz")
        self.underflows = 0
        self.timeline = _Timeline(self.sample_rate)
        self._cursor = cursor
        self._feeder = _Feeder(cursor, self.blocksize, 2, self._sound)
        self._halt.clear()
        self._done.clear()
        self._feeder.start()
        self._feeder.prefilled.wait()
        self._thread = threading.Thread(target=self._run, name="karuta-pygame", daemon=True)
        self._thread.start()

    def _run(self):
        pg = self._pg
        ch = pg.mixer.find_channel(True)
        q = self._feeder.q
        lead = self.buffer / self.sample_rate
        try:
            item = q.get()
            if item is None:
                return
            frame, snd = item
            ch.play(snd)
            self.timeline.record(frame, time.perf_counter() + lead)
            queued = None
            while not self._halt.is_set():
                if queued is None:
                    try:
                        item = q.get(timeout=0.05)
                    except queue.Empty:
                        if not ch.get_busy():
                            self.underflows += 1
                        continue
                    if item is None:
                        break
                    frame, snd = item
                    if ch.get_busy():
                        ch.queue(snd)
                        queued = frame
                    else:  # starved: the chunk starts late
                        self.underflows += 1
                        ch.play(snd)
                        self.timeline.record(frame, time.perf_counter() + lead)
                elif ch.get_queue() is None:
                    self.timeline.record(queued, time.perf_counter() + lead)
                    queued = None
                else:
                    time.sleep(self.poll_s)
            while not self._halt.is_set() and ch.get_busy():
                if queued is not None and ch.get_queue() is None:
                    self.timeline.record(queued, time.perf_counter() + lead)
                    queued = None
                time.sleep(self.poll_s)
            if not self._halt.is_set():
                time.sleep(2 * lead)  # the last chunk is mixed, not yet heard: let SDL play it
        finally:
            if self._halt.is_set():
                ch.stop()
            self._done.set()

    def stop(self) -> None:
        if self._cursor is not None:
            self._cursor.stop()
        self._halt.set()
        if self._feeder is not None:
            self._feeder.halt.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._done.set()
        self._close()

    def _close(self):
        if self._feeder is not None:
            self._feeder.halt.set()
            self._feeder.join(timeout=2.0)
        if self._cursor is not None:
            self._cursor.close()

    @property
    def latency(self) -> float:
        return self.buffer / self.sample_rate

    def frame_at(self, t: float) -> float | None:
        return self.timeline.frame_at(t)


# ---------------------------------------------------------------------------- null
class NullOutput(Output):
    """Plays nothing: consumes the cursor in real time (``blocksize`` frames every
    ``blocksize / sample_rate`` s, on an absolute schedule) for ``--dry-run``.  ``frame_at``
    is exact against ``time.perf_counter`` (its ``now()``)."""

    def __init__(self, sample_rate: int = 48000, blocksize: int = 480, queue_ms: float = 100.0):
        self.sample_rate = int(sample_rate)
        self.blocksize = int(blocksize)
        self.queue_ms = queue_ms
        self._done = threading.Event()
        self._done.set()
        self._halt = threading.Event()
        self._feeder: _Feeder | None = None
        self._cursor: PlanCursor | None = None
        self._thread: threading.Thread | None = None
        self.underflows = 0
        self.timeline = _Timeline(self.sample_rate)

    def play(self, cursor: PlanCursor) -> None:
        if self.is_active:
            raise RuntimeError("already playing: stop() or wait() first")
        self.underflows = 0
        self.timeline = _Timeline(self.sample_rate)
        self._cursor = cursor
        maxblocks = math.ceil(self.queue_ms * self.sample_rate / 1000.0 / self.blocksize)
        self._feeder = _Feeder(cursor, self.blocksize, maxblocks, lambda b: b)
        self._halt.clear()
        self._done.clear()
        self._feeder.start()
        self._feeder.prefilled.wait()
        self._thread = threading.Thread(target=self._run, name="karuta-null", daemon=True)
        self._thread.start()

    def _run(self):
        period = self.blocksize / self.sample_rate
        t0 = time.perf_counter()
        k = 0
        try:
            while not self._halt.is_set():
                due = t0 + k * period
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                try:
                    item = self._feeder.q.get_nowait()
                except queue.Empty:
                    self.underflows += 1
                    k += 1
                    continue
                if item is None:
                    break
                self.timeline.record(item[0], due)
                k += 1
        finally:
            self._done.set()

    def _close(self) -> None:
        if self._feeder is not None:
            self._feeder.join(timeout=2.0)

    def stop(self) -> None:
        if self._cursor is not None:
            self._cursor.stop()
        self._halt.set()
        if self._feeder is not None:
            self._feeder.halt.set()
            self._feeder.join(timeout=2.0)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._done.set()

    def frame_at(self, t: float) -> float | None:
        return self.timeline.frame_at(t)
