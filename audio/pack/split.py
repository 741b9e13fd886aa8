"""Where a one-file recording's parts are: the 上の句, the 下の句 and, when the reader reads it
twice (上・下・下, as a kyogi reading does and many readers' sets are made), the 下の句's
repeat; and where the voice of a clip starts and ends (a breath or a click in a pause is not
the voice).

``voice_span``   the first and last sample of the voice in a clip: the runs of sound that
                 hold no voiced (periodic) 10 ms frames, or are too short to be a mora, and
                 are set apart from the voice by a quiet gap, are left out (a breath, a
                 click, a chair); the voice's own fading tail is kept down to the noise floor.
``find_parts``   the structure of a one-file poem: every pause between runs of voice is a
                 candidate; a pair of pauses (p, q) is a repeat when the stretch between them
                 and the stretch after q (to the voice's end) are alike (``audio.align``'s DTW
                 cost over its normalised log-mel cepstra, against the 上の句 as the baseline of "another text by the
                 same reader"), of like length, and the lengths fit the text's mora counts;
                 the split is then p, whatever pause is longest.  A sample-exact repeat (a
                 digital copy) is said as such.  With no repeat the split is chosen as before
                 (``importer.find_split``).
"""
from __future__ import annotations

from dataclasses import dataclass

_HOP_S = 0.01
#: a run of sound with less voiced time than this is not the voice (a click, a breath)
_MIN_VOICED_S = 0.06
#: a frame is voiced when its normalised autocorrelation at a pitch lag (60-400 Hz) is this high
_VOICED_R = 0.5
#: the quiet gap that sets a burst apart from the voice (a stop's closure is shorter)
_APART_S = 0.06
#: a repeat's cost against the first copy, over the cost of the 上の句 against it, under this
REPEAT_RATIO = 0.7
#: a digital copy: the normalised correlation of the two copies at the best lag
_COPY_CORR = 0.995


@dataclass(frozen=True)
class Parts:
    """Samples of a one-file poem: 上の句 [kami_start, kami_end), 下の句 [shimo_start,
    shimo_end); ``repeat``: the 下の句 read again [start, end) or None; ``copy``: the repeat
    is a digital copy of the first; ``ratio``: the repeat's similarity measure."""

    kami_start: int
    kami_end: int
    shimo_start: int
    shimo_end: int
    repeat: tuple[int, int] | None = None
    copy: bool = False
    ratio: float | None = None


def _frames(x, rate: int):
    import numpy as np

    hop = max(1, int(rate * _HOP_S))
    n = len(x) // hop
    f = np.asarray(x[: n * hop], np.float64).reshape(n, hop)
    return hop, f


def frame_db(x, rate: int):
    import numpy as np

    _, f = _frames(x, rate)
    return 10 * np.log10(np.mean(f * f, axis=1) + 1e-20)


def voiced_frames(x, rate: int):
    """Per 10 ms frame: True where the sound is periodic at a voice's pitch (60-400 Hz)."""
    import numpy as np

    n = len(x) // max(1, int(rate * _HOP_S))
    if n == 0:
        return np.zeros(0, bool)
    if rate > 16000:  # a voice's periodicity is as clear at 16 kHz, at a third of the cost
        from scipy.signal import resample_poly

        x, rate = resample_poly(np.asarray(x, np.float64), 16000, rate), 16000
    hop = max(1, int(rate * _HOP_S))
    win = 4 * hop  # 40 ms: two periods of 60 Hz
    y = np.concatenate([np.asarray(x, np.float64), np.zeros(win)])
    idx = np.arange(win)[None, :] + hop * np.arange(n)[:, None]
    fr = y[idx]
    fr = fr - fr.mean(axis=1, keepdims=True)
    nfft = 1 << int(np.ceil(np.log2(2 * win)))
    spec = np.fft.rfft(fr * np.hanning(win), nfft, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, nfft, axis=1)[:, :win]
    lo, hi = int(rate / 400), min(win - 1, int(rate / 60))
    # the window's own taper lowers long lags: divide by the window's autocorrelation
    wac = np.fft.irfft(np.abs(np.fft.rfft(np.hanning(win), nfft)) ** 2, nfft)[:win]
    r = ac[:, lo:hi] / (ac[:, :1] + 1e-20) / (wac[lo:hi] / wac[0])[None, :]
    return r.max(axis=1) > _VOICED_R


