"""Decode any audio file a user may bring into float32 mono at a chosen rate.

``decode(path, rate)`` is the only entry point the rest of karuta needs.  Every failure is an
``AudioFileError`` whose message is one line naming the file and what is wrong with it.

Routes (measured on the project's Debian machine, libsndfile 1.2.2):

* wav, flac, ogg (Vorbis), opus, mp3, aiff, ...: in-process with ``soundfile`` (1-22 ms a
  file).  libsndfile reads the LAME/Xing gapless header of an mp3 and drops the encoder delay
  and padding itself (a 44,223-frame tone came back as exactly 44,223 frames, onset at sample
  0); an mp3 *without* that header comes back with ~880 extra leading samples of near silence,
  which ``trim_silence`` removes.  So "encoder padding" never reaches a pack.
* m4a / aac / anything libsndfile refuses: ``ffmpeg`` in a subprocess (~140 ms a file),
  decoded to 32-bit float at the file's own rate, mono.  AAC priming is removed by ffmpeg from
  the mp4 edit list; trailing padding is silence and is trimmed.

Any bit depth (8/16/24/32-bit integer, 32/64-bit float) comes back as float32 in [-1, 1]
(float files may exceed 1: that is reported as clipping, not an error).  Channels are averaged.
Resampling (any rate to any rate) is band-limited, by FFT, numpy only.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reader.base.errors import AudioFileError

__all__ = ["Decoded", "decode", "resample", "trim_silence", "AUDIO_EXTENSIONS", "MAX_SECONDS"]

#: file name endings taken for audio
AUDIO_EXTENSIONS = (".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".aac",
                    ".mp4", ".aif", ".aiff", ".caf", ".w64")
_SOUNDFILE_FIRST = {".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff",
                    ".caf", ".w64"}
#: a clip (or a one-file-per-poem recording) longer than this is refused before decoding
MAX_SECONDS = 600.0
#: files larger than this are refused without being read
MAX_BYTES = 512 * 1024 * 1024
MIN_RATE, MAX_RATE = 4000, 384000


@dataclass
class Decoded:
    """A decoded file.  ``samples`` is float32 mono at ``rate``."""

    samples: object  # numpy.ndarray
    rate: int
    source_rate: int
    channels: int
    #: samples at or beyond full scale in the file as decoded (before resampling)
    clipped_samples: int
    source_frames: int

    @property
    def seconds(self) -> float:
        return self.source_frames / self.source_rate if self.source_rate else 0.0


def _fail(path: Path, what: str) -> AudioFileError:
    return AudioFileError(f"{path.name}: {what}")


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    # libsndfile messages repeat the path: keep the reason
    if "Error opening" in text and ":" in text:
        text = text.rsplit(":", 1)[-1].strip()
    if "does not exist" in text:  # libsndfile's words for a format it cannot recognise
        text = "format not recognised"
    return text[:160] or type(e).__name__


def _via_soundfile(path: Path):
    import numpy as np
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception as e:  # LibsndfileError, RuntimeError, TypeError on odd headers
        raise _fail(path, f"not a readable audio file ({_one_line(e)})") from None
    if info.samplerate and info.frames / info.samplerate > MAX_SECONDS:
        raise _fail(path, f"too long for a clip ({info.frames / info.samplerate / 60:.0f} min)")
    try:
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception as e:
        raise _fail(path, f"corrupt or truncated ({_one_line(e)})") from None
    return np.asarray(data), int(rate)


def _ffprobe_seconds(path: Path) -> float | None:
    exe = shutil.which("ffprobe")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip()
        return float(out.splitlines()[0]) if out else None
    except (ValueError, IndexError, subprocess.SubprocessError, OSError):
        return None


def _via_ffmpeg(path: Path):
    import numpy as np

    exe = shutil.which("ffmpeg")
    if not exe:
        raise _fail(path, "needs ffmpeg to decode (install the ffmpeg package)")
    seconds = _ffprobe_seconds(path)
    if seconds is not None and seconds > MAX_SECONDS:
        raise _fail(path, f"too long for a clip ({seconds / 60:.0f} min)")
    # the file's own rate: ask ffprobe for it, else let ffmpeg pick 48k
    rate = 48000
    probe = shutil.which("ffprobe")
    if probe:
        try:
            out = subprocess.run(
                [probe, "-v", "error", "-select_streams", "a:0", "-show_entries",
                 "stream=sample_rate", "-of", "csv=p=0", str(path)],
                capture_output=True, text=True, timeout=30,
            ).stdout.strip()
            if out:
                rate = int(out.splitlines()[0].strip().strip(","))
        except (ValueError, subprocess.SubprocessError, OSError):
            pass
    if not MIN_RATE <= rate <= MAX_RATE:
        rate = 48000
    try:
        proc = subprocess.run(
            [exe, "-nostdin", "-v", "error", "-i", str(path), "-map", "0:a:0", "-vn",
             "-t", str(MAX_SECONDS), "-f", "f32le", "-ac", "1", "-ar", str(rate), "-"],
            capture_output=True, timeout=120,
        )
    except subprocess.TimeoutExpired:
        raise _fail(path, "ffmpeg took too long to decode it") from None
    except OSError as e:
        raise _fail(path, f"cannot run ffmpeg ({_one_line(e)})") from None
    if proc.returncode != 0 or not proc.stdout:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = err[-1] if err else "no audio stream"
        raise _fail(path, f"not a readable audio file ({' '.join(reason.split())[:160]})")
    data = np.frombuffer(proc.stdout[: len(proc.stdout) // 4 * 4], dtype="<f4").astype(np.float32)
    return data.reshape(-1, 1), rate


def decode(path, rate: int | None = 48000) -> Decoded:
    """Decode ``path`` to float32 mono, resampled to ``rate`` (None: keep the file's rate)."""
    import numpy as np

    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise _fail(path, "missing") from None
    except OSError as e:
        raise _fail(path, f"cannot read ({_one_line(e)})") from None
    if not path.is_file():
        raise _fail(path, "not a file")
    if st.st_size == 0:
        raise _fail(path, "empty file (0 bytes)")
    if st.st_size > MAX_BYTES:
        raise _fail(path, f"too large for a clip ({st.st_size // (1024 * 1024)} MB)")
    if not os.access(path, os.R_OK):
        raise _fail(path, "permission denied")

    ext = path.suffix.lower()
    if ext in _SOUNDFILE_FIRST:
        __import__("audio.quiet").quiet.filter_native_stderr()  # libmpg123's notes (karuta: only)
        try:
            data, src_rate = _via_soundfile(path)
        except AudioFileError as first:
            if "too long" in str(first):
                raise
            # libsndfile may lack a codec ffmpeg has (e.g. an .ogg holding Speex): try it,
            # but report libsndfile's reason if ffmpeg cannot read it either
            if not shutil.which("ffmpeg"):
                raise
            try:
                data, src_rate = _via_ffmpeg(path)
            except AudioFileError:
                raise first from None
    else:
        data, src_rate = _via_ffmpeg(path)

    if not MIN_RATE <= src_rate <= MAX_RATE:
        raise _fail(path, f"unsupported sample rate {src_rate} Hz")
    channels = int(data.shape[1]) if data.ndim == 2 else 1
    if data.size == 0:
        raise _fail(path, "no audio in it (0 frames)")
    if not np.all(np.isfinite(data)):
        data = np.nan_to_num(data, nan=0.0, posinf=1.0, neginf=-1.0)
    clipped = int(np.count_nonzero(np.abs(data) >= 0.9999))
    mono = data.mean(axis=1, dtype=np.float64).astype(np.float32) if data.ndim == 2 else data
    frames = len(mono)
    target = src_rate if rate is None else int(rate)
    out = resample(mono, src_rate, target)
    return Decoded(out, target, src_rate, channels, clipped, frames)


def resample(x, src_rate: int, dst_rate: int):
    """Band-limited resampling by FFT (numpy only); ``round(len(x) * dst / src)`` frames out.

    The signal is zero-padded before the transform so the circular wrap of the FFT falls in
    silence instead of folding the end of a clip onto its start.
    """
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    if src_rate == dst_rate or len(x) == 0:
        return x.copy()
    from math import gcd

    g = gcd(int(src_rate), int(dst_rate))
    up, down = dst_rate // g, src_rate // g
    n = len(x)
    pad = max(256, int(0.02 * src_rate))
    total = n + 2 * pad
    # padded length: ``down`` times a 2-3-5-7-smooth number, so the output length is an
    # integer and both transforms have only small prime factors (fast)
    k = _smooth_at_least(-(-total // down))
    L = k * down
    M = k * up
    buf = np.zeros(L, dtype=np.float64)
    buf[pad:pad + n] = x
    X = np.fft.rfft(buf)
    Y = np.zeros(M // 2 + 1, dtype=np.complex128)
    k = min(len(X), len(Y))
    Y[:k] = X[:k]
    if M < L:  # downsampling: the new Nyquist bin must be real
        Y[-1] = Y[-1].real
    y = np.fft.irfft(Y, M) * (M / L)
    start = round(pad * dst_rate / src_rate)
    length = round(n * dst_rate / src_rate)
    return y[start:start + length].astype(np.float32)


def _smooth_at_least(n: int) -> int:
    """The smallest 2-3-5-7-smooth integer >= n."""
    best = None
    p7 = 1
    while p7 < 2 * n:
        p5 = p7
        while p5 < 2 * n:
            p3 = p5
            while p3 < 2 * n:
                p2 = p3
                while p2 < n:
                    p2 *= 2
                if best is None or p2 < best:
                    best = p2
                p3 *= 3
            p5 *= 5
        p7 *= 7
    return best if best is not None else 1


def trim_silence(x, rate: int, floor_db: float = -48.0):
    """``(start, end)``: the span from the first to the last sample that is sound.

    Sound is anything above ``floor_db`` relative to the clip's peak, and above six times the
    noise floor (the RMS of the quietest 10 % of 10 ms frames).  Isolated clicks and noise
    peaks (energy in no two consecutive 10 ms frames) more than 20 ms from the sound are ignored.  Returns (0, 0)
    for a silent clip.  The cut is sample-exact: the first and last kept samples are above
    the threshold, so joined clips leave exactly the pause that was asked for.
    """
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    if len(x) == 0:
        return 0, 0
    a = np.abs(x)
    peak = float(a.max())
    if peak <= 1e-6:
        return 0, 0
    hop = max(1, rate // 100)
    nfr = len(x) // hop
    if nfr >= 10:
        rms = np.sqrt(np.mean(x[: nfr * hop].astype(np.float64).reshape(nfr, hop) ** 2, axis=1))
        noise = float(np.sort(rms)[: max(1, nfr // 10)].mean())
    else:
        noise = 0.0
    # the noise estimate is capped: a clip with no silence at all (a steady tone) has no floor
    thr = max(peak * 10 ** (floor_db / 20), min(6.0 * noise, peak * 10 ** (-30 / 20)), 1e-5)
    above = np.flatnonzero(a > thr)
    if len(above) == 0:
        return 0, 0
    # frames with real energy, in runs of at least two (20 ms): where the speech is
    loud = np.array([], int)
    if nfr >= 10:
        on = rms > max(thr * 0.5, 2 * noise)
        both = on[:-1] & on[1:]
        loud = np.flatnonzero(np.concatenate([both, [False]]) | np.concatenate([[False], both]))
    start, end = int(above[0]), int(above[-1]) + 1
    if len(loud):
        gap = 2 * hop  # samples above the threshold count only next to the sound
        first, last = int(loud[0]) * hop, int(loud[-1] + 1) * hop
        ok = above[(above >= first - gap) & (above < last + gap)]
        if len(ok):
            start, end = int(ok[0]), int(ok[-1]) + 1
    return start, end
