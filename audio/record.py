"""Recording takes from a microphone: capture, level meter, auto-stop, trim, checks, save.

``Microphone`` keeps one sounddevice ``InputStream`` open for a whole session.  Its realtime
callback only copies each block onto a queue; ``pump()`` (called by the UI ~50x a second)
drains the queue, updates the level meter and, while a take is running, appends the blocks
to the take::

    with Microphone(device=None) as mic:      # DeviceError "no microphone found: ..."
        mic.start_take()
        while mic.recording:
            mic.pump()                        # -> meter: mic.level (peak/RMS dBFS, 50 ms)
            if mic.should_auto_stop(2.0): break
        x = mic.stop_take()                   # float32, mono, 48 kHz
    take = analyse(x)                         # trim span, peak, clipped, warnings
    save_take(path, take.trimmed)             # FLAC 48 kHz mono, written atomically

Warnings on a take (``analyse``): "too loud" (samples at full scale, or peak above -0.3 dBFS),
"nothing heard" (peak below -50 dBFS, or no sound above the noise floor), "too short"
(under 1 s of sound, the pack's minimum).  A take with "nothing heard" is not saved.
"""
from __future__ import annotations

import math
import os
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reader.base.errors import DeviceError, OutputError

__all__ = [
    "RATE", "Level", "Take", "Microphone", "Player", "analyse", "save_take", "load_take",
    "resolve_input_device", "input_devices", "db", "meter_bar",
]

RATE = 48000
WINDOW = RATE // 20  # the meter's window: 50 ms
NOTHING_DB = -50.0  # a take whose peak stays below this heard nothing
LOUD_DB = -0.3  # a peak above this is (nearly) clipping
CLIP_LEVEL = 0.999
MIN_SOUND_S = 1.0
VOICED_DB = -45.0  # a 50 ms window louder than this (RMS) is sound, for auto-stop
FLOOR_DB = -90.0


def db(v: float) -> float:
    return 20.0 * math.log10(v) if v > 10 ** (FLOOR_DB / 20) else FLOOR_DB


# ------------------------------------------------------------------------------- devices
def _sd():
    try:
        import sounddevice as sd
    except OSError as e:  # libportaudio missing
        raise DeviceError(f"no microphone found: PortAudio is not installed ({e})") from None
    return sd


def input_devices() -> list[dict]:
    """Devices with input channels (empty when PortAudio finds none)."""
    try:
        sd = _sd()
        return [dict(d) for d in sd.query_devices() if d["max_input_channels"] > 0]
    except Exception:
        return []


def resolve_input_device(device=None) -> dict:
    """The PortAudio input device for ``device`` (None = the default, an index, or a name
    substring).  ``DeviceError`` with one line ("no microphone found: ...") when there is none."""
    from audio.output import lookup_device

    info = lookup_device(_sd(), device, "input")
    if info is None:
        if device is None:
            raise DeviceError("no microphone found: PortAudio sees no input device "
                              "(plug one in, or start a sound server)") from None
        names = ", ".join(repr(d["name"]) for d in input_devices()) or "none"
        raise DeviceError(f"no microphone found: no input device matches {device!r} "
                          f"(input devices: {names})") from None
    if not info or info.get("max_input_channels", 0) <= 0:
        names = ", ".join(repr(d["name"]) for d in input_devices()) or "none"
        raise DeviceError(f"no microphone found: {info.get('name', device)!r} has no input "
                          f"channels (input devices: {names})")
    return dict(info)


# ------------------------------------------------------------------------------- capture
@dataclass
class Level:
    """The meter: the last 50 ms window, dBFS."""

    peak_db: float = FLOOR_DB
    rms_db: float = FLOOR_DB
    #: the loudest peak of the running take (or since the last take), dBFS
    hold_db: float = FLOOR_DB


