"""Where each mora is in a recording: a mora timeline estimated by DTW (numpy only).

A recorded clip is aligned with the synthesized reading of the same text, whose mora onsets
are exact (``SynthVoice.layout``), though the recording is another voice at another pace
(a person, a neural TTS voice speaking ~130 ms a mora against the chant's 300 ms).

1. Features: MFCC frames (10 ms hop, 32 ms window, 40 log-mel bands), cepstra 1-8 (the
   level, c0, and the envelope's finer detail are left out), mean and variance normalised
   over each clip's kept frames: nothing here depends on the reference's melody.
2. Pauses (frames 35 dB under the loud ones, or near a noisy recording's floor, for 80 ms
   or more) are taken out of both clips: a reader who pauses after every ku, or never, or
   long before the 下の句, aligns alike.
3. Another speaker's vocal tract: the recording's filterbank is warped (x0.82-1.2) and the
   warp whose DTW cost against the reference is lowest is used (vocal tract length
   normalisation).
4. With ``ku_sizes`` (morae per ku) and a recording that pauses at least as often as it
   has ku boundaries, the pauses that end ku are chosen (nearest to where the ku would end
   at an even pace, longer ones preferred) and each ku is aligned with its own ku of the
   reference: no mora is carried across a ku boundary.
5. DTW with symmetric steps (a step on one side costs a little more); each reference mora
   onset is carried to the first recording frame the path meets, moved past a short
   silence there (a mora is first heard at a sound).  A recording of the reference's own
   voice (``_voice_ratio`` below ``SAME_VOICE``: cepstra 1-12, whose finer detail only the
   same voice matches) takes its onsets from a plain DTW of all 13 cepstra, silences kept,
   which is exact to a few ms there.
6. Another voice: its features are mapped onto the reference's by the affine map that best
   turns the recording's frames on the path into the reference frames they met (ridge
   regression), and aligned again, twice (speaker adaptation: a formant synthesizer's
   spectra differ from HTS's in ways no filterbank warp undoes).  Against the onsets
   espeak-ng itself reports, this halves the error of its decisive onsets' worst tenth.

Confidence (0-1): the DTW cost of the parts as aligned (each ku with its own ku) over the
lowest cost against the same reference with its morae shuffled (three fixed orders: the
same speaker and sounds, another text), with the recording's features as finally mapped.
Shuffled morae stand for another text better than the reference reversed or turned round
(which keep long runs in order): a wrong text's ratio comes out nearer 1.  The reading of
the text costs clearly less (ratio <= ~0.4 for this voice itself, <= ~0.69 for HTS voices,
~0.75-0.91 for espeak-ng); another text read by another voice ~0.86 or more, noise or a
tone more.  It is lowered by the share of morae the path squeezed under a quarter or spread
over four times their expected length (a path forced through a text not said).
``karuta voice add`` weighs a timeline of another voice whose ratio is ``COMPETITORS_ABOVE``
or more against the neighbouring poems' texts instead (``with_competitors``: how much better
its own text fits, by "fit", the DTW cost after the speaker map): for a chanting human the
ratio alone tells its text from a neighbour's too little.
A pack of ``audio.align_hmm.MIN_CLIPS`` (20) poems or more goes further: its reader's own
phone models are trained on these timelines and time and weigh every clip (``align_hmm``);
``with_competitors`` is then only the fallback when no model can be trained.

Without a usable reference (no synthesizer), ``proportional`` spreads the reference layout
over the clip linearly and reports confidence 0 with method "proportional".
"""
from __future__ import annotations

from dataclasses import dataclass

from audio.voice import Layout, Mora

__all__ = ["Timeline", "features", "cepstra", "dtw", "dtw_cost", "align", "align_detail", "proportional", "ku_sizes", "OWN_KIN",
           "sounds_like", "text_ratios", "both_halves_agree", "with_competitors", "COMPETITOR_SURE",
           "COMPETITORS_ABOVE", "SWAP_MARGIN", "SWAP_CHECK_BELOW", "LOW_CONFIDENCE", "SAME_VOICE"]

#: timelines below this are reported by ``karuta voice check``
LOW_CONFIDENCE = 0.5
_FEAT_RATE = 16000
_HOP = 160  # 10 ms at 16 kHz
_NFFT = 512
#: frames 35 dB under the loud ones are silence; runs of 8 (80 ms) are pauses, left out of the
#: alignment; runs of 12 (120 ms) may end a ku
_SILENT_DB = 35.0
_PAUSE_FRAMES = 8
_KU_PAUSE_FRAMES = 12
#: confidence from the cost ratio (the parts' DTW cost over the lowest cost against the
#: reference with its morae shuffled, after another voice's features are mapped onto the
#: reference's): at or above _RATIO_NONE 0, at or below _RATIO_SURE 1 (0.5 at 0.875).
#: Measured (issue 21, bench_voicepack.py --foreign): the right text read by HTS voices
#: <= ~0.69, by espeak-ng ~0.75-0.91 (90 % under 0.87); by the built-in voice itself <= 0.39;
#: a wrong text read by HTS or espeak-ng >= 0.86 (90 % over 0.91)
_RATIO_NONE = 0.925
_RATIO_SURE = 0.825
#: a recording whose ``_voice_ratio`` is under this is the reference's own voice (measured:
#: the built-in voice re-timed and 2 half-tones off <= 0.55; HTS voices >= 0.84, espeak-ng
#: >= 0.95)
SAME_VOICE = 0.70
#: a recording whose ``_voice_distance`` is under this is the reference's voice, whatever it
#: reads (measured: the built-in voice re-timed, its own text <= 0.75, another text <= 2.09;
#: HTS voices >= 2.16, espeak-ng >= 2.59): its confidence comes from the ratio before any
#: adaptation (another text by the built-in voice >= ~0.88 there)
OWN_KIN = 2.1
#: a ku between the pauses chosen to end ku is at least this share of its even-pace length
_KU_MIN_SHARE = 0.35
#: extra cost of a (1,0) or (0,1) DTW step, times the mean local cost: among equally good
#: paths through look-alike morae, the more even one
_STEP_PENALTY = 0.2
#: another voice's features are mapped onto the reference's along the path this many times
#: (each time aligned again); the map's ridge, per frame of the path
_ADAPT_ROUNDS = 2
_ADAPT_RIDGE = 0.1
#: filterbank warps tried on a recording (vocal tract length normalisation)
_WARPS = (0.82, 0.88, 0.94, 1.0, 1.06, 1.13, 1.2)


