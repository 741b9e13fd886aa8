"""Loudness and peaks: one loudness for every clip, true peaks under the ceiling, no limiter.

* ``integrated_lufs(x, rate)``: BS.1770-4 integrated loudness (pyloudnorm; K-weighting, gating).
* ``true_peak_db(x)``: the peak of the signal 4x oversampled (BS.1770 annex 2), in dBTP, so the
  inter-sample peaks that an mp3/ogg encoder or a DAC's reconstruction would make are counted.
* ``normalizing_gain(x, rate)``: the linear gain that brings a clip to ``TARGET_LUFS``, lowered
  only when the true peak would then exceed ``CEILING_DBTP`` (so a clip is never limited).

Every voice uses the same target: the synthesized voice bakes the gain into its cached clips,
recorded packs store it per clip (``audio.pack``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["TARGET_LUFS", "CEILING_DBTP", "integrated_lufs", "true_peak_db", "normalizing_gain",
           "short_lufs"]

#: speech loudness of every clip (EBU R128's -23 LUFS is for broadcast mixes; a reader is louder)
TARGET_LUFS = -20.0
#: ceiling for inter-sample peaks, so lossy encoding does not clip
CEILING_DBTP = -1.5
_METERS: dict[int, object] = {}


def _meter(rate: int):
    m = _METERS.get(rate)
    if m is None:
        import pyloudnorm

        m = _METERS[rate] = pyloudnorm.Meter(rate)  # BS.1770-4, 400 ms blocks
    return m


def integrated_lufs(x, rate: int) -> float:
    """Integrated loudness in LUFS; -inf for silence or a clip shorter than one 400 ms block."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < int(0.4 * rate) + 1 or not np.any(x):
        return float("-inf")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(_meter(rate).integrated_loudness(x))


def short_lufs(x, rate: int) -> float:
    """Loudness of a short stretch (>= 0.4 s), BS.1770 without the relative gate: the mean
    K-weighted power, as for a single block."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < int(0.4 * rate) or not np.any(x):
        return float("-inf")
    meter = _meter(rate)
    filters = getattr(meter, "_filters", None)  # pyloudnorm's K-weighting stages
    if not filters:
        return integrated_lufs(x, rate)
    y = x.copy()
    for f in filters.values():
        y = f.apply_filter(y)
    p = float(np.mean(y * y))
    return -0.691 + 10 * np.log10(p) if p > 0 else float("-inf")


def true_peak_db(x) -> float:
    """Peak of the 4x oversampled signal in dB (dBTP); -inf for silence."""
    from scipy.signal import resample_poly

    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if not len(x):
        return float("-inf")
    y = resample_poly(np.concatenate([x, np.zeros(64)]), 4, 1)
    p = max(float(np.max(np.abs(y))), float(np.max(np.abs(x))))
    return 20 * np.log10(p) if p > 0 else float("-inf")


def normalizing_gain(x, rate: int, *, measure=None, target: float = TARGET_LUFS,
                     ceiling: float = CEILING_DBTP) -> float:
    """Linear gain bringing ``measure`` (default the whole clip) to ``target`` LUFS, lowered so
    that the true peak of the whole gained clip stays at or under ``ceiling`` dBTP."""
    lufs = integrated_lufs(x if measure is None else measure, rate)
    if not np.isfinite(lufs):
        return 1.0
    gain_db = target - lufs
    peak = true_peak_db(x)
    if np.isfinite(peak):
        gain_db = min(gain_db, ceiling - peak)
    return float(10 ** (gain_db / 20))
