"""Measurements of what a listener hears, for the acoustic benchmark and tests (numpy/scipy only).

Each function takes float samples at ``rate`` and returns plain numbers; none knows how the
audio was made, so they measure recorded voices as well as the synthesized one.

* ``heard_bounds``: first and last sound, a sound being a 5 ms window whose RMS is above
  -50 dBFS (1 ms steps).
* ``loop_similarity``: the largest normalised autocorrelation at lags 15-60 ms: 1.000 for a
  loop of whole periods repeated exactly; a living held vowel stays lower.
* ``ripple_db``: amplitude flutter of a held sound: the level of each 5 ms window (about one
  pitch period or more) in dB, band-passed to 20-60 Hz, as a peak-to-peak figure (2 sqrt(2) x
  the band's RMS).
* ``dip_and_return``: a >= 10 dB dip followed by a return within a stretch (the "double
  ending" of a ku-final vowel).
* ``f0_semitones``: voiced pitch (WORLD's Harvest) in semitones over 100 Hz.
* ``sharp_rise``: the acoustic onset near a time: the first 1 ms step where the rise of
  spectral energy (positive log-spectral flux above 300 Hz, 8 ms windows) reaches half its
  largest value in the search window.
* ``vowel_onset``: where periodic low-band energy (150-1000 Hz) rises fastest near a time.
"""
from __future__ import annotations

import numpy as np

__all__ = ["heard_bounds", "loop_similarity", "ripple_db", "dip_and_return", "f0_semitones",
           "sharp_rise", "vowel_onset", "window_db"]


def window_db(x, rate: int, win_ms: float = 5.0, hop_ms: float = 1.0):
    """RMS level in dBFS of ``win_ms`` windows starting every ``hop_ms``."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    win, hop = max(1, round(rate * win_ms / 1000)), max(1, round(rate * hop_ms / 1000))
    if len(x) < win:
        return np.full(1, -200.0)
    p = np.concatenate([[0.0], np.cumsum(x * x)])
    s = np.arange(0, len(x) - win + 1, hop)
    return 10 * np.log10((p[s + win] - p[s]) / win + 1e-20)


def heard_bounds(x, rate: int, threshold_db: float = -50.0):
    """(first, last) sample of sound: start of the first and end of the last 5 ms window above
    ``threshold_db`` (RMS, dBFS), 1 ms resolution; None when nothing is heard."""
    e = window_db(x, rate)
    hop, win = rate // 1000, rate * 5 // 1000
    hit = np.nonzero(e > threshold_db)[0]
    if not len(hit):
        return None
    return int(hit[0] * hop), int(hit[-1] * hop + win)


def loop_similarity(x, rate: int, lo_ms: float = 15.0, hi_ms: float = 60.0) -> float:
    """Largest normalised autocorrelation of ``x`` at a lag between ``lo_ms`` and ``hi_ms``."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    x = x - x.mean()
    lo, hi = round(rate * lo_ms / 1000), round(rate * hi_ms / 1000)
    if len(x) < 2 * hi:
        return float("nan")
    n = len(x)
    nfft = 1 << int(np.ceil(np.log2(2 * n)))
    X = np.fft.rfft(x, nfft)
    ac = np.fft.irfft(X * np.conj(X), nfft)[:hi + 1]
    c = np.concatenate([[0.0], np.cumsum(x * x)])
    best = -1.0
    lags = np.arange(lo, hi + 1)
    e1 = c[n - lags] - c[0]  # x[0:n-k]
    e2 = c[n] - c[lags]  # x[k:n]
    r = ac[lags] / np.sqrt(e1 * e2 + 1e-30)
    best = float(np.max(r))
    return best


def ripple_db(x, rate: int) -> float:
    """Peak-to-peak amplitude (dB) of the 20-60 Hz flutter of the level of a held sound."""
    from scipy.signal import butter, sosfiltfilt

    hop = rate // 1000  # 1 ms: the level signal runs at 1 kHz
    e = window_db(x, rate, win_ms=5.0, hop_ms=1.0)
    if len(e) < 300:
        return float("nan")
    sos = butter(4, [20, 60], btype="bandpass", fs=1000 / (hop * 1000 / rate), output="sos")
    b = sosfiltfilt(sos, e - e.mean())[50:-50]
    return float(2 * np.sqrt(2) * np.sqrt(np.mean(b * b)))