@dataclass(frozen=True)
class Timeline:
    morae: tuple[Mora, ...]
    confidence: float
    method: str  # "dtw" | "proportional" | "manual"
    #: another text this recording fits clearly better than its own (a poem's key: the files
    #: look swapped or misnamed), from ``sounds_like``; None when none does or none was tried
    sounds_like: str | None = None

    def to_json(self) -> dict:
        d = {"morae": [[m.kana, m.start, m.end] for m in self.morae],
             "confidence": round(float(self.confidence), 3), "method": self.method}
        if self.sounds_like is not None:
            d["sounds_like"] = self.sounds_like
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Timeline":
        morae = tuple(Mora(str(k), int(s), int(e)) for k, s, e in d["morae"])
        like = d.get("sounds_like")
        return cls(morae, float(d.get("confidence", 0.0)), str(d.get("method", "dtw")),
                   str(like) if like is not None else None)


_MEL_CACHE: dict = {}


def _mel_matrix(n_mels: int = 40, fmin: float = 80.0, fmax: float = 7600.0, warp: float = 1.0):
    """Mel filterbank and DCT.  ``warp``: the filters' frequencies times ``warp`` (a speaker
    whose formants lie ``warp`` times higher gives the cepstra of one whose do not)."""
    import numpy as np

    key = (n_mels, fmin, fmax, warp)
    if key in _MEL_CACHE:
        return _MEL_CACHE[key]
    mel = lambda f: 2595.0 * np.log10(1 + f / 700.0)  # noqa: E731
    inv = lambda m: 700.0 * (10 ** (m / 2595.0) - 1)  # noqa: E731
    pts = inv(np.linspace(mel(fmin), mel(fmax), n_mels + 2)) * warp
    freqs = np.fft.rfftfreq(_NFFT, 1 / _FEAT_RATE)
    fb = np.zeros((n_mels, len(freqs)))
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[i] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
    n = np.arange(n_mels)
    dct = np.cos(np.pi / n_mels * (n + 0.5)[None, :] * np.arange(13)[:, None])
    _MEL_CACHE[key] = (fb, dct)
    return fb, dct


def _cepstra(x, rate: int, warps=(1.0,)):
    """(MFCC frames (frames, 13) for each filterbank warp, the level of each frame in dB),
    10 ms a frame, not normalised."""
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
    out = []
    for w in warps:
        fb, dct = _mel_matrix(warp=w)
        out.append(np.log(power @ fb.T + 1e-8) @ dct.T)
    fb, _ = _mel_matrix()
    return out, 10 * np.log10((power @ fb.T).sum(axis=1) + 1e-12)


def cepstra(x, rate: int):
    """MFCC frames of ``x`` (one per 10 ms, 13 cepstra, c0 the level), not normalised."""
    return _cepstra(x, rate)[0][0]


def features(x, rate: int):
    """MFCC frames (one per 10 ms) of ``x``: array (frames, 13), normalised per utterance."""
    (c,), _ = _cepstra(x, rate)
    c = c - c.mean(axis=0)
    return c / (c.std(axis=0) + 1e-6)


