"""Where each mora is in a recording: a mora timeline estimated by DTW (numpy only).

A recorded clip is aligned with the synthesized reading of the same text, whose mora onsets
are exact (``SynthVoice.layout``).  Both are turned into MFCC frames (10 ms hop, 32 ms window,
40 log-mel bands, coefficients 0-12 with per-utterance mean and variance normalisation) and
aligned by dynamic time warping; each reference mora onset is carried over the warping path
into the recording.

Confidence (0-1) says how much to trust the timeline.  It compares the mean frame distance on
the warping path with the mean distance between *all* frame pairs of the two clips: a clip
that says the same morae as the reference follows a path much cheaper than average (ratio
~0.3-0.5), a clip of some other text or noise does not (ratio > 0.7).  Long stretches where
the path runs flat (one side frozen while the other moves more than 0.8 s) also lower it.

Without a usable reference (no synthesizer), ``proportional`` spreads the reference layout
over the clip linearly and reports confidence 0 with method "proportional".
"""
from __future__ import annotations

from dataclasses import dataclass

from audio.voice import Layout, Mora

__all__ = ["Timeline", "features", "dtw", "align", "proportional", "LOW_CONFIDENCE"]

#: timelines below this are reported by ``karuta voice check``
LOW_CONFIDENCE = 0.5
_FEAT_RATE = 16000
_HOP = 160  # 10 ms at 16 kHz
_NFFT = 512


@dataclass(frozen=True)
class Timeline:
    morae: tuple[Mora, ...]
    confidence: float
    method: str  # "dtw" | "proportional" | "manual"

    def to_json(self) -> dict:
        return {"morae": [[m.kana, m.start, m.end] for m in self.morae],
                "confidence": round(float(self.confidence), 3), "method": self.method}

    @classmethod
    def from_json(cls, d: dict) -> "Timeline":
        morae = tuple(Mora(str(k), int(s), int(e)) for k, s, e in d["morae"])
        return cls(morae, float(d.get("confidence", 0.0)), str(d.get("method", "dtw")))


_MEL_CACHE: dict = {}