def dip_and_return(x, rate: int, depth_db: float = 10.0) -> bool:
    """True when the level (5 ms windows) falls ``depth_db`` under an earlier point and then
    comes back up by ``depth_db`` within ``x``."""
    e = window_db(x, rate, win_ms=5.0, hop_ms=1.0)
    if len(e) < 3:
        return False
    run_max = np.maximum.accumulate(e)
    after_max = np.maximum.accumulate(e[::-1])[::-1]
    return bool(np.any((run_max - e >= depth_db) & (after_max - e >= depth_db)))


def f0_semitones(x, rate: int):
    """Voiced f0 (Harvest, 5 ms frames) in semitones over 100 Hz; an empty array if none."""
    import pyworld as pw

    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < rate // 10:
        return np.zeros(0)
    f0, _t = pw.harvest(x, rate, f0_floor=80.0, f0_ceil=700.0, frame_period=5.0)
    f0 = f0[f0 > 0]
    return 12 * np.log2(f0 / 100.0)


def _stft_db(x, rate: int, win_ms: float = 8.0, hop_ms: float = 1.0):
    win, hop = round(rate * win_ms / 1000), round(rate * hop_ms / 1000)
    if len(x) < win:
        return np.zeros((0, win // 2 + 1)), hop, win
    idx = np.arange(0, len(x) - win + 1, hop)[:, None] + np.arange(win)[None, :]
    frames = x[idx] * np.hanning(win)[None, :]
    spec = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    return 10 * np.log10(spec + 1e-12), hop, win


def sharp_rise(x, rate: int, around: int, before_ms: float = 60.0, after_ms: float = 60.0):
    """The acoustic onset near sample ``around``: the first 1 ms step in [around - before,
    around + after] whose positive spectral flux (bins above 300 Hz, 8 ms windows, dB rises
    summed) reaches half the largest flux in that span.  Sample index (window centre)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    a = max(0, around - round(rate * (before_ms + 20) / 1000))
    b = min(len(x), around + round(rate * (after_ms + 20) / 1000))
    s, hop, win = _stft_db(x[a:b], rate)
    if len(s) < 4:
        return around
    lo_bin = int(300 * win / rate)
    s = np.maximum(s[:, lo_bin:], s[:, lo_bin:].max() - 80)  # ignore changes deep in the floor
    flux = np.maximum(0.0, s[2:] - s[:-2]).sum(axis=1)  # 2 ms apart
    centres = a + (np.arange(len(flux)) + 1) * hop + win // 2
    ok = (centres >= around - rate * before_ms / 1000) & (centres <= around + rate * after_ms / 1000)
    if not np.any(ok):
        return around
    f = np.where(ok, flux, 0.0)
    i = int(np.nonzero(f >= 0.5 * f.max())[0][0])
    return int(centres[i])


def vowel_onset(x, rate: int, around: int, before_ms: float = 60.0, after_ms: float = 60.0):
    """Where the 150-1000 Hz band's level (8 ms windows) rises fastest near ``around``."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    a = max(0, around - round(rate * (before_ms + 20) / 1000))
    b = min(len(x), around + round(rate * (after_ms + 20) / 1000))
    s, hop, win = _stft_db(x[a:b], rate)
    if len(s) < 12:
        return around
    lo, hi = int(150 * win / rate), int(1000 * win / rate) + 1
    band = 10 * np.log10(np.sum(10 ** (s[:, lo:hi] / 10), axis=1) + 1e-12)
    rise = band[10:] - band[:-10]  # over 10 ms
    centres = a + (np.arange(len(rise)) + 5) * hop + win // 2
    ok = (centres >= around - rate * before_ms / 1000) & (centres <= around + rate * after_ms / 1000)
    if not np.any(ok):
        return around
    return int(centres[np.argmax(np.where(ok, rise, -np.inf))])
