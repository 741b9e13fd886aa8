"""A reader's own aligner: phone HMMs trained on the pack itself at import (numpy only).

A pack is one reader saying 100 known texts (~1,700 morae): enough to learn that reader's
own sounds, with no model to download.  The DTW of ``audio.align`` compares a recording with
the built-in voice's synthesis, whose spectra tell a chanting human's morae apart too little
(a quarter of a human set's 上の句 fitted a neighbouring poem's text about as well as their
own).  Here:

1. Features: MFCC frames as ``audio.align`` computes them (10 ms hop), all 13 cepstra and
   their deltas, mean and variance normalised per clip.
2. Units: each mora is its consonant (the kana's row: k, s, sh, ch, ts, f, j, ky...) and its
   vowel (a i u e o, or ん); a consonant has two states, a vowel two, each a diagonal
   Gaussian; one silence state may come before, after and between any two morae (a pause,
   a stop's closure, a breath).  A consonant state lasts at least a frame, a vowel state at
   least two: a mora is at least 40-60 ms, and a vowel's second state takes a held last
   mora however long.
3. Training (``train``): each clip's states are first laid out along a given timeline (the
   DTW's), then the models are re-estimated by Viterbi: forced alignment of every clip with
   its own text, new means, variances and stay probabilities, ``_ROUNDS`` times.  A clip
   whose text fits it poorly (``margin`` under 0: a misnamed file) is left out of the later
   rounds.
4. Alignment (``force_align``): Viterbi through the text's states; a mora's onset is where
   its first state starts.
5. Confidence (``weigh``): how far the clip's own text's best path is under the best path
   of any phones at all (``loop_loglik``), over how far its best competitor's is (the
   neighbouring poems' texts, the own morae in shuffled orders), under the reader's model:
   near 0 for the text said, 1 or more where a competitor fits as well (``margin``).  A model of the speaker's own sounds tells a text from
   its neighbours far better than a synthesized reference does.

Too few clips to learn from (``MIN_CLIPS``): ``audio.align``'s DTW alone, as before.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = ["Model", "onset_sample", "clip_features", "quiet_frames", "phones", "train", "force_align", "loglik", "margin",
           "competitor_texts", "loop_loglik", "fit_gap", "weigh", "MIN_CLIPS", "RATIO_SURE",
           "RATIO_NONE", "AGREE_MS"]

#: fewer training clips (own texts, not flagged) than this: no model, the DTW alone
MIN_CLIPS = 20
_ROUNDS = 4
_VAR_FLOOR = 0.02  # of each dimension's variance over all frames
_CONS_STATES = 2
_VOWEL_STATES = 2
_CONS_MIN = 1  # frames per consonant state, at least
_VOWEL_MIN = 2  # frames per vowel state, at least
_SIL = "sil"
_CL = "cl"
#: consonants heard from a release after a closure: the closure is its own state (``_CL``)
_STOPS = {"k", "t", "p", "ky", "py", "ch", "ts", "Q"}
#: the log-probability of leaving out an optional silence between two morae
_SKIP_SIL = 0.0

_SPECIAL = {"SI": ("sh", "i"), "TI": ("ch", "i"), "TU": ("ts", "u"), "HU": ("f", "u"),
            "ZI": ("j", "i"), "DI": ("j", "i"), "ZU": ("z", "u"), "DU": ("z", "u"),
            "WI": ("", "i"), "WE": ("", "e"), "WO": ("", "o"), "N": ("", "N")}


def phones(kana: str, prev_vowel: str = "a") -> list[str]:
    """A mora's phones: [consonant, vowel] or [vowel] ("" consonants dropped); っ is a
    closure ("Q"), ー the vowel before it again."""
    if not kana:
        return []
    if kana[0] in "ーｰ":
        return [prev_vowel]
    names = []
    for ch in kana:
        try:
            nm = unicodedata.name(ch)
        except ValueError:
            return [prev_vowel]
        names.append(nm.replace("HIRAGANA LETTER ", "").replace("KATAKANA LETTER ", ""))
    first = names[0]
    if first == "SMALL TU":
        return ["Q"]
    cons, vowel = _SPECIAL.get(first, (first[:-1].lower(), first[-1].lower()))
    if len(names) > 1 and names[1].startswith("SMALL "):  # きょ, しゃ: the small kana's vowel
        small = names[1][6:]
        vowel = small[-1].lower()
        if cons in ("sh", "ch", "j"):
            pass
        elif small in ("YA", "YU", "YO"):
            cons = (cons or "") + "y"
    if vowel not in "aiueo" and vowel != "N":
        vowel = "a"
    return ([cons] if cons else []) + [vowel]


def _is_vowel(p: str) -> bool:
    return p in ("a", "i", "u", "e", "o", "N")


def _n_states(p: str) -> int:
    return 1 if p in (_SIL, _CL) else (_VOWEL_STATES if _is_vowel(p) else _CONS_STATES)


def quiet_frames(x, rate: int):
    """Which of ``clip_features``' frames are silent (``audio.align``'s silence: 35 dB under
    the loud frames): where training starts the pauses' and closures' states."""
    from audio.align import _cepstra, _silent_runs

    _, db = _cepstra(x, rate)
    return _silent_runs(db, 3)[1]


def clip_features(x, rate: int):
    """The model's frames of ``x`` (10 ms apart): 13 cepstra and their deltas, mean and
    variance normalised over the clip."""
    import numpy as np

    from audio.align import _cepstra

    (c,), _ = _cepstra(x, rate)
    pad = np.concatenate([c[:1], c[:1], c, c[-1:], c[-1:]])
    d = (2 * (pad[4:] - pad[:-4]) + (pad[3:-1] - pad[1:-3])) / 10.0
    f = np.concatenate([c, d], axis=1)
    f = f - f.mean(axis=0)
    return f / (f.std(axis=0) + 1e-6)


def onset_sample(frame: int, rate: int) -> int:
    """The sample where a state that starts at feature frame ``frame`` starts: the frame's
    first sample, as ``audio.align`` counts (its window's centre, 16 ms later, put the human
    set's decisive onsets later than their labels: 90 % within 22 ms, not 18)."""
    from audio.align import _FEAT_RATE, _HOP

    return int(round(frame * _HOP * rate / _FEAT_RATE))


def onset_frames(onsets, rate: int, n_frames: int) -> list[int]:
    """Onsets in samples (e.g. the DTW's) as the feature frames they fall in, the last frame
    at most: where ``train`` starts a clip's path from."""
    from audio.align import _FEAT_RATE, _HOP

    hop = rate * _HOP / _FEAT_RATE
    return [min(n_frames - 1, int(round(o / hop))) for o in onsets]


@dataclass
class Model:
    """State models of one reader: state name ("k0", "a1", "sil0") -> row of ``mean``/``var``."""
    index: dict
    mean: object  # (states, dims)
    var: object
    stay: object  # (states,) log-probability of staying in a state another frame
    clips: int = 0  # clips it was trained on (in its last round)

    def _ll(self, F):
        """Log-likelihood of every frame under every state: (frames, states)."""
        import numpy as np

        iv = 1.0 / self.var
        const = -0.5 * (np.log(2 * np.pi * self.var).sum(axis=1))
        return (const[None, :] - 0.5 * ((F * F) @ iv.T - 2 * F @ (self.mean * iv).T
                                        + (self.mean * self.mean * iv).sum(axis=1)[None, :]))


def _text_phones(kanas) -> list[list[str]]:
    out, prev = [], "a"
    for k in kanas:
        ph = phones(k, prev)
        if ph and _is_vowel(ph[-1]) and ph[-1] != "N":
            prev = ph[-1]
        out.append(ph)
    return out


def _graph(kanas, model: Model | None):
    """The text's chain of states: (state names, mora of each state (-1: silence), whether
    the state may be skipped, the least frames of each chain link).  Each state with a least
    duration d is d links, only the last may stay."""
    names, mora, optional = [], [], []

    def add(name, m, opt):
        names.append(name)
        mora.append(m)
        optional.append(opt)

    for m, ph in enumerate(_text_phones(kanas)):
        # before each mora a pause may come, or before a stop its closure (a silence that is
        # no pause: the mora is first heard at its release)
        add((_CL if m and ph and ph[0] in _STOPS else _SIL) + "0", -1, True)
        for p in ph:
            for s in range(_n_states(p)):
                least = _VOWEL_MIN if _is_vowel(p) else _CONS_MIN
                for _ in range(least):
                    add(f"{p}{s}", m, False)
    add(_SIL + "0", -1, True)
    return names, mora, optional


def _viterbi(E, stay, adv, optional):
    """Best path through a left-to-right chain: E (frames, links) emission log-likelihoods,
    stay/adv (links,) log-probabilities of staying and of moving on, ``optional`` links may
    be skipped.  Returns (the link of each frame, the path's log-likelihood)."""
    import numpy as np

    T, S = E.shape
    NEG = -1e18
    opt = np.asarray(optional, bool)
    delta = np.full(S, NEG)
    delta[0] = E[0, 0]
    if S > 1 and opt[0]:
        delta[1] = E[0, 1]
    bp = np.zeros((T, S), np.int8)  # 0 stay, 1 from s-1, 2 from s-2 (an optional one skipped)
    skip_ok = np.zeros(S, bool)
    skip_ok[2:] = opt[1:-1]
    for t in range(1, T):
        a = delta + stay
        b = np.full(S, NEG)
        b[1:] = delta[:-1] + adv[:-1]
        c = np.full(S, NEG)
        c[2:] = np.where(skip_ok[2:], delta[:-2] + adv[:-2] + _SKIP_SIL, NEG)
        best = np.maximum(a, np.maximum(b, c))
        bp[t] = np.where(best == a, 0, np.where(best == b, 1, 2))
        delta = best + E[t]
    end = S - 1
    if S > 1 and opt[-1] and delta[S - 2] > delta[S - 1]:
        end = S - 2
    total = float(delta[end])
    path = np.zeros(T, int)
    s = end
    for t in range(T - 1, -1, -1):
        path[t] = s
        s -= int(bp[t, s])
    return path, total


def _chain(model: Model, kanas):
    """(emission row of each link, stay, adv, optional, mora of each link) for a text."""
    import numpy as np

    names, mora, optional = _graph(kanas, model)
    rows = np.array([model.index.get(n, model.index[_SIL + "0"]) for n in names])
    last = np.ones(len(names), bool)  # the last link of a state with a least duration stays
    last[:-1] = [names[i] != names[i + 1] or mora[i] != mora[i + 1] or optional[i]
                 for i in range(len(names) - 1)]
    st = np.where(last, model.stay[rows], -1e18)
    adv = np.where(last, np.log1p(-np.exp(np.minimum(model.stay[rows], -1e-6))), 0.0)
    return rows, st, adv, np.asarray(optional), np.asarray(mora)


def _emissions(model: Model, F, rows):
    """Each frame's log-likelihood under each link's state."""
    return model._ll(F)[:, rows]


def force_align(model: Model, F, kanas):
    """(each mora's onset frame, per-frame log-likelihood) of the text ``kanas`` through the
    clip's frames ``F`` (``clip_features``)."""
    import numpy as np

    rows, st, adv, opt, mora = _chain(model, kanas)
    if len(F) < len(rows):
        return None, -np.inf
    path, total = _viterbi(_emissions(model, F, rows), st, adv, opt)
    m_of = mora[path]
    onsets = []
    for m in range(len(kanas)):
        at = np.flatnonzero(m_of == m)
        onsets.append(int(at[0]) if len(at) else (onsets[-1] + 1 if onsets else 0))
    return onsets, total / len(F)


#: the log-probability of each new phone in the free phone loop (``loop_loglik``)
_LOOP_PHONE = -2.0


def loop_loglik(model: Model, F) -> float:
    """Per-frame log-likelihood of the best sequence of any phones (and silences) through
    ``F``, the least durations kept: the most any text could fit, what a text's own fit is
    measured against (``fit_gap``)."""
    import numpy as np

    units = sorted({n[:-1] for n in model.index})
    rows, stay, adv, first, last = [], [], [], [], []
    for p in units:
        chain = []
        for s in range(_n_states(p)):
            least = _VOWEL_MIN if _is_vowel(p) else (_CONS_MIN if p not in (_SIL, _CL) else 1)
            name = f"{p}{s}"
            if name not in model.index:
                continue
            for d in range(least):
                chain.append((model.index[name], d == least - 1))
        for i, (row, can_stay) in enumerate(chain):
            rows.append(row)
            st = model.stay[row] if can_stay else -1e18
            stay.append(st)
            adv.append(np.log1p(-np.exp(min(st, -1e-6))) if can_stay else 0.0)
            first.append(i == 0)
            last.append(i == len(chain) - 1)
    rows, stay, adv = np.array(rows), np.array(stay), np.array(adv)
    first, last = np.array(first), np.array(last)
    E = model._ll(F)[:, rows]
    NEG = -1e18
    delta = np.where(first, E[0] + _LOOP_PHONE, NEG)
    for t in range(1, len(E)):
        exit_ = float(np.max(np.where(last, delta + adv, NEG)))
        b = np.full(len(delta), NEG)
        b[1:] = np.where(first[1:], NEG, delta[:-1] + adv[:-1])
        new = np.maximum(delta + stay, b)
        new = np.where(first, np.maximum(new, exit_ + _LOOP_PHONE), new)
        delta = new + E[t]
    return float(np.max(np.where(last, delta, NEG))) / len(E)


def loglik(model: Model, F, kanas) -> float:
    """Per-frame log-likelihood of the best path of ``kanas`` through ``F``."""
    return force_align(model, F, kanas)[1]


def competitor_texts(kanas, others=(), shuffles: int = 3) -> list[list[str]]:
    """The texts a clip's own is weighed against: ``others`` (the neighbouring poems') and
    the own morae in ``shuffles`` fixed orders."""
    import numpy as np

    out = [list(o) for o in others if list(o) != list(kanas)]
    for seed in range(shuffles):
        order = np.random.default_rng(seed).permutation(len(kanas))
        out.append([kanas[i] for i in order])
    return out


def margin(model: Model, F, kanas, competitors) -> float:
    """Per-frame log-likelihood of the own text over the best competitor's."""
    own = loglik(model, F, kanas)
    best = max((loglik(model, F, c) for c in competitors), default=-float("inf"))
    return float(own - best)


def _estimate(stats, dims):
    import numpy as np

    names = sorted(stats)
    mean = np.zeros((len(names), dims))
    var = np.ones((len(names), dims))
    stay = np.zeros(len(names))
    for i, n in enumerate(names):
        X, visits = stats[n]
        X = np.concatenate(X) if X else np.zeros((0, dims))
        if len(X) >= 2:
            mean[i] = X.mean(axis=0)
            var[i] = X.var(axis=0)
        frames = max(1, len(X))
        visits = max(1, visits)
        p = 1.0 - visits / max(frames, visits + 1)
        stay[i] = np.log(min(max(p, 0.05), 0.98))
    return names, mean, var, stay


def _model(stats, dims, floor) -> Model:
    import numpy as np

    names, mean, var, stay = _estimate(stats, dims)
    var = np.maximum(var, floor[None, :])
    for i, n in enumerate(names):  # a state never seen: the silence's
        if not len(stats[n][0]):
            mean[i] = 0.0
            var[i] = 1.0
    return Model({n: i for i, n in enumerate(names)}, mean, var, stay)


def _add_path(stats, names_of_frames, F):
    """Frames of one clip to their states' statistics (frames, visits)."""
    import numpy as np

    names_of_frames = np.asarray(names_of_frames)
    change = np.flatnonzero(np.concatenate([[True], names_of_frames[1:] != names_of_frames[:-1]]))
    for n in set(names_of_frames.tolist()):
        st = stats.setdefault(n, ([], 0))
        st[0].append(F[names_of_frames == n])
    for i in change:
        n = names_of_frames[i]
        X, v = stats[n]
        stats[n] = (X, v + 1)


def _init_path(F, kanas, onsets, silent):
    """States laid along a given timeline: in each mora its consonant's states in its first
    third (at most 80 ms), its vowel's in the rest, each state an equal share; silent frames
    (pauses) the silence's."""
    import numpy as np

    T = len(F)
    out = np.empty(T, object)
    bounds = list(onsets) + [T]
    for m, ph in enumerate(_text_phones(kanas)):
        a, b = int(bounds[m]), int(max(bounds[m] + 1, bounds[m + 1]))
        b = min(b, T)
        if a >= b:
            continue
        states = []
        for p in ph:
            states += [(p, s) for s in range(_n_states(p))]
        n_cons = sum(1 for p, _ in states if not _is_vowel(p))
        cons_len = min((b - a) // 3, 8) if n_cons else 0
        cuts = []
        if n_cons:
            cuts += list(a + np.floor(np.arange(n_cons) * cons_len / n_cons).astype(int))
        n_v = len(states) - n_cons
        cuts += list(a + cons_len + np.floor(np.arange(n_v) * (b - a - cons_len) / n_v).astype(int))
        cuts.append(b)
        for (p, s), c0, c1 in zip(states, cuts, cuts[1:]):
            out[c0:c1] = f"{p}{s}"
    out[: int(onsets[0]) if len(onsets) else 0] = _SIL + "0"
    ph = _text_phones(kanas)
    for t in np.flatnonzero(np.asarray(silent, bool)):
        m = int(np.searchsorted(bounds[:-1], t, side="right"))  # the next mora
        out[t] = (_CL if 0 < m < len(ph) and ph[m] and ph[m][0] in _STOPS else _SIL) + "0"
    for i in range(T):
        if out[i] is None:
            out[i] = _SIL + "0"
    return out


def _path_names(model: Model, F, kanas):
    """The state name of each frame on the Viterbi path of ``kanas``, and its per-frame
    log-likelihood."""
    import numpy as np

    names, _, _ = _graph(kanas, model)
    rows, st, adv, opt, _ = _chain(model, kanas)
    path, total = _viterbi(_emissions(model, F, rows), st, adv, opt)
    return np.asarray(names, object)[path], total / len(F)


def train(clips, *, rounds: int = _ROUNDS, competitors=None) -> Model | None:
    """A reader's model from ``clips``: a list of (features (``clip_features``), the text's
    morae (kana), onset frames to start from, silent frames (bool per frame, ``quiet_frames``)
    or None).  ``competitors``: for each clip, the texts weighed against its own
    (``competitor_texts``): after the first round, a clip whose own text does not fit better
    than all of them (a misnamed file, a clip the DTW put wrong) is left out of the rest.
    None when fewer than ``MIN_CLIPS`` clips are given or left."""
    import numpy as np

    if len(clips) < MIN_CLIPS:
        return None
    dims = clips[0][0].shape[1]
    allF = np.concatenate([c[0] for c in clips])
    floor = _VAR_FLOOR * allF.var(axis=0)
    stats: dict = {}
    for F, kanas, onsets, silent in clips:
        sil = silent if silent is not None else np.zeros(len(F), bool)
        _add_path(stats, _init_path(F, kanas, onsets, sil), F)
    model = _model(stats, dims, floor)
    use = list(range(len(clips)))
    for r in range(rounds):
        if r == 1 and competitors is not None:
            use = [i for i in use if margin(model, clips[i][0], clips[i][1], competitors[i]) > 0]
            if len(use) < MIN_CLIPS:
                return None
        stats = {}
        for i in use:
            F, kanas = clips[i][0], clips[i][1]
            _add_path(stats, _path_names(model, F, kanas)[0], F)
        model = _model(stats, dims, floor)
        model.clips = len(use)
    return model


#: the reader's model's onset of a mora is used where it is within this of the DTW's (ms);
#: further, the DTW's (its repairs of squeezed morae, ``audio.align._snapped``, hold there)
AGREE_MS = 100.0


def onsets(model: Model, x, rate: int, kanas, dtw_onsets, F=None) -> list[int]:
    """Each mora's onset (samples of ``x``) by the reader's model: its Viterbi onset, moved
    to a burst or a noise where the mora starts with one (``audio.align._snapped``), kept
    where it is within ``AGREE_MS`` of the DTW's onset (``dtw_onsets``, samples), else the
    DTW's."""
    from audio.align import _snapped

    F = clip_features(x, rate) if F is None else F
    got, _ = force_align(model, F, kanas)
    if got is None:
        return list(dtw_onsets)
    snapped = _snapped(x, rate, list(kanas), [onset_sample(o, rate) for o in got])
    out = []
    for m, (h, d) in enumerate(zip(snapped, dtw_onsets)):
        o = h if abs(h - d) <= AGREE_MS * rate / 1000 else d
        out.append(int(max(o, out[-1] + 1) if out else o))
    return out


#: confidence from the fit ratio (``weigh``): 1 at or under ``RATIO_SURE``, 0 at or over
#: ``RATIO_NONE`` (0.5 half way).  On a human reader's set (even poems, tuned on): its own
#: texts 0.08-0.65, other poems' texts (1, 2 and 5 poems on) 0.69 or more
RATIO_SURE = 0.60
RATIO_NONE = 0.75


def fit_gap(model: Model, F, kanas) -> float:
    """How far the text's best path is under the best path of any phones (per frame, <= ~0)."""
    return loglik(model, F, kanas) - loop_loglik(model, F)


def weigh(model: Model, F, kanas, competitors) -> tuple[float, float, float]:
    """(confidence, fit ratio, margin) of a clip's own text.  The fit ratio: how far the own
    text's best path is under the best path of any phones (``loop_loglik``), over how far
    the best competitor's is: 0 where the text fits as well as any phones could, 1 where it
    fits no better than a competitor (``margin`` 0), more where one fits better.  Unlike the
    margin alone it does not call a text several poems off confident when its competitors
    (that poem's neighbours, its morae shuffled) are as wrong as it is; and it does not
    depend on the scale of the model's likelihoods (a clean synthetic reader's and a human's
    alike)."""
    own = loglik(model, F, kanas)
    best = max((loglik(model, F, c) for c in competitors), default=-float("inf"))
    loop = loop_loglik(model, F)
    gap, other = min(0.0, own - loop), min(-1e-9, best - loop)
    ratio = gap / other
    conf = float(min(1.0, max(0.0, (RATIO_NONE - ratio) / (RATIO_NONE - RATIO_SURE))))
    return conf, float(ratio), float(own - best)