def _local_costs(A, B):
    import numpy as np

    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    return np.sqrt(np.maximum((A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T, 0.0))


def dtw(A, B, *, symmetric: bool = True):
    """Align feature rows of A (reference) with rows of B.  Returns (path_a, path_b, costs).

    Steps (1,1) adding twice the local Euclidean distance, (1,0) and (0,1) adding it once
    and ``_STEP_PENALTY`` (the symmetric form: a path's cost does not depend on how diagonal
    it is, so two readings at very different paces align as well as two at the same pace).
    ``symmetric=False``: every step adds the distance once (diagonal paths preferred).  Each
    row is solved at once with a min-plus prefix scan: O(len(A) * len(B)) in numpy.
    """
    import numpy as np

    C = _local_costs(A, B)
    n, m = C.shape
    w = 2.0 if symmetric else 1.0
    C1 = C + _STEP_PENALTY * C.mean() if symmetric else C  # a step on one side only costs more
    move = np.zeros((n, m), np.int8)  # 0 diag, 1 from (i-1, j), 2 from (i, j-1)
    D = w * C[0, 0] + np.concatenate([[0.0], np.cumsum(C1[0, 1:])])
    move[0, 1:] = 2
    for i in range(1, n):
        prev = D
        diag = np.concatenate([[np.inf], prev[:-1]]) + w * C[i]
        vert = prev + C1[i]
        vert_better = vert <= diag
        A_ = np.where(vert_better, vert, diag)
        S = np.cumsum(C1[i])
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


def dtw_cost(A, B, *, step_penalty: float = _STEP_PENALTY) -> float:
    """The cost of the best ``dtw`` path, per frame of both (no path kept).  ``step_penalty``:
    the extra cost of a (1,0) or (0,1) step, times the mean local cost (0: a path's cost does
    not depend on its shape at all, as the one-file split's repeat test wants)."""
    import numpy as np

    C = _local_costs(A, B)
    n, m = C.shape
    C1 = C + step_penalty * C.mean() if step_penalty else C
    D = 2 * C[0, 0] + np.concatenate([[0.0], np.cumsum(C1[0, 1:])])
    for i in range(1, n):
        A_ = np.minimum(D + C1[i], np.concatenate([[np.inf], D[:-1]]) + 2 * C[i])
        S = np.cumsum(C1[i])
        D = S + np.minimum.accumulate(A_ - S)
    return float(D[-1] / (n + m))


def _silent_runs(db, min_frames: int):
    """(start, end) frame runs at least ``min_frames`` long that are ``_SILENT_DB`` under the
    loud frames (or within 6 dB of the noise floor of a noisy recording), and whether each
    frame is such a silence."""
    import numpy as np

    loud = np.percentile(db, 95)
    floor = np.sort(db)[: max(1, len(db) // 10)].mean()  # a noise floor, if there are pauses
    sil = db < max(loud - _SILENT_DB, floor + 6.0 if floor < loud - 20.0 else -np.inf)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], sil.astype(np.int8), [0]])))
    runs = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2]) if b - a >= min_frames]
    return runs, sil


def _voiced_frames(db):
    """The frames kept for alignment: all but pauses (silences of ``_PAUSE_FRAMES`` or more;
    a stop's closure is shorter and stays)."""
    import numpy as np

    keep = np.ones(len(db), bool)
    for a, b in _silent_runs(db, _PAUSE_FRAMES)[0]:
        keep[a:b] = False
    return np.flatnonzero(keep) if keep.sum() >= 2 else np.arange(len(db))


def _normalised(c, keep, upto: int = 9):
    """Cepstra 1 to ``upto`` - 1 of the kept frames, mean and variance normalised over them
    (c0, the level, differs between readers and is left out; so do, for the alignment, the
    finer details of the envelope, 9-12: without them another voice fits its text better and
    other texts no better)."""
    c = c[keep][:, 1:upto]
    c = c - c.mean(axis=0)
    return c / (c.std(axis=0) + 1e-6)


def ku_sizes(item, layout: Layout) -> list[int] | None:
    """How many of ``layout``'s morae each ku of ``item`` has (None if they do not add up)."""
    from poems.kimariji import sound_morae

    from audio.voice import reading_for

    try:
        sizes = [len(sound_morae([ku])) for ku in reading_for(item)]
    except Exception:
        return None
    return sizes if sum(sizes) == len(layout.morae) and len(sizes) > 1 else None


def _ku_pauses(db, sizes):
    """The recording's pauses that end its ku (frame runs), chosen among its pauses of at
    least ``_KU_PAUSE_FRAMES``: the set nearest to where the ku would end if every mora took
    as long (longer pauses preferred), in which no ku is shorter than ``_KU_MIN_SHARE`` of
    that (a human reader's stop closure before a quick second mora can last 120 ms: taken
    for a ku's end, it squeezed a whole ku into the clip's first 70 ms).  None when there is
    no such set."""
    import itertools

    import numpy as np

    runs, sil = _silent_runs(db, _KU_PAUSE_FRAMES)
    spoken = np.flatnonzero(~sil)
    if len(spoken) < 2:
        return None
    lo, hi = int(spoken[0]), int(spoken[-1])
    cands = [((a, b), b - a) for a, b in runs if a > lo and b <= hi]
    need = len(sizes) - 1
    if len(cands) < need or len(cands) > 12:
        return None
    share = np.asarray(sizes, float) / sum(sizes) * (hi - lo)
    expect = lo + np.cumsum(share)[:-1]
    best, best_score = None, np.inf
    for comb in itertools.combinations(sorted(cands), need):
        runs_ = [r for r, _ in comb]
        starts = np.array([lo] + [b for _, b in runs_])
        ends = np.array([a for a, _ in runs_] + [hi])
        if np.any(ends - starts < _KU_MIN_SHARE * share):
            continue
        mid = np.array([(a + b) / 2 for a, b in runs_])
        score = float(np.abs(mid - expect).sum() - 0.5 * sum(w for _, w in comb))
        if score < best_score:
            best, best_score = runs_, score
    return best


def _mora_shuffles(A, cuts, n: int = 3):
    """``A`` with its morae (rows between ``cuts``) put in ``n`` fixed random orders."""
    import numpy as np

    edges = sorted({0, len(A), *[int(c) for c in cuts if 0 < c < len(A)]})
    segs = [A[a:b] for a, b in zip(edges, edges[1:])]
    out = []
    for seed in range(n):
        order = np.random.default_rng(seed).permutation(len(segs))
        out.append(np.concatenate([segs[i] for i in order]))
    return out