class Microphone:
    """One input stream for a session; takes are cut from it (see the module doc)."""

    def __init__(self, device=None, blocksize: int = 480, latency="high", open_stream=None):
        """``open_stream``: instead of a PortAudio device, ``open_stream(callback)`` returns a
        started stream (``time``, ``latency``, ``abort()``, ``close()``) that calls
        ``callback(indata, frames, time_info, status)`` as PortAudio does (tests)."""
        if open_stream is not None:
            self._init_state(device, blocksize, latency, {"name": "stream", "index": None})
            self._stream = open_stream(self._callback)
            return
        sd = self._sdmod = _sd()
        self._init_state(device, blocksize, latency, resolve_input_device(device))
        try:
            sd.check_input_settings(device=self.device, channels=1, samplerate=RATE, dtype="float32")
        except Exception:
            self._rate_in = int(self.info.get("default_samplerate") or RATE)
        try:
            self._stream = sd.InputStream(samplerate=self._rate_in, blocksize=self.blocksize,
                                          device=self.device, channels=1, dtype="float32",
                                          latency=self._latency, callback=self._callback)
            self._stream.start()
        except Exception as e:
            self.close()
            raise DeviceError(f"no microphone found: cannot open {self.name!r} "
                              f"({' '.join(str(e).split())})") from None

    def _init_state(self, device, blocksize, latency, info) -> None:
        self.info = info
        self.name = str(self.info.get("name", device))
        self.device = self.info["index"]
        self.rate = RATE
        self.blocksize = int(blocksize)
        self._latency = latency
        self._q: queue.Queue = queue.Queue()
        self.level = Level()
        self.recording = False
        self.overflows = 0
        self._take: list[np.ndarray] = []
        self._take_frames = 0
        self._window = np.zeros(0, np.float32)
        self._last_voiced = 0  # take frame after the last voiced window
        self._voiced = False
        self._lock = threading.Lock()
        self._stream = None
        self._rate_in = RATE
        # the take's span on the stream's clock (``stream.time``): the key that started it and
        # the key that stopped it; blocks carry their capture time, so a take holds what the
        # microphone heard between the two keys, whatever the device's input latency
        self._t_from: float | None = None
        self._t_to: float | None = None
        self._heard_to = -math.inf  # capture time of the end of the newest block taken

    # realtime: copy and queue (with the instant the block's first frame was captured)
    def _callback(self, indata, frames, time_info, status):
        if status.input_overflow:
            self.overflows += 1
        self._q.put((indata[:, 0].copy(), float(time_info.inputBufferAdcTime)))

    def close(self):
        if self._stream is not None:
            try:
                self._stream.abort()
                self._stream.close()
            except Exception as e:  # the device is already gone: nothing left to close
                if type(e).__name__ != "PortAudioError":
                    raise
            self._stream = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the UI's side ------------------------------------------------------------------
    def pump(self) -> int:
        """Take what the callback queued: update ``level``, extend the running take.
        Returns the frames taken."""
        got = []
        while True:
            try:
                got.append(self._q.get_nowait())
            except queue.Empty:
                break
        if not got:
            return 0
        x = self._resampled(np.concatenate([b for b, _ in got]))
        w = np.concatenate([self._window, x])[-WINDOW:]
        self._window = w
        peak = float(np.abs(w).max()) if len(w) else 0.0
        rms = float(np.sqrt(np.mean(np.square(w, dtype=np.float64)))) if len(w) else 0.0
        self.level.peak_db, self.level.rms_db = db(peak), db(rms)
        self.level.hold_db = max(self.level.hold_db, db(float(np.abs(x).max())))
        if got[-1][1] > 0:
            self._heard_to = got[-1][1] + len(got[-1][0]) / self._rate_in
        if self.recording:
            x = self._resampled(np.concatenate([self._in_span(b, t) for b, t in got]))
            self._take.append(x)
            # voiced 50 ms windows inside the new audio (auto-stop looks at the last one)
            start = self._take_frames
            self._take_frames += len(x)
            for k in range(0, len(x), WINDOW):
                seg = x[k:k + WINDOW]
                if len(seg) and db(float(np.sqrt(np.mean(np.square(seg, dtype=np.float64))))) > VOICED_DB:
                    self._voiced = True
                    self._last_voiced = start + k + len(seg)
        return len(x)

    def _resampled(self, x: np.ndarray) -> np.ndarray:
        if self._rate_in == RATE or not len(x):
            return x
        from audio.decode import resample

        return resample(x, self._rate_in, RATE).astype(np.float32)

    def _in_span(self, block: np.ndarray, t: float) -> np.ndarray:
        """The part of a block (first frame captured at stream time ``t``) inside the take's
        span; the whole block when the device gives no capture times."""
        if t <= 0:
            return block
        n = len(block)
        a = 0 if self._t_from is None else min(n, max(0, math.ceil((self._t_from - t) * self._rate_in)))
        b = n if self._t_to is None else min(n, max(0, math.ceil((self._t_to - t) * self._rate_in)))
        return block[a:max(a, b)]

    def _now(self) -> float | None:
        """The stream's clock now (None when the stream is gone or has no clock)."""
        try:
            t = float(self._stream.time) if self._stream is not None else 0.0
        except Exception:
            return None
        return t if t > 0 else None

    def start_take(self) -> None:
        """Start a take at the moment of the call: what the microphone heard before (still on
        its way through the device's input latency) is not part of it."""
        self.pump()
        self._take, self._take_frames = [], 0
        self._voiced, self._last_voiced = False, 0
        self.level.hold_db = FLOOR_DB
        self._t_from, self._t_to = self._now(), None
        self.recording = True
        self.pump()

    def stop_take(self) -> np.ndarray:
        """End the take at the moment of the call: what the microphone heard until then but
        the device has not delivered yet (its input latency) is waited for and kept, and
        nothing heard after it is (a key pressed right at the end of the voice keeps its last
        sound, and no more)."""
        import time

        from reader.base.clock import SYSTEM_CLOCK

        t_to = self._now() if self.recording else None
        if t_to is not None and self._heard_to > -math.inf:
            self._t_to = t_to
            try:
                lat = float(self._stream.latency)
            except Exception:
                lat = 0.0
            # (a real wait for input still in flight: it sleeps)
            deadline = SYSTEM_CLOCK.seconds() + min(1.0, lat + 4 * self.blocksize / self._rate_in
                                                    + 0.1)
            while self._heard_to < t_to and SYSTEM_CLOCK.seconds() < deadline:
                if not self.pump():
                    time.sleep(0.003)
        self.pump()
        self.recording = False
        self._t_from = self._t_to = None
        x = np.concatenate(self._take) if self._take else np.zeros(0, np.float32)
        self._take, self._take_frames = [], 0
        return x.astype(np.float32, copy=False)

    def cancel_take(self) -> None:
        self.recording = False
        self._t_from = self._t_to = None
        self._take, self._take_frames = [], 0

    @property
    def take_seconds(self) -> float:
        return self._take_frames / RATE

    def should_auto_stop(self, after_s: float) -> bool:
        """Sound was heard and the last ``after_s`` seconds were quiet."""
        if not self.recording or not after_s or after_s <= 0 or not self._voiced:
            return False
        return self._take_frames - self._last_voiced >= after_s * RATE