def _mel_matrix(n_mels: int = 40, fmin: float = 80.0, fmax: float = 7600.0):
    import numpy as np

    key = (n_mels, fmin, fmax)
    if key in _MEL_CACHE:
        return _MEL_CACHE[key]
    mel = lambda f: 2595.0 * np.log10(1 + f / 700.0)  # noqa: E731
    inv = lambda m: 700.0 * (10 ** (m / 2595.0) - 1)  # noqa: E731
    pts = inv(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    freqs = np.fft.rfftfreq(_NFFT, 1 / _FEAT_RATE)
    fb = np.zeros((n_mels, len(freqs)))
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[i] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
    n = np.arange(n_mels)
    dct = np.cos(np.pi / n_mels * (n + 0.5)[None, :] * np.arange(13)[:, None])
    _MEL_CACHE[key] = (fb, dct)
    return fb, dct


def features(x, rate: int):
    """MFCC frames (one per 10 ms) of ``x``: array (frames, 13), normalised per utterance."""
    import numpy as np

    from audio.decode import resample

    y = resample(np.asarray(x, np.float32), rate, _FEAT_RATE).astype(np.float64)
    y = np.append(y[0] if len(y) else 0.0, y[1:] - 0.97 * y[:-1])  # pre-emphasis
    n = max(1, 1 + (len(y) - _NFFT) // _HOP) if len(y) >= _NFFT else 1
    if len(y) < _NFFT + (n - 1) * _HOP:
        y = np.concatenate([y, np.zeros(_NFFT + (n - 1) * _HOP - len(y))])
    idx = np.arange(_NFFT)[None, :] + _HOP * np.arange(n)[:, None]
    frames = y[idx] * np.hanning(_NFFT)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    fb, dct = _mel_matrix()
    logmel = np.log(power @ fb.T + 1e-8)
    c = logmel @ dct.T
    c -= c.mean(axis=0)
    c /= c.std(axis=0) + 1e-6
    return c


def dtw(A, B):
    """Align feature rows of A (reference) with rows of B.  Returns (path_a, path_b, costs).

    Steps (1,1), (1,0), (0,1), each adding the local Euclidean distance.  Each row is solved
    at once with a min-plus prefix scan, so the cost is O(len(A) * len(B)) in numpy.
    """
    import numpy as np

    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    C = np.sqrt(np.maximum(
        (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T, 0.0))
    n, m = C.shape
    move = np.zeros((n, m), np.int8)  # 0 diag, 1 from (i-1, j), 2 from (i, j-1)
    D = np.cumsum(C[0])
    move[0, 1:] = 2
    for i in range(1, n):
        prev = D
        diag = np.concatenate([[np.inf], prev[:-1]])
        vert_better = prev <= diag
        A_ = C[i] + np.where(vert_better, prev, diag)
        S = np.cumsum(C[i])
        key = A_ - S
        run = np.minimum.accumulate(key)
        D = S + run
        row = np.where(vert_better, 1, 0).astype(np.int8)
        row[key > run] = 2
        move[i] = row
    i, j = n - 1, m - 1
    pa, pb = [i], [j]
    while i > 0 or j > 0:
        mv = move[i, j]
        if mv == 0:
            i, j = i - 1, j - 1
        elif mv == 1:
            i -= 1
        else:
            j -= 1
        pa.append(i)
        pb.append(j)
    pa = np.array(pa[::-1])
    pb = np.array(pb[::-1])
    return pa, pb, C


def _confidence(pa, pb, C) -> float:
    import numpy as np

    path_cost = float(C[pa, pb].mean())
    all_cost = float(C.mean()) + 1e-9
    ratio = path_cost / all_cost
    conf = float(np.clip((0.75 - ratio) / (0.75 - 0.45), 0.0, 1.0))
    # long flat runs: one side frozen for > 0.8 s (80 frames) while the other moves
    longest = 0
    for p in (pa, pb):
        same = np.flatnonzero(np.diff(p) == 0)
        if len(same):
            breaks = np.flatnonzero(np.diff(same) != 1)
            runs = np.diff(np.concatenate([[-1], breaks, [len(same) - 1]]))
            longest = max(longest, int(runs.max()))
    if longest > 80:
        conf *= max(0.0, 1.0 - (longest - 80) / 120.0)
    return conf


def _morae_from_onsets(kanas, onsets, frames: int) -> tuple[Mora, ...]:
    out = []
    last = 0
    min_len = 1
    n = len(kanas)
    for k, (kana, s) in enumerate(zip(kanas, onsets)):
        # strictly increasing, and room left for the morae after this one
        s = int(min(max(s, last if k == 0 else last + min_len), frames - (n - k) * min_len))
        out.append([kana, max(0, s)])
        last = s
    morae = []
    for k, (kana, s) in enumerate(out):
        e = out[k + 1][1] if k + 1 < n else frames
        morae.append(Mora(kana, s, e))
    if morae:
        morae[0] = Mora(morae[0].kana, 0, morae[0].end)
    return tuple(morae)


def proportional(frames: int, ref_layout: Layout) -> Timeline:
    """The reference layout stretched linearly over ``frames`` (confidence 0)."""
    scale = frames / max(1, ref_layout.frames)
    onsets = [round(m.start * scale) for m in ref_layout.morae]
    return Timeline(_morae_from_onsets([m.kana for m in ref_layout.morae], onsets, frames),
                    0.0, "proportional")


def align(recording, rate: int, reference, ref_layout: Layout) -> Timeline:
    """Mora timeline of ``recording`` (float mono at ``rate``) from a reference reading.

    ``reference`` is the reference's samples at ``ref_layout.sample_rate`` whose mora onsets
    ``ref_layout`` gives exactly.  Onsets come back in frames of ``recording``.
    """
    import numpy as np

    frames = len(recording)
    if frames == 0 or not ref_layout.morae:
        return Timeline((), 0.0, "dtw")
    A = features(reference, ref_layout.sample_rate)
    B = features(recording, rate)
    pa, pb, C = dtw(A, B)
    ref_hop = ref_layout.sample_rate * _HOP / _FEAT_RATE
    rec_hop = rate * _HOP / _FEAT_RATE
    first_b = np.full(len(A), -1)
    # first recording frame each reference frame is matched to
    order = np.argsort(pa, kind="stable")
    pa_s, pb_s = pa[order], pb[order]
    uniq, idx = np.unique(pa_s, return_index=True)
    first_b[uniq] = pb_s[idx]
    onsets = []
    for m in ref_layout.morae:
        r = min(len(A) - 1, int(round(m.start / ref_hop)))
        onsets.append(int(round(first_b[r] * rec_hop)))
    conf = _confidence(pa, pb, C)
    return Timeline(_morae_from_onsets([m.kana for m in ref_layout.morae], onsets, frames), conf, "dtw")