def _voice_ratio(ca, ka, cb, kb) -> float:
    """Whether the recording is the reference's own voice: the cost ratio (``_cost_ratio``,
    20 ms frames) of cepstra 1-12, the envelope's finer detail included, which only the same
    voice matches (another voice, even reading the right text, ~0.84 or more)."""
    return _cost_ratio(_normalised(ca, ka, 13)[::2], _normalised(cb, kb, 13)[::2])


def _voice_distance(ca, ka, cb, kb) -> float:
    """How far the recording's sounds are from the reference's, in no order: the median, over
    the recording's frames (20 ms apart), of the distance to the nearest reference frame
    (cepstra 1-12, normalised).  The reference's voice reading any poem is near (its morae
    are the same sounds, said alike); another voice is far, even reading the same text."""
    import numpy as np

    A, B = _normalised(ca, ka, 13)[::2], _normalised(cb, kb, 13)[::2]
    return float(np.median(_local_costs(B, A).min(axis=1)))


def _cost_ratio(A, B) -> float:
    """How much better the reference fits than the same reference scrambled (reversed, and
    turned a third and two thirds round): the same sounds, the same speaker, the wrong order.
    A recording of the text costs clearly less (~0.6-0.8 by other voices, ~0.3-0.55 by
    this voice itself); another text, noise or a tone costs about the same (>= ~0.93)."""
    import numpy as np

    others = [A[::-1], np.roll(A, len(A) // 3, axis=0), np.roll(A, 2 * len(A) // 3, axis=0)]
    return dtw_cost(A, B) / max(1e-9, min(dtw_cost(X, B) for X in others))


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


def align(recording, rate: int, reference, ref_layout: Layout, *, ku_sizes=None) -> Timeline:
    """Mora timeline of ``recording`` (float mono at ``rate``) from a reference reading.

    ``reference`` is the reference's samples at ``ref_layout.sample_rate`` whose mora onsets
    ``ref_layout`` gives exactly.  Onsets come back in frames of ``recording``.

    Pauses (silences of 80 ms or more) are taken out of both before the DTW: a reader who
    pauses between ku, or not, or longer, aligns alike, and a mora after a pause starts at the
    first sound after it.  ``ku_sizes`` (morae per ku, see ``ku_sizes``): when the recording
    has a pause for every ku boundary, each ku is aligned with its own ku of the reference
    (the pauses that end ku are chosen among all pauses by where the ku would end at an even
    pace), so no mora can be carried across a ku boundary.
    """
    return align_detail(recording, rate, reference, ref_layout, ku_sizes=ku_sizes)[0]


def align_detail(recording, rate: int, reference, ref_layout: Layout, *, ku_sizes=None):
    """``align``, and what it measured on the way (for the benchmark): {"ratio0": the cost
    ratio before any speaker adaptation, "ratio": the ratio confidence comes from,
    "same_voice": whether the recording was taken for the reference's own voice}."""
    import numpy as np

    frames = len(recording)
    if frames == 0 or not ref_layout.morae:
        return Timeline((), 0.0, "dtw"), {}
    (ca,), dba = _cepstra(reference, ref_layout.sample_rate)
    cbs, dbb = _cepstra(recording, rate, _WARPS)
    ka, kb = _voiced_frames(dba), _voiced_frames(dbb)
    A = _normalised(ca, ka)
    # another speaker's vocal tract: the recording's filterbank warped to fit the reference best
    Bs = [_normalised(cb, kb) for cb in cbs]
    costs = [dtw_cost(A[::2], Bw[::2]) for Bw in Bs]
    B = Bs[int(np.argmin(costs))]
    ref_hop = ref_layout.sample_rate * _HOP / _FEAT_RATE
    rec_hop = rate * _HOP / _FEAT_RATE
    ref_at = [min(len(dba) - 1, int(round(m.start / ref_hop))) for m in ref_layout.morae]
    n = len(ref_at)
    # (reference frames, recording frames, morae) of each stretch aligned on its own
    parts = [(0, len(dba), 0, len(dbb), range(n))]
    bounds = _ku_pauses(dbb, ku_sizes) if ku_sizes and sum(ku_sizes) == n else None
    if bounds is not None:
        first = np.concatenate([[0], np.cumsum(ku_sizes)]).astype(int)
        cut_a = [ref_at[first[k]] for k in range(1, len(ku_sizes))]
        parts = [((cut_a[k - 1] if k else 0), (cut_a[k] if k < len(bounds) else len(dba)),
                  (bounds[k - 1][1] if k else 0), (bounds[k][0] if k < len(bounds) else len(dbb)),
                  range(first[k], first[k + 1])) for k in range(len(ku_sizes))]
    quiet = _silent_runs(dbb, 1)[1]

    def onsets_of(B):
        """Each part aligned on its own: (mora onsets, the path's frames of A and of B)."""
        onsets, on_a, on_b = [0] * n, [], []
        for a0, a1, b0, b1, morae in parts:
            ia = np.flatnonzero((ka >= a0) & (ka < a1))
            ib = np.flatnonzero((kb >= b0) & (kb < b1))
            if len(ia) < 2 or len(ib) < 2:  # a ku that is silence: align everything at once
                ia, ib = np.arange(len(ka)), np.arange(len(kb))
            pa, pb, _ = dtw(A[ia], B[ib])
            on_a.append(ia[pa])
            on_b.append(ib[pb])
            first_b = _first_matches(pa, pb, len(ia))
            for m in morae:
                r = min(len(ia) - 1, int(np.searchsorted(ka[ia], ref_at[m])))
                j = first_b[r]
                # a mora is first heard at a sound: not in a short silence (a stop's closure, a
                # breath too short to be a pause) that the path met first
                while j + 1 < len(ib) and quiet[kb[ib[j]]] and j - first_b[r] < _PAUSE_FRAMES * 2:
                    j += 1
                onsets[m] = int(round(kb[ib[j]] * rec_hop))
        return onsets, np.concatenate(on_a), np.concatenate(on_b)

    def part_cost(B):
        """The DTW cost with each part aligned on its own (per frame of both)."""
        tot, num = 0.0, 0
        for a0, a1, b0, b1, _ in parts:
            ia = np.flatnonzero((ka >= a0) & (ka < a1))
            ib = np.flatnonzero((kb >= b0) & (kb < b1))
            if len(ia) < 2 or len(ib) < 2:
                return dtw_cost(A, B)
            tot += dtw_cost(A[ia], B[ib]) * (len(ia) + len(ib))
            num += len(ia) + len(ib)
        return tot / num

    onsets, on_a, on_b = onsets_of(B)
    cb1 = cbs[_WARPS.index(1.0)]
    A_even, ka_even = A, ka
    voice = _voice_ratio(ca, ka, cb1, kb)
    kin = _voice_distance(ca, ka, cb1, kb)
    same = voice < SAME_VOICE
    B0 = B
    if same:
        # the reference's own voice (a pack made from it, re-timed): the plain alignment of
        # whole cepstra, level included, is the more exact one there
        onsets = _plain_onsets(reference, ref_layout, recording, rate)
    else:
        # another voice: its features mapped onto the reference's along the path, aligned again
        for _ in range(_ADAPT_ROUNDS):
            B = _adapted(A, B, on_a, on_b)
            onsets, on_a, on_b = onsets_of(B)
        # a reader's rhythm: the reference re-timed as a reader says it (quick early morae,
        # each ku's last one held), the hold that fits best
        sizes = ku_sizes if ku_sizes and sum(ku_sizes) == n else [n]
        best = None
        for hold in _HOLDS:
            widx = _rhythm_rows(ka_even, ref_at, sizes, len(kb), hold)
            c = dtw_cost(A_even[widx][::2], B[::2])
            if best is None or c < best[0]:
                best = (c, widx, hold)
        onsets_even = onsets
        A, ka = A_even[best[1]], ka_even[best[1]]
        onsets, on_a, on_b = onsets_of(B)
    # confidence from the reference as it is: re-timed, it let another text fit as well
    A, ka = A_even, ka_even
    shuffled = _mora_shuffles(A, np.searchsorted(ka, ref_at))

    def ratio_of(B):
        """The parts' DTW cost over the lowest cost against the reference's morae shuffled."""
        return part_cost(B) / max(1e-9, min(dtw_cost(X, B) for X in shuffled))

    if kin < OWN_KIN:
        # the reference's own voice (by its sounds, whatever the text): no adaptation counts
        # (a map learned along a wrong text's path made that text fit too)
        ratio = ratio_of(B0)
    else:
        ratio = ratio_of(B)
    conf = float(np.clip((_RATIO_NONE - ratio) / (_RATIO_NONE - _RATIO_SURE), 0.0, 1.0))
    pace = _even_pace(onsets, frames, ref_layout)
    # how well this text fits, to weigh against other texts (``with_competitors``): the DTW
    # cost itself with the recording's features as finally mapped, each mora squeezed or
    # spread counted against it
    fit = part_cost(B0 if kin < OWN_KIN else B) + FIT_PACE * (1.0 - pace)
    conf *= pace
    dtw_onsets = list(onsets)
    if not same:
        onsets = _snapped(recording, rate, [m.kana for m in ref_layout.morae], onsets)
    t = Timeline(_morae_from_onsets([m.kana for m in ref_layout.morae], onsets, frames), conf, "dtw")
    return t, {"ratio": ratio, "pace": pace, "bounds": bounds, "voice": voice, "same_voice": same, "kin": kin,
               "even": [] if same else onsets_even, "dtw_onsets": dtw_onsets, "fit": float(fit)}


#: the share of its ku a reader's last mora of each ku is held for, tried in turn (the one
#: whose re-timed reference fits the recording best is kept); None: the reference's own timing
_HOLDS = (None, 0.3, 0.4, 0.5)
#: a mora's first frames (its consonant) are kept as they are when the reference is re-timed
_ONSET_ROWS = 5


def _rhythm_rows(ka, ref_at, sizes, frames: int, hold):
    """Row indices into the reference's kept frames (``ka``) that re-time it as a reader
    reads: ``frames`` rows in all, shared among the ku by their morae; in each ku the last
    mora takes ``hold`` of it and the others share the rest evenly.  Each mora keeps its
    first ``_ONSET_ROWS`` rows (its consonant) and its remaining rows are stretched or
    squeezed to fit.  ``hold`` None: the reference as it is."""
    import numpy as np

    n = len(ref_at)
    first = [int(np.searchsorted(ka, r)) for r in ref_at] + [len(ka)]
    if hold is None:
        return np.arange(len(ka))
    want = np.zeros(n)
    k0 = 0
    for size in sizes:
        part = frames * size / n
        if size == 1:
            want[k0] = part
        else:
            want[k0:k0 + size - 1] = part * (1 - hold) / (size - 1)
            want[k0 + size - 1] = part * hold
        k0 += size
    rows = []
    for m in range(n):
        a, b = first[m], max(first[m] + 1, first[m + 1])
        b = min(b, len(ka))
        if a >= len(ka):
            a = len(ka) - 1
            b = len(ka)
        keep = min(_ONSET_ROWS, (b - a) // 2)
        rest = max(1, int(round(want[m])) - keep)
        rows.extend(range(a, a + keep))
        rows.extend((a + keep + np.floor(np.arange(rest) * max(1, b - a - keep) / rest)).astype(int).clip(a, b - 1))
    return np.asarray(rows, int)


#: morae whose consonant is heard as a burst or a noise (voiceless stops, affricates,
#: fricatives): their onset is put where that sound starts (``_snapped``)
_NOISY = set("かきくけこさしすせそたちつてとはひふへほぱぴぷぺぽざじずぜぞ")
#: ``_snapped`` looks this far before and after the DTW's onset (ms), for a rise of the
#: 2.5-12 kHz band of at least _SNAP_DB
_SNAP_BEFORE_MS = 50.0
_SNAP_AFTER_MS = 30.0
_SNAP_DB = 10.0
_SNAP_AVG_MS = 10
#: a mora the DTW gave less than this is squeezed (``_snapped``): its burst is looked for up to
#: _RESNAP_MS away, in the mora before it, or (a stop whose next stop is squeezed) after it
_SQUEEZED_MS = 40.0
_RESNAP_MS = 200.0
_STOPS = set("かきくけこたちつてとぱぴぷぺぽ")


def _noise_onset(x, rate: int, at: int, before_ms: float = _SNAP_BEFORE_MS,
                 after_ms: float = _SNAP_AFTER_MS):
    """Where a burst or a fricative's noise starts near sample ``at``: of the rises (peaks of
    the 4 ms rise of the 2.5-12 kHz band's level, 4 ms windows 1 ms apart, power averaged over
    the last ``_SNAP_AVG_MS``) in [at -
    _SNAP_BEFORE_MS, at + _SNAP_AFTER_MS] that take the band ``_SNAP_DB`` or more from its
    low before to its level after, the steepest, taken back to where the band is half-way
    (in dB) between them.  None without one.  (On a human reader's decisive onsets the
    steepest rise beat the nearest one and the earliest one: median 3 against 12 and 14 ms.)"""
    import numpy as np
    from scipy.ndimage import uniform_filter1d

    hop, win = max(1, rate // 1000), max(8, rate * 4 // 1000)
    a = max(0, at - int(rate * (before_ms + 20) / 1000))
    b = min(len(x), at + int(rate * (after_ms + 20) / 1000))
    n = (b - a - win) // hop
    if n < 12:
        return None
    idx = a + hop * np.arange(n)[:, None] + np.arange(win)[None, :]
    fr = np.asarray(x, np.float64)[idx] * np.hanning(win)
    f = np.fft.rfftfreq(win, 1 / rate)
    band = (f >= 2500) & (f <= min(12000, rate / 2 - 1))
    if not band.any():
        return None
    # power averaged over the last _SNAP_AVG_MS (trailing: an onset is not heard before it
    # comes): 4 ms windows alone flutter 10 dB from pitch pulse to pitch pulse in a low voice
    p = (np.abs(np.fft.rfft(fr, axis=1))[:, band] ** 2).sum(axis=1) + 1e-12
    e = 10 * np.log10(uniform_filter1d(p, _SNAP_AVG_MS, mode="nearest", origin=_SNAP_AVG_MS // 2 - 1))
    t = a + hop * np.arange(n) + win // 2
    rise = np.full(n, -np.inf)
    rise[4:] = e[4:] - e[:-4]
    ok = (t >= at - rate * before_ms / 1000) & (t <= at + rate * after_ms / 1000)
    peaks = [i for i in np.flatnonzero(ok) if 0 < i < n - 1 and rise[i] >= rise[i - 1]
             and rise[i] >= rise[i + 1] and rise[i] > 0
             and e[i:i + 15].max() - e[max(0, i - 15):i + 1].min() >= _SNAP_DB]
    if not peaks:
        return None
    i = max(peaks, key=lambda k: rise[k])  # the steepest
    lo, hi = e[max(0, i - 15):i + 1].min(), e[i:i + 15].max()
    j = i
    while j > 0 and ok[j - 1] and e[j - 1] > lo + 0.5 * (hi - lo):
        j -= 1
    return int(t[j])


def _snapped(x, rate: int, kanas, onsets):
    """Each onset of a mora that starts with a burst or a noise (``_NOISY``) moved to where
    that sound starts (``_noise_onset``), kept after the onset before it.  The DTW of another
    voice lands 10-60 ms after a stop's release (it matches the vowels); measured on a human
    reader's set this takes the decisive onsets' median error from ~20 to ~5 ms.

    Where the path squeezed a mora (under ``_SQUEEZED_MS``: two like vowels in a row, つく or
    おおこ, taken as one), the burst is looked for further, up to ``_RESNAP_MS``: a squeezed
    voiceless mora's in the mora before it (the path came late), a stop's whose next noisy
    mora is squeezed up to that one's onset (the path came a mora early).  On the human set
    this mended the two decisive onsets that were wrong by 145 and 160 ms while confident."""
    import numpy as np

    x = np.asarray(x, np.float64).reshape(-1)
    out = list(onsets)
    ms = rate / 1000
    for m in range(1, len(out)):
        if kanas[m][:1] not in _NOISY:
            continue
        nxt = onsets[m + 1] if m + 1 < len(onsets) else len(x)
        got = _noise_onset(x, rate, out[m])
        if (kanas[m][:1] not in "ざじずぜぞ" and nxt - out[m] < _SQUEEZED_MS * ms
                and out[m] - out[m - 1] > 2 * _SQUEEZED_MS * ms):
            # squeezed (a voiceless sound's): the path gave this mora next to nothing and the
            # one before it much (つく, two like vowels, taken as one): its burst is in the
            # mora before
            lo = max(out[m - 1] + _SQUEEZED_MS * ms, out[m] - _RESNAP_MS * ms)
            early = _noise_onset(x, rate, int(out[m]), before_ms=(out[m] - lo) / ms, after_ms=0.0)
            if early is not None:
                got = early
        elif (kanas[m][:1] in _STOPS and m + 2 < len(onsets) and kanas[m + 1][:1] in _NOISY
              and onsets[m + 2] - nxt < _SQUEEZED_MS * ms
              and nxt - out[m] > 2 * _SQUEEZED_MS * ms):
            # a stop whose next (noisy) mora is squeezed: the path may have run a mora early
            # (おおこと: こ put on the second お's vowel, と on こ's burst); the steepest rise
            # up to the next mora's onset
            got = _noise_onset(x, rate, int(out[m]),
                               after_ms=min(_RESNAP_MS, (nxt - out[m]) / ms + _SNAP_AFTER_MS))
        if got is not None and got > out[m - 1] + rate // 50:
            out[m] = got
    return out


def _adapted(A, B, on_a, on_b):
    """``B`` mapped onto ``A``'s feature space: the affine map that best turns the recording's
    frames on the DTW path (``on_b``) into the reference frames they are matched with
    (``on_a``), least squares with a ridge of ``_ADAPT_RIDGE``; mean and variance normalised
    again.  Another speaker's (or synthesizer's) spectra differ from the reference's in ways
    a filterbank warp does not undo (a formant voice's bandwidths and tilt); the map learns
    them from this recording alone."""
    import numpy as np

    X = np.concatenate([B[on_b], np.ones((len(on_b), 1))], axis=1)
    W = np.linalg.solve(X.T @ X + _ADAPT_RIDGE * len(on_b) * np.eye(X.shape[1]), X.T @ A[on_a])
    out = np.concatenate([B, np.ones((len(B), 1))], axis=1) @ W
    out = out - out.mean(axis=0)
    return out / (out.std(axis=0) + 1e-6)


def _first_matches(pa, pb, n: int):
    """For each of the ``n`` reference frames, the first recording frame the path meets."""
    import numpy as np

    first_b = np.zeros(n, int)
    order = np.argsort(pa, kind="stable")
    uniq, idx = np.unique(pa[order], return_index=True)
    first_b[uniq] = pb[order][idx]
    return first_b


def _plain_onsets(reference, ref_layout: Layout, recording, rate: int) -> list[int]:
    """Onsets by DTW of ``features`` (all 13 cepstra, silences kept), each step costing the
    same: exact (a few ms) on readings by the reference voice itself."""
    A = features(reference, ref_layout.sample_rate)
    pa, pb, _ = dtw(A, features(recording, rate), symmetric=False)
    first_b = _first_matches(pa, pb, len(A))
    ref_hop = ref_layout.sample_rate * _HOP / _FEAT_RATE
    rec_hop = rate * _HOP / _FEAT_RATE
    return [int(round(first_b[min(len(A) - 1, int(round(mo.start / ref_hop)))] * rec_hop))
            for mo in ref_layout.morae]


def _even_pace(onsets, frames: int, ref_layout: Layout) -> float:
    """1.0 when every mora took about the time the reference gives it (at the recording's
    pace); less by the share of morae squeezed under a quarter or spread over four times
    that: the mark of a path forced through a text the recording does not say.  (1.5 times
    that share, not twice: espeak-ng merges two like vowels into one, so a mora or two of a
    right reading is squeezed, and against its own phoneme onsets those 上の句 aligned as
    well as the others; once only let a wrong text by the built-in voice through.)"""
    import numpy as np

    if len(onsets) < 4:
        return 1.0
    got = np.diff(np.append(np.asarray(onsets, float), frames))[:-1]
    want = np.diff([mo.start for mo in ref_layout.morae] + [ref_layout.frames])[:-1].astype(float)
    r = got / np.maximum(want, 1.0)
    r = r / max(1e-9, float(np.median(r)))
    odd = float(np.mean((r < 0.25) | (r > 4.0)))
    return float(np.clip(1.0 - 1.5 * odd, 0.0, 1.0))



#: ``sounds_like`` names another text when the recording's cost ratio against it (see
#: ``align_detail``) is at least this much under the ratio against its own text.  Measured on
#: a human reader's 上の句 (15 poems): its own text's ratio was under the next poem's by
#: 0.016-0.22 (median 0.09), never over it
SWAP_MARGIN = 0.03
#: only timelines under this confidence are tried against other texts (a swapped file's is ~0)
SWAP_CHECK_BELOW = 0.1


def text_ratios(recording, rate: int, candidates: dict, *, fits: dict | None = None) -> dict:
    """The recording's cost ratio (``align_detail``'s "ratio") against each candidate text:
    key -> ratio, for ``candidates`` as ``sounds_like`` takes them (a key whose reference
    cannot speak it is left out).  ``fits``, when given, is filled with each one's "fit"
    (what ``with_competitors`` weighs)."""
    out = {}
    for key, (samples, layout, sizes) in candidates.items():
        try:
            _, detail = align_detail(recording, rate, samples, layout, ku_sizes=sizes)
        except Exception:
            continue
        if detail.get("ratio") is not None:
            out[key] = float(detail["ratio"])
            if fits is not None and detail.get("fit") is not None:
                fits[key] = float(detail["fit"])
    return out


def sounds_like(recording, rate: int, own_ratio: float, candidates: dict, *, ratios: dict | None = None,
                fits: dict | None = None):
    """Which other text the recording says, if one fits clearly better than its own: the key
    in ``candidates`` (key -> (reference samples, reference layout, ku sizes or None)) whose
    cost ratio (``align_detail``'s "ratio") is lowest, if it is at least ``SWAP_MARGIN`` under
    ``own_ratio``; else None.  One alignment a candidate (1-3 s for a 上の句): ``karuta voice
    add`` asks it only of timelines under ``SWAP_CHECK_BELOW``, with the neighbouring poems
    (two files swapped or misnumbered by one).  ``ratios``, when given, is filled with each
    candidate's ratio (``text_ratios``), ``fits`` with its fit."""
    got = text_ratios(recording, rate, candidates, fits=fits)
    if ratios is not None:
        ratios.update(got)
    best_key, best = None, float(own_ratio) - SWAP_MARGIN
    for key, r in got.items():
        if r <= best:
            best_key, best = key, r
    return best_key


def both_halves_agree(named: str, other_own_ratio: float, other_named_ratio: float) -> bool:
    """Whether a one-file recording's other half (the 下の句 of a 上の句 that ``sounds_like``
    names poem ``named``, or the 上の句 of such a 下の句) points the same way: its cost ratio
    against the named poem's text ``SWAP_MARGIN`` or more under the ratio against its own (a
    clear fit, as ``sounds_like`` asks of the first half: where it only asked "under", 6 of the
    human set's 下の句 were still named, their 上の句 fitting a neighbour about as well as their
    own).  Two files swapped or
    misnumbered hold another poem in both halves; a half that fits another text only by
    chance does not (measured on a human reader's set read once per file: 17-26 of its 100
    下の句, aligned far less well than the 上の句 (own ratios 0.72-1.05), fitted a neighbour
    0.03-0.07 better; all but two of their 上の句 fitted their own texts clearly better)."""
    return other_named_ratio <= other_own_ratio - SWAP_MARGIN


#: a timeline of another voice whose own text's fit (``align_detail``'s "fit": the DTW cost
#: with the recording's features as finally mapped, plus ``FIT_PACE`` times the share of morae
#: squeezed or spread) is under every competitor's (the neighbouring poems') by this much is as
#: confident as its pace allows (half as much: 0.5).  Measured on a human reader's set
#: (35 of its even poems, each aligned with 4 texts): own texts' margins median 0.64, 10 %
#: 0.24; a wrong text weighed against two other wrong texts came out confident in 8 of 105
COMPETITOR_SURE = 0.4
#: a timeline of another voice whose cost ratio is under this is confident on that alone, not
#: weighed against other texts (two alignments saved): on the human set no other poem's text
#: came under 0.80 (106 tried), its own texts 0.68-0.93; HTS voices read their own ~0.58-0.67
COMPETITORS_ABOVE = 0.70
#: the fit's cost of a pace factor of 0 (every mora squeezed or spread), in DTW cost per frame
#: (a text's cost on the human set: ~1.5-1.9 its own, ~1.8-2.6 another's)
FIT_PACE = 1.0


def with_competitors(confidence: float, pace: float, own_fit: float, fits: dict) -> float:
    """A timeline's confidence given its recording's fit (``align_detail``'s "fit") against
    other poems' texts (``fits``: key -> fit, from ``text_ratios``): 0 when one of them fits
    at least as well as its own; else the margin to the best of them over
    ``COMPETITOR_SURE`` (at most 1), times the pace factor.  No competitors: ``confidence``.

    The cost ratio (own text against its morae shuffled) alone does not tell a chanting
    human's text from its neighbours': on a human reader's set it left 4 of 35 recordings
    confident with a neighbouring poem's text (ratios 0.80-0.85), and flagged a fifth of the
    right ones low (ratios over 0.875).  Against the neighbours' texts a wrong text loses
    to the right one, which is among them; a right text wins by a margin."""
    if not fits:
        return confidence
    margin = min(fits.values()) - float(own_fit)
    if margin <= 0:
        return 0.0
    return min(1.0, margin / COMPETITOR_SURE) * float(pace)