# ------------------------------------------------------------------------------- a take
@dataclass
class Take:
    samples: np.ndarray  # as recorded, 48 kHz mono float32
    start: int  # the sound: samples[start:end]
    end: int
    peak_db: float
    clipped: int  # samples at full scale
    warnings: list[str] = field(default_factory=list)

    @property
    def trimmed(self) -> np.ndarray:
        return self.samples[self.start:self.end]

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / RATE

    @property
    def usable(self) -> bool:
        return "nothing heard" not in self.warnings


def analyse(x, rate: int = RATE) -> Take:
    """Trim a take to its sound (``audio.decode.trim_silence``, sample-exact) and check it."""
    from audio.decode import trim_silence

    x = np.asarray(x, dtype=np.float32)
    if rate != RATE:
        from audio.decode import resample

        x = resample(x, rate, RATE).astype(np.float32)
    peak = float(np.abs(x).max()) if len(x) else 0.0
    clipped = int(np.count_nonzero(np.abs(x) >= CLIP_LEVEL)) if len(x) else 0
    warnings: list[str] = []
    s, e = trim_silence(x, RATE) if peak > 0 else (0, 0)
    if db(peak) < NOTHING_DB or e <= s:
        warnings.append("nothing heard")
        s = e = 0
    else:
        if clipped >= 3 or db(peak) > LOUD_DB:
            warnings.append("too loud")
        if (e - s) / RATE < MIN_SOUND_S:
            warnings.append("too short")
    return Take(x, s, e, db(peak), clipped, warnings)