def _runs(mask):
    """(start, end) of the runs of True in ``mask``."""
    import numpy as np

    m = np.concatenate([[False], np.asarray(mask, bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(np.int8)))
    return list(zip(d[0::2].tolist(), d[1::2].tolist()))


@dataclass
class _Analysis:
    hop: int
    db: object
    loud: object  # frames louder than the voice threshold (30 dB under the loud frames)
    sound: object  # frames above the noise floor
    voice_runs: list  # (start, end) frames of loud runs that are voice
    bursts: list  # (start, end) frames of loud runs that are not voice

    def apart(self) -> list:
        """(start, end) frames of the sound that touches no voice: breaths, clicks, noises
        in the pauses and around the voice."""
        import numpy as np

        voice = np.zeros(len(self.sound), bool)
        for s, e in self.voice_runs:
            voice[s:e] = True
        return [(s, e) for s, e in _runs(self.sound) if not voice[s:e].any()]


def analyse(x, rate: int) -> _Analysis | None:
    import numpy as np

    hop, _ = _frames(x, rate)
    db = frame_db(x, rate)
    if len(db) < 10:
        return None
    top = np.percentile(db, 95)
    noise = np.sort(db)[: max(1, len(db) // 10)].mean()
    loud = db > max(top - 30, noise + 10 * np.log10(9))
    sound = db > max(top - 48, noise + 10 * np.log10(36), -100)
    voiced = voiced_frames(x, rate) & loud
    runs = _runs(loud)
    min_v = int(round(_MIN_VOICED_S / _HOP_S))
    voice, bursts = [], []
    for s, e in runs:
        (voice if voiced[s:e].sum() >= min_v else bursts).append((s, e))
    # a burst touching the voice (no quiet gap of _APART_S) belongs to it (a consonant)
    apart = int(round(_APART_S / _HOP_S))
    merged: list = []
    for s, e in sorted(voice + bursts):
        is_voice = (s, e) in voice
        if merged and s - merged[-1][1] < apart and (is_voice or merged[-1][2]):
            ps, pe, pv = merged.pop()
            merged.append((ps, max(pe, e), pv or is_voice))
        else:
            merged.append((s, e, is_voice))
    # a burst right before the voice (a consonant after a pause) joins the run after it
    out: list = []
    for s, e, v in reversed(merged):
        if not v and out and out[-1][2] and out[-1][0] - e < apart:
            ns, ne, _ = out.pop()
            out.append((s, ne, True))
        else:
            out.append((s, e, v))
    out.reverse()
    return _Analysis(hop, db, loud, sound, [(s, e) for s, e, v in out if v],
                     [(s, e) for s, e, v in out if not v])


def _extend(a: _Analysis, start: int, end: int) -> tuple[int, int]:
    """Frames [start, end) of voice widened over the sound touching them (a fading tail, a
    soft onset) but not over a quiet gap."""
    n = len(a.sound)
    while start > 0 and a.sound[start - 1]:
        start -= 1
    while end < n and a.sound[end]:
        end += 1
    return start, end


def voice_span(x, rate: int) -> tuple[int, int] | None:
    """(first, last + 1) sample of the voice in ``x``, 10 ms frames wide (``trim_silence``
    then finds the exact samples inside); None when no voice is found (the caller keeps its
    own trim)."""
    a = analyse(x, rate)
    if a is None or not a.voice_runs:
        return None
    s, e = _extend(a, a.voice_runs[0][0], a.voice_runs[-1][1])
    return s * a.hop, min(len(x), (e + 1) * a.hop)


def similarity_features(x, rate: int):
    """The rows the repeat test compares: ``audio.align.cepstra`` 1-12 (the level left out),
    one row per 20 ms."""
    from audio.align import cepstra

    return cepstra(x, rate)[::2, 1:13]


def _is_copy(x, b: tuple[int, int], c: tuple[int, int]) -> bool:
    """The stretch ``c`` is the samples of ``b`` again (at some lag of a few ms)."""
    import numpy as np

    n = min(b[1] - b[0], c[1] - c[0])
    if n <= 0:
        return False
    u = np.asarray(x[b[0]:b[0] + n], np.float64)
    best = 0.0
    # cheap first: correlation of the loudest 50 ms of the first copy (its quiet onset is mostly
    # room noise, which a lossy codec does not keep alike: an mp3's copy measured 0.98 there),
    # the whole only where that is high
    w = min(n, 2400)
    e = np.convolve(u * u, np.ones(w), mode="valid")
    k = int(np.argmax(e)) if len(e) else 0
    for lag in range(-480, 481, 1):  # the copies' starts found at 10 ms frames: +- 10 ms
        s = c[0] + lag
        if s < 0 or s + n > len(x):
            continue
        v = np.asarray(x[s:s + n], np.float64)
        d = np.dot(u[k:k + w], v[k:k + w]) / (np.linalg.norm(u[k:k + w]) * np.linalg.norm(v[k:k + w]) + 1e-20)
        if d < _COPY_CORR:
            continue
        best = max(best, float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v) + 1e-20)))
        if best >= _COPY_CORR:
            return True
    return False


