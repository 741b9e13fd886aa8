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

    def __init__(self, device=None, blocksize: int = 480, latency="high"):
        sd = self._sdmod = _sd()
        self.info = resolve_input_device(device)
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

    # realtime: copy and queue, nothing else
    def _callback(self, indata, frames, time_info, status):
        if status.input_overflow:
            self.overflows += 1
        self._q.put(indata[:, 0].copy())

    def close(self):
        if self._stream is not None:
            import sounddevice as sd

            try:
                self._stream.abort()
                self._stream.close()
            except sd.PortAudioError:  # the device is already gone: nothing left to close
                pass
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
        x = np.concatenate(got)
        if self._rate_in != RATE:
            from audio.decode import resample

            x = resample(x, self._rate_in, RATE).astype(np.float32)
        w = np.concatenate([self._window, x])[-WINDOW:]
        self._window = w
        peak = float(np.abs(w).max()) if len(w) else 0.0
        rms = float(np.sqrt(np.mean(np.square(w, dtype=np.float64)))) if len(w) else 0.0
        self.level.peak_db, self.level.rms_db = db(peak), db(rms)
        self.level.hold_db = max(self.level.hold_db, db(float(np.abs(x).max())))
        if self.recording:
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

    def start_take(self) -> None:
        self.pump()  # what came before the key is not part of the take
        self._take, self._take_frames = [], 0
        self._voiced, self._last_voiced = False, 0
        self.level.hold_db = FLOOR_DB
        self.recording = True

    def stop_take(self) -> np.ndarray:
        self.pump()
        self.recording = False
        x = np.concatenate(self._take) if self._take else np.zeros(0, np.float32)
        self._take, self._take_frames = [], 0
        return x.astype(np.float32, copy=False)

    def cancel_take(self) -> None:
        self.recording = False
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