def save_take(path, x) -> Path:
    """Write ``x`` as FLAC, 48 kHz mono 24-bit, atomically (a temporary file, then rename)."""
    import soundfile as sf

    from reader.base.files import write_target

    path = write_target(path)  # a link is written through (the link stays)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(tmp), np.clip(np.asarray(x, np.float32), -1.0, 1.0), RATE,
                 format="FLAC", subtype="PCM_24")
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise OutputError(f"cannot save {path}: {' '.join(str(e).split())}") from None
    return path


def load_take(path) -> np.ndarray:
    import soundfile as sf

    x, rate = sf.read(str(path), dtype="float32", always_2d=True)
    x = x.mean(axis=1).astype(np.float32)
    if rate != RATE:
        from audio.decode import resample

        x = resample(x, rate, RATE).astype(np.float32)
    return x


# ------------------------------------------------------------------------------- playback
class Player:
    """Plays one take on an output device, in the background (``p`` in the recorder)."""

    def __init__(self, device=None):
        self.device = device
        self._stream = None

    def play(self, x) -> None:
        from audio.output import resolve_device

        self.stop()
        sd = _sd()
        info = resolve_device(self.device)  # DeviceError: no output
        data = np.asarray(x, np.float32)
        pos = [0]

        def cb(outdata, frames, time_info, status):
            n = min(frames, len(data) - pos[0])
            outdata[:n, 0] = data[pos[0]:pos[0] + n]
            outdata[n:, 0] = 0
            pos[0] += n
            if n < frames:
                raise sd.CallbackStop

        try:
            # low latency: what the device already holds keeps sounding after stop()
            self._stream = sd.OutputStream(samplerate=RATE, channels=1, dtype="float32",
                                           device=info["index"], callback=cb, latency="low")
            self._stream.start()
        except sd.PortAudioError as e:
            self._stream = None
            raise DeviceError(f"cannot play on {info['name']!r} ({' '.join(str(e).split())})") from None

    @property
    def playing(self) -> bool:
        return self._stream is not None and self._stream.active

    def stop(self) -> None:
        """Stop at once; returns when what the device still held has sounded (so a take
        started next does not pick up the end of the playback)."""
        if self._stream is not None:
            was_active = self._stream.active
            try:
                lat = float(self._stream.latency)
                self._stream.abort()
                self._stream.close()
            except Exception:
                lat = 0.0
            self._stream = None
            if was_active:
                import time

                time.sleep(min(0.3, max(0.05, 2 * lat)))


def meter_bar(level_db: float, width: int = 40, lo: float = -60.0) -> str:
    """A text bar for a dBFS value: ``lo`` dBFS = empty, 0 dBFS = full."""
    frac = min(1.0, max(0.0, (level_db - lo) / -lo))
    n = int(round(frac * width))
    return "█" * n + "·" * (width - n)