def find_parts(x, rate: int, morae: tuple[int, int] | None = None,
               min_pause_s: float = 0.15, an: _Analysis | None = None) -> Parts | None:
    """The 上・下・下 structure of ``x`` when the 下の句 is read twice (None: not found).

    ``morae``: the 上の句's and 下の句's mora counts (the lengths of the parts must fit them
    within a factor of two)."""
    import numpy as np

    a = an if an is not None else analyse(x, rate)
    if a is None or len(a.voice_runs) < 3:
        return None
    runs = a.voice_runs
    gaps = [(runs[i][1], runs[i + 1][0], i) for i in range(len(runs) - 1)
            if (runs[i + 1][0] - runs[i][1]) * _HOP_S >= min_pause_s]
    if len(gaps) < 2:
        return None
    first, last = runs[0][0], runs[-1][1]
    step = a.hop
    from audio.align import dtw_cost

    feats = similarity_features(x[first * step:last * step], rate)
    feats = (feats - feats.mean(0)) / (feats.std(0) + 1e-9)

    def seg(s, e):  # frames of 10 ms -> rows of 20 ms
        return feats[max(0, (s - first) // 2): max(1, (e - first) // 2)]

    best = None
    for qi, (q0, q1, _) in enumerate(gaps):
        dc = last - q1
        if dc * _HOP_S < 1.0:
            continue
        for (p0, p1, _) in gaps[:qi]:
            db_, da = q0 - p1, p0 - first
            if not 0.6 <= dc / db_ <= 1.6 or da * _HOP_S < 1.0:
                continue
            if morae is not None:
                fit = (da / db_) / (morae[0] / morae[1])
                if not 0.5 <= fit <= 2.0:
                    continue
            B, C, A = seg(p1, q0), seg(q1, last), seg(first, p0)
            # no extra cost for a one-sided step: a copy read at another pace costs what it
            # would at the same pace
            same = dtw_cost(B, C, step_penalty=0.0)
            other = dtw_cost(B, A, step_penalty=0.0)
            ratio = same / max(other, 1e-9)
            if ratio < REPEAT_RATIO and (best is None or ratio < best[0]):
                best = (ratio, p0, p1, q0, q1)
    if best is None:
        return None
    ratio, p0, p1, q0, q1 = best
    ks, ke = _extend(a, first, p0)
    ss, se = _extend(a, p1, q0)
    rs, re_ = _extend(a, q1, last)
    # widened over the fading tail, never into the next part
    ke, ss = min(ke, (p0 + p1) // 2), max(ss, (p0 + p1) // 2)
    se, rs = min(se, (q0 + q1) // 2), max(rs, (q0 + q1) // 2)
    h = step
    parts = Parts(ks * h, min(len(x), (ke + 1) * h), max(0, ss - 1) * h, min(len(x), (se + 1) * h),
                  (max(0, rs - 1) * h, min(len(x), (re_ + 1) * h)), False, round(float(ratio), 3))
    copy = _is_copy(x, (p1 * h, q0 * h), (q1 * h, last * h))
    return Parts(parts.kami_start, parts.kami_end, parts.shimo_start, parts.shimo_end,
                 parts.repeat, copy, parts.ratio) if copy else parts


def widen_split(x, rate: int, a: int, b: int, an: _Analysis | None = None) -> tuple[int, int]:
    """A split's pause [a, b) found at the voice threshold (30 dB under the loud frames)
    narrowed to the sound on either side: the 上の句 keeps its fading tail down to the noise
    floor (it ended early by the tail's length), the 下の句 its soft onset, neither the
    middle of the pause or what is in it."""
    an = an if an is not None else analyse(x, rate)
    if an is None or b <= a:
        return a, b
    h = an.hop
    fa, fb = a // h, -(-b // h)
    mid = (fa + fb) // 2
    _, ke = _extend(an, max(0, fa - 1), fa)
    ss, _ = _extend(an, fb, min(len(an.sound), fb + 1))
    ke, ss = min(max(ke, fa), mid), max(min(ss, fb), mid)
    return min(len(x), (ke + 1) * h), max(0, ss - 1) * h
