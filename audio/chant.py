"""Chant: the HTS voice "mei" resynthesised with WORLD on a designed timeline, pitch and 余韻.

Why: HTS speaks; a karuta reader chants.  pyopenjtalk's own engine (in-process, no system
binary) says the labels at its natural pace, once (each label's length comes from the voice
file's duration model, ``audio.htsvoice``); WORLD (pyworld) analyses that speech into a
spectral envelope, an aperiodicity and a pitch track, 5 ms a frame (at FFT size ``FFT_SIZE``,
see ``_analyse``), and this module rebuilds it frame by frame on the reading's designed
timeline:

* **Timeline** (``design``, pure: no audio needed, so the plan is exact before synthesis;
  its settings are ``PACE``, a ``Pace``: a human reader's rhythm, issue 32).
  A ku's morae go by quickly: each vowel onset (its *beat*) comes ``mora_ms`` after the one
  before by the mora's position in the ku (165, 145, 170, 175 ... ms at speed 1.0), the
  consonant before its beat, as singing synthesis does: each consonant class has a *lead* (its audible part:
  burst + aspiration of a stop, the frication of s/sh/h, the murmur of m/n) and stops and
  affricates a *closure* (silence) before that.  A mora's layout onset is where its sound is
  first heard (``heard_onsets``: ``HEARD_MS`` before the beat, measured per consonant class;
  after a breath the consonant's start if earlier; a vowel's beat).  Each ku's last mora is
  held, ``ku_end_ms`` (1.1 s) from its beat to the end of its sound, the clip's last
  ``part_end_ms`` (1.7 s); a ``breath_ms`` silence follows a ku, and the next ku starts.  A clip
  starts at its first mora's heard onset (an initial stop's closure is not kept) and ends where
  the last sound ends.
* **Mapping**: every design frame takes its envelope from a point of the natural speech: the
  closure from the natural closure, the audible consonant from its release or frication
  (found in the natural audio: the largest rise of high-band energy) to the vowel, the vowel's
  first and last frames one to one, its middle stretched (a nasal's vowel is looked for after
  its murmur).  A vowel (or ん) right after a vowel dips 12 dB before its beat and comes back
  on it, so it is re-articulated there, as a reader separates morae; a fricative, glide or
  nasal right after a vowel likewise, the level coming back where the mora is heard.  A long middle (ku ends, the 余韻)
  wanders slowly and smoothly over the vowel's steady part instead of repeating anything, so
  the held sound changes a little all the time and never loops.
* **Pitch** (``MELODY``, a ``Melody``): a human karuta reader's melody (issue 21).  Each ku
  opens low: its first mora sits ``opening_st`` (-10) semitones under the reciting tone
  ``low_hz`` for ``low_ms`` (200 ms from its vowel's onset), then glides up (``glide_ms``,
  150 ms from 10 % to 90 % of the way) to the reciting tone, which it keeps to the ku's end.
  The word accent is kept only as small dips (``accent_dip_st``, 1 st) at the joins into morae
  the accent lowers.  A slow random drift (sd 0.12 st) and a little jitter; the 余韻 falls
  ``yoin_fall_st`` (0: a reader keeps a held sound's pitch) over its length.
* **Level**: consonant frames are capped against the vowels' level (a de-esser in the envelope:
  the high band of a consonant frame at most ``_HF_CAP_DB`` under the median vowel frame's
  power, its total at most ``_CONS_CAP_DB``); a held mora's slow level (a 200 ms mean) is
  kept at its median, so it stays level as a reader's does (issue 32); the low opening's vowels
  are up to 2.5 dB softer than the reciting tone (a low voice is softer, and WORLD's fewer, stronger
  pulses there would otherwise set the clip's gain under the true-peak ceiling); breaths are
  silent; the end fades gently
  (dB-linear to 10-24 dB under the held sound over the last ``_END_MS``, 150 ms, then 3 ms to
  zero), so a held sound keeps its level to its end as a reader's does (issue 32).  ``audio.loudness`` then brings the speech to one loudness.

Everything here is deterministic: the random drift is seeded from the item's labels.
"""
from __future__ import annotations

import hashlib
import struct
import threading
from dataclasses import dataclass

import numpy as np

__all__ = ["Design", "MoraPlan", "Melody", "MELODY", "Pace", "PACE", "design", "heard_onsets", "natural", "render", "LEAD_MS", "HEARD_MS", "CLOSURE_MS",
           "FRAME", "VOICE_VERSION"]

RATE = 48000
FRAME = 240  # samples per 5 ms frame (HTS and WORLD frame period)
_MS = 5
#: bump when anything here changes what a clip sounds like (the cache key includes it)
VOICE_VERSION = "chant-12"


@dataclass(frozen=True)
class Melody:
    """The chant's melody: the one place for its settings.

    The defaults are a human reader's, measured in issue 21 on one reader's jo-ka (21 s,
    WORLD Harvest pitch every 10 ms): every ku, 7 of 7, with or without a pause before it,
    opens with its first mora 9-12 st (median 10 st) under the reciting tone for about
    150-250 ms, glides up over ~150 ms into one reciting tone and keeps it to the ku's end,
    with only 1-2 st dips at some mora joins.  Times are at the reader's pace (``PACE``) and
    follow the pace."""

    #: the first mora of each ku, semitones against the reciting tone
    opening_st: float = -10.0
    #: how long the opening stays low, from the first mora's vowel onset, ms
    low_ms: float = 200.0
    #: the glide up to the reciting tone, ms from 10 % to 90 % of the way (a straight glide in
    #: semitones, so it lasts glide_ms / 0.8 in all)
    glide_ms: float = 150.0
    #: the word accent, kept as a dip this deep at the join into a mora the accent lowers
    #: (after the glide); 0 for none
    accent_dip_st: float = 1.0
    #: how long such a dip lasts, ms (a raised cosine centred on the mora's consonant onset)
    accent_dip_ms: float = 80.0
    #: the 余韻's fall over its length, semitones (0: a reader keeps a held sound's pitch, issue 32:
    #: its last third against its first +0.04 st, median over 93 held morae)
    yoin_fall_st: float = 0.0


#: the melody every clip is made with (the cache key includes it)
MELODY = Melody()


@dataclass(frozen=True)
class Pace:
    """The chant's timing at speed 1.0: the one place for it (``design``'s defaults; a
    ``SynthVoice`` can override each; every figure here is divided by the speed).

    A reader's rhythm inside the ku (issue 32), measured on a human reader's full set
    (``scripts/measure_reader.py``, 31 files: the jo-ka and poems 1-30): a ku's morae go by
    quickly, 145-185 ms each (median by position 165, 145, 170, 175, 180, 185, 185 ms), and its
    last mora is held, about 1.1 s within a part whatever the ku's length (median 1.10 s; so
    60 % of a 5-mora ku, 49 % of a 7-mora one); the held sound stays level in loudness and
    pitch.  A part's last mora is held longer: that reader holds it 3.6-4.4 s, issue 21's
    reader (the jo-ka) 1.1-2.4 s; ``part_end_ms`` 1.7 s keeps a 5-7-5 上の句 at issue 21's
    6.7 s (and a 7-7 下の句 about 5.1 s).  The breath between ku is issue 21's (0.2 s).  The
    pauses around and between the jo-ka's halves are the reading plan's
    (``reader.reading.settings``: ``joka_gap_ms`` 1.5 s, ``gap_ms`` 0.9 s)."""

    #: from one mora's vowel onset to the next, by the mora's position in its ku (the first
    #: mora's, the second's, ...; the last value for any later one); an int: every mora alike
    mora_ms: tuple[int, ...] | int = (165, 145, 170, 175, 180, 185, 185)
    #: each ku's last mora within a part, from its vowel onset to the end of its sound
    ku_end_ms: int = 1100
    #: the part's (the clip's) last mora, likewise (a 余韻, ``hold_ms``, follows it)
    part_end_ms: int = 1700
    #: silence after each ku but the item's last
    breath_ms: int = 200

    def mora_at(self, position: int, mora_ms=None) -> int:
        """ms from the vowel onset of the mora at ``position`` (0: a ku's first) to the next."""
        m = self.mora_ms if mora_ms is None else mora_ms
        if isinstance(m, int | float):
            return int(m)
        return int(m[min(position, len(m) - 1)])

    def typical_ms(self, mora_ms=None) -> int:
        """The median mora (the unit the melody's times are given in)."""
        m = self.mora_ms if mora_ms is None else mora_ms
        return int(m) if isinstance(m, int | float) else int(np.median(m))


#: the pace every clip is made with (the designed timeline, so the cache key, includes it)
PACE = Pace()

#: audible part of each consonant before its vowel's beat, ms at speed 1.0
LEAD_MS = {
    "k": 30, "t": 30, "p": 30, "g": 25, "d": 20, "b": 20, "kw": 40, "gw": 35,
    "ky": 45, "py": 45, "gy": 40, "by": 40, "ty": 45, "dy": 35,
    "ch": 75, "ts": 75, "j": 60, "z": 60,
    "s": 85, "sh": 85, "h": 60, "f": 65, "hy": 65,
    "m": 45, "n": 45, "my": 55, "ny": 55, "r": 30, "ry": 40, "w": 45, "y": 45, "v": 50,
}
#: where each consonant's mora is first heard, ms before its vowel's beat at speed 1.0, within a
#: ku (after a breath the consonant's whole lead is heard: ``heard_onsets``).  Measured on this
#: voice's own audio by two onset measures (``audio.acoustics.sharp_rise``, the first sharp rise
#: of spectral energy: the burst of a stop, the start of frication, the release of a nasal, flap
#: or glide into its vowel; and ``mel_flux_onset``, the first log-mel flux rise of 6 dB):
#: ``scripts/bench_acoustic.py --calibrate`` over the morae of a 100-card reading proposes, per
#: class, the value that makes the worse measure's 90th-percentile error smallest.  Where a
#: class is heard at two places (つ, ふ, ひ: the frication in some morae, only the vowel in
#: others), that is a value between them.  Classes not measured keep their lead.
HEARD_MS = dict(LEAD_MS, n=10, m=10, ny=15, my=15, r=10, ry=20, y=5, w=15, ts=42, g=24, b=22, z=17,
                h=31, t=24, sh=83, k=27, d=16, ch=69, f=35)
#: closure (silence) before the audible part: stops and affricates only, ms at speed 1.0
CLOSURE_MS = {"k": 45, "t": 45, "p": 50, "kw": 45, "ky": 45, "py": 50, "ty": 45,
              "g": 30, "d": 30, "b": 30, "gw": 30, "gy": 30, "by": 30, "dy": 30,
              "ch": 35, "ts": 35, "j": 20}
_STOPS = set(CLOSURE_MS)
_NASALS = {"m", "n", "my", "ny"}
_VOWEL_PH = set("aiueo") | {"N"}
_END_MS = 150  # the held sound's last fade (a reader's voice stops within ~100 ms: issue 32)
_END_DB = -24.0
_HF_CAP_DB = -14.0
_CONS_CAP_DB = -5.0
_HF_HZ = 3500
#: vowel after vowel: the level falls ``_VV_DIP_DB`` over ``_VV_FALL_MS`` before the beat and
#: comes back over ``_VV_RISE_MS`` centred on it; the same before the heard onset of a fricative
#: glide or nasal right after a vowel (``_DIP_CONS``: no closure, so no onset to hear without it)
_VV_DIP_DB = -12.0
_VV_FALL_MS = 35
_VV_RISE_MS = 8
_DIP_CONS = {"s", "sh", "h", "hy", "f", "z", "y", "w", "n", "m", "ny", "my"}


@dataclass(frozen=True)
class MoraPlan:
    onset: int  # frame (5 ms) where its sound is first heard: the layout onset
    beat: int  # frame where its vowel starts
    vend: int  # frame where its vowel (or held sound) ends
    closure: int  # frames of closure before ``onset``
    cons: str  # consonant phoneme ("" for none)
    high: bool  # on the higher pitch
    ku_end: bool


@dataclass(frozen=True)
class Design:
    morae: tuple[MoraPlan, ...]
    frames: int  # 5 ms frames, the hold included
    hold: int  # frames of 余韻 after the last mora
    speech: int  # frames before the hold
    beat: int  # frames of a typical mora (the pace's median; the melody's unit)

    def kus(self) -> list[tuple[int, int]]:
        """Each ku's first and last mora (indices into ``morae``)."""
        ends = [n for n, m in enumerate(self.morae) if m.ku_end]
        return list(zip([0] + [e + 1 for e in ends[:-1]], ends))


def _phone(label: str) -> str:
    return label.split("-", 1)[1].split("+", 1)[0]


def _high(label: str) -> bool:
    """Tokyo-accent high mora, from the label's A (mora position) and F (accent type) fields."""
    try:
        a = label.split("/A:", 1)[1].split("/", 1)[0].split("+")
        f = label.split("/F:", 1)[1].split("/", 1)[0]
        pos = int(a[1])
        acc = int(f.split("_", 1)[1].split("#", 1)[0])
    except (IndexError, ValueError):
        return False
    if acc == 0:
        return pos > 1
    if acc == 1:
        return pos == 1
    return 1 < pos <= acc


def design(script, *, speed: float = 1.0, hold_ms: int = 0, mora_ms=PACE.mora_ms,
           ku_end_ms: int = PACE.ku_end_ms, part_end_ms: int = PACE.part_end_ms,
           breath_ms: int = PACE.breath_ms) -> Design:
    """The designed timeline of a ``synth.Script`` (see the module docstring).  Pure."""
    def ticks(ms):
        return max(0, round(ms / _MS))

    breath = max(1, ticks(breath_ms / speed))
    ku_hold = max(8, ticks(ku_end_ms / speed))
    part_hold = max(8, ticks(part_end_ms / speed))
    shrink = 1.0 / max(1.0, speed)  # consonants shorten when faster, never lengthen
    labels = script.labels
    out: list[MoraPlan] = []
    last = len(script.mora_phones) - 1
    prev_beat = prev_vend = 0
    pos = 0  # the mora's position in its ku
    T_prev = 0
    for n, phones in enumerate(script.mora_phones):
        cons = _phone(labels[phones[0]]) if len(phones) == 2 else ""
        vowel_label = labels[phones[-1]]
        lead = ticks(LEAD_MS.get(cons, 50) * shrink) if cons else 0
        clos = ticks(CLOSURE_MS.get(cons, 0) * shrink) if cons else 0
        lead = max(1, lead) if cons else 0
        # the room before this mora's beat: the previous mora's length less 30 ms of its vowel
        room = (T_prev if pos else 10 ** 6) - 6
        if lead + clos > room:
            scale = room / (lead + clos)
            lead, clos = max(1, int(lead * scale)), int(clos * scale)
        if n == 0:
            onset, clos = 0, 0
            beat = lead
        elif out[-1].ku_end:
            onset = prev_vend + max(breath, clos)
            beat = onset + lead
        else:
            beat = prev_beat + T_prev
            onset = beat - lead
        is_end = script.ku_end[n]
        if is_end:
            vend = beat + (part_hold if n == last else ku_hold)
        else:
            vend = -1  # set by the next mora
        if out and not out[-1].ku_end:
            p = out[-1]
            out[-1] = MoraPlan(p.onset, p.beat, onset - clos, p.closure, p.cons, p.high, p.ku_end)
        out.append(MoraPlan(onset, beat, vend, clos, cons, _high(vowel_label), is_end))
        prev_beat, prev_vend = beat, vend
        T_prev = max(8, ticks(PACE.mora_at(pos, mora_ms) / speed))
        pos = 0 if is_end else pos + 1
        if n == last:
            break
    hold = ticks(hold_ms)  # 余韻: not scaled by speed
    speech = out[-1].vend
    p = out[-1]
    out[-1] = MoraPlan(p.onset, p.beat, p.vend + hold, p.closure, p.cons, p.high, p.ku_end)
    return Design(tuple(out), speech + hold, hold, speech, max(8, ticks(PACE.typical_ms(mora_ms) / speed)))


def heard_onsets(des: Design) -> list[int]:
    """Per mora, the sample where it is first heard: the clip's start for the first; for a
    consonant, ``HEARD_MS`` before its beat (scaled as its consonant is; a voiced stop is heard
    in its closure already), or after a breath (silence) its consonant's onset if that is
    earlier (a nasal's murmur after silence is a sound of its own; after a vowel only its
    release is); else its beat (a vowel after a vowel is re-articulated there: ``_VV_DIP_DB``)."""
    out = []
    for n, m in enumerate(des.morae):
        if n == 0:
            out.append(0)
        elif m.cons:
            lead = LEAD_MS.get(m.cons, 50)
            frac = HEARD_MS.get(m.cons, lead) / lead  # > 1: heard in the closure (voicing)
            if des.morae[n - 1].ku_end:  # after a breath its first sound is heard: the murmur
                frac = max(1.0, frac)  # of a nasal, flap or glide too, not only its release
            at = m.beat * FRAME - round((m.beat - m.onset) * FRAME * frac)
            out.append(max(at, out[-1] + FRAME))
        else:
            out.append(m.onset * FRAME)
    return out


# ------------------------------------------------------------------------------------------------
# natural speech: pyopenjtalk's in-process HTS engine

_ENGINES = threading.local()


def _engine(voice_path: str):
    eng = getattr(_ENGINES, "eng", None)
    if eng is None or _ENGINES.path != voice_path:
        from audio.openjtalk import pyopenjtalk_module

        pyopenjtalk_module()  # quiet import
        from pyopenjtalk.htsengine import HTSEngine

        try:
            eng = HTSEngine(voice_path.encode())
        except Exception:  # the engine says only "failed to initialize"
            raise RuntimeError(f"voice file {voice_path} cannot be loaded") from None
        _ENGINES.eng, _ENGINES.path = eng, voice_path
    return eng


def natural(labels, voice_path: str):
    """Natural HTS speech of ``labels`` (float64, full scale 1.0) and each label's frames.

    The duration of a label depends only on that label: its frames come from the voice file's
    duration model (``audio.htsvoice``, no synthesis) and must add up to the speech's length;
    if they do not (a voice file that model reader does not know), each label is synthesized
    alone, which gives its length in the whole exactly (checked the same way)."""
    eng = _engine(voice_path)
    eng.set_speed(1.0)
    eng.add_half_tone(0.0)
    x = np.asarray(eng.synthesize(list(labels)), dtype=np.float64) / 32768.0
    try:
        from audio.htsvoice import duration_model

        model = duration_model(voice_path)
        lens = [model.frames(lab) for lab in labels]
    except (OSError, ValueError, KeyError, struct.error):
        lens = []
    if sum(lens) * FRAME != len(x):
        lens = []
        for lab in labels:
            eng.set_speed(1.0)
            lens.append(len(eng.synthesize([lab])) // FRAME)
    if sum(lens) * FRAME != len(x):
        raise RuntimeError(f"label lengths {sum(lens) * FRAME} do not add up to {len(x)}")
    return x, lens


# ------------------------------------------------------------------------------------------------
# analysis of the natural speech


def _env_db(x, hop: int = 48, win: int = 240, hf: bool = False):
    """Level in dB of ``win``-sample windows every ``hop`` samples (1 ms); ``hf``: of the
    first difference (a high-pass that leaves bursts and frication, not the voicing bar)."""
    y = np.diff(x, prepend=x[:1]) if hf else x
    p = np.concatenate([[0.0], np.cumsum(y * y)])
    n = len(x) // hop
    s = np.arange(n) * hop
    e = np.minimum(s + win, len(x))
    return 10 * np.log10((p[e] - p[s]) / np.maximum(1, e - s) + 1e-14)


def _onsets(x, script, starts, lens):
    """Per mora, in natural frames (float, 5 ms units): where its sound is first heard, and
    where its vowel starts as heard (``audio.acoustics.vowel_onset``: the first-formant band
    back near the vowel's level).  The first is the burst of a stop (the largest rise of the
    high band in its label), the first audible sound after a silence (30 dB under the loud
    frames), else the consonant's label start."""
    from audio.acoustics import vowel_onset

    env = _env_db(x)
    henv = _env_db(x, hf=True)
    ref = np.percentile(env, 95)
    labels = script.labels
    out = []
    prev_silent = True
    for n, phones in enumerate(script.mora_phones):
        c0 = starts[phones[0]]
        v0 = starts[phones[-1]]
        v1 = v0 + lens[phones[-1]]
        cons = _phone(labels[phones[0]]) if len(phones) == 2 else ""
        va = float(v0)
        if cons:
            before = min(60.0, (v0 - c0) * _MS)
            if cons in _NASALS and not prev_silent:
                # the murmur is the level's low point (HTS's label boundary can sit well inside
                # the previous vowel): look for the vowel's onset only after it
                lo, hi = c0 * _MS, min(len(env), (v0 + 4) * _MS)
                if hi > lo:
                    murmur = lo + int(np.argmin(env[lo:hi]))
                    before = float(np.clip(v0 * _MS - murmur + 5, 5.0, before))
            va = vowel_onset(x, RATE, v0 * FRAME, before_ms=before, after_ms=40.0) / FRAME
            va = float(np.clip(va, c0 + 1, v1 - 2))
        r = float(c0)
        a, b = c0 * _MS, v0 * _MS  # ms
        if prev_silent:
            seg = env[a:v1 * _MS]
            hit = np.nonzero(seg > ref - 30)[0]
            if len(hit):
                r = (a + int(hit[0])) / _MS
        elif cons in _STOPS and b - a > 6:
            lo = a + min(10, (b - a) // 3)  # the burst is not in the closure's first ms
            d = henv[lo + 2:b + 1] - henv[lo - 2:b - 3] if b - 3 > lo - 2 else np.array([])
            if len(d):
                r = (lo + int(np.argmax(d))) / _MS
        if cons:
            r = min(r, va - 0.4)
        else:
            va = max(va, r)
        r = min(r, v1 - 2)
        out.append((r, va))
        prev_silent = script.ku_end[n] and script.pau_after[n] >= 0
    return out


#: WORLD's FFT size at 48 kHz for the envelope, the aperiodicity and the synthesis: 1024
#: (CheapTrick's floor is then 3 x 48000 / 1024 = 141 Hz; mei speaks above it, frames under it
#: take CheapTrick's unvoiced envelope) -- half the cost of the 2048 that its 71-90 Hz default
#: floor needs, in analysis and in synthesis
FFT_SIZE = 1024


def _analyse(x):
    """WORLD analysis of the natural speech at the cost a chant needs (measured:
    ``scripts/bench_synth.py``): DIO on a 4x decimated signal (f0 is only the analysis's
    guide and the voiced/unvoiced map here: the chant's pitch is designed), StoneMask at
    48 kHz, CheapTrick at ``FFT_SIZE``; D4C on the signal at 24 kHz (its windows are sized for
    a 47 Hz floor, 8192 points at 48 kHz), the bands above 12 kHz taking the 12 kHz value."""
    import pyworld as pw
    from scipy.signal import resample_poly

    f0, t = pw.dio(x, RATE, f0_floor=90.0, f0_ceil=700.0, frame_period=_MS, speed=4)
    f0 = pw.stonemask(x, f0, t, RATE)
    sp = pw.cheaptrick(x, f0, t, RATE, fft_size=FFT_SIZE)
    half = FFT_SIZE // 2 + 1
    ap_lo = pw.d4c(resample_poly(x, 1, 2), f0, t, RATE // 2, fft_size=FFT_SIZE)  # 0-12 kHz
    ap = np.empty((len(f0), half))
    ap[:, :half // 2 + 1] = ap_lo[:, ::2]
    ap[:, half // 2 + 1:] = ap_lo[:, -1:]
    return f0, sp, ap


# ------------------------------------------------------------------------------------------------
# rendering


def _smooth_noise(rng, n: int, sigma: float):
    """Gaussian-filtered white noise with unit sd (n values, kernel sd ``sigma`` frames)."""
    if n <= 0:
        return np.zeros(0)
    k = int(3 * sigma)
    w = np.exp(-0.5 * (np.arange(-k, k + 1) / sigma) ** 2)
    z = np.convolve(rng.standard_normal(n + 2 * k), w / w.sum(), mode="valid")[:n]
    sd = z.std()
    return z / sd if sd > 0 else z


def _vowel_map(n_out: int, a: float, b: float, *, keep_tail: bool, rng, power=None):
    """Source positions (natural frames) for an ``n_out``-frame vowel from natural [a, b).

    Head and tail (the transitions from and to the neighbours) one to one; the middle spans
    the vowel's steady part (frames within 4 dB of its loudest), stretched; a long middle
    wanders over it slowly (smoothed noise) so a held vowel keeps changing a little."""
    nat = b - a
    if n_out <= 0:
        return np.zeros(0)
    if n_out <= nat + 1:
        return a + np.arange(n_out) * (nat / n_out)
    head = min(6.0, 0.35 * nat)
    tail = min(5.0, 0.3 * nat) if keep_tail else 0.0
    mid_a, mid_b = a + head, b - tail - 1
    if power is not None and mid_b - mid_a > 2:
        idx = np.arange(int(np.ceil(mid_a)), int(np.floor(mid_b)) + 1)
        idx = idx[(idx >= 0) & (idx < len(power))]
        if len(idx) > 2:
            p = 10 * np.log10(power[idx] + 1e-30)
            steady = idx[p >= p.max() - 4.0]
            mid_a, mid_b = float(steady[0]), float(max(steady[-1], steady[0] + 1))
    if mid_b <= mid_a:
        mid_b = mid_a + 1e-3
    n_head, n_tail = int(round(head)), int(round(tail))
    n_mid = max(0, n_out - n_head - n_tail)
    pos = [a + np.arange(n_head) * ((mid_a - a) / max(1, n_head))]
    if n_mid:
        u = np.arange(n_mid) / max(1, n_mid - 1)
        span = mid_b - mid_a
        if n_mid > 3 * span:  # long: wander slowly over the steady part
            w = _smooth_noise(rng, n_mid, 40.0) * 0.3 * np.sin(np.pi * u) ** 0.5
            if not keep_tail:  # a held end: stay in the middle of the steady part
                u = 0.5 - 0.5 * np.cos(np.pi * np.minimum(u * n_mid / max(1.0, 2 * span), 1.0)) * 1.0
                u = np.minimum(u, 0.5) + 0.0
            u = np.clip(u + w, 0.0, 1.0)
        pos.append(mid_a + u * span)
    pos.append(mid_b + np.arange(n_tail) * ((b - mid_b) / max(1, n_tail)))
    out = np.concatenate(pos)[:n_out]
    if len(out) < n_out:
        out = np.concatenate([out, np.full(n_out - len(out), out[-1] if len(out) else a)])
    return out


def _interp_frames(arr, pos):
    i = np.clip(np.floor(pos).astype(int), 0, len(arr) - 1)
    j = np.clip(i + 1, 0, len(arr) - 1)
    f = np.clip(pos - np.floor(pos), 0.0, 1.0)[:, None]
    return arr[i] * (1 - f) + arr[j] * f


def melody_st(des: Design, melody: Melody = MELODY):
    """The designed pitch, semitones against the reciting tone, one value per frame (``des.frames``
    + 1), before smoothing, drift and jitter: each ku's low opening and glide, the accent dips,
    the 余韻's fall.  Pure."""
    D = des.frames
    level = np.zeros(D + 1)
    scale = des.beat / (PACE.typical_ms() / _MS)  # the melody's times follow the pace
    low = melody.low_ms / _MS * scale
    ramp = max(1.0, melody.glide_ms / 0.8 / _MS * scale)
    dip_half = max(1.0, melody.accent_dip_ms / 2 / _MS * scale)
    morae = des.morae
    for start, n in des.kus():
        ku, mp = morae[start:n + 1], morae[n]
        k0 = ku[0].onset - ku[0].closure
        k1 = mp.vend
        t = np.arange(k0, k1 + (1 if n == len(morae) - 1 else 0))
        g0 = ku[0].beat + low - 0.1 * ramp  # the glide starts; 10 % of the way at beat + low
        u = np.clip((t - g0) / ramp, 0.0, 1.0)
        level[t] = melody.opening_st * (1.0 - u)
        glide_end = g0 + ramp
        if melody.accent_dip_st:
            for j in range(1, len(ku)):
                m, prev = ku[j], ku[j - 1]
                if m.high or not prev.high or m.onset - dip_half < glide_end:
                    continue
                a, b = int(np.floor(m.onset - dip_half)), int(np.ceil(m.onset + dip_half))
                tt = np.arange(max(a, k0), min(b, k1))
                level[tt] -= melody.accent_dip_st * 0.5 * (1 + np.cos(np.pi * (tt - m.onset) / dip_half))
    if des.hold:
        h0, end = des.speech, morae[-1].vend
        level[h0:end + 1] -= melody.yoin_fall_st * np.linspace(0, 1, end + 1 - h0)
    return level


def render(script, des: Design, nat, *, low_hz: float = 262.0, melody: Melody = MELODY,
           half_tone: float = 0.0):
    """Samples (float64, unnormalised) of ``des`` made from natural speech ``nat`` = (x, lens),
    sung at ``melody`` on the reciting tone ``low_hz``."""
    import pyworld as pw

    x, lens = nat
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(int)
    f0n, spn, apn = _analyse(x)
    onsets = _onsets(x, script, starts, lens)
    npower = spn.sum(axis=1)
    seed = int.from_bytes(hashlib.sha256("\n".join(script.labels).encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)

    D = des.frames
    src = np.zeros(D + 1)
    kind = np.zeros(D + 1, dtype=np.int8)  # 0 silence, 1 consonant, 2 vowel
    last = len(des.morae) - 1
    for n, (mp, phones) in enumerate(zip(des.morae, script.mora_phones)):
        v_lab = phones[-1]
        vs, ve = starts[v_lab], starts[v_lab] + lens[v_lab]
        r, va = onsets[n]
        if mp.cons:
            c_lab = phones[0]
            cs = starts[c_lab]
            if mp.closure:
                k0, k1 = mp.onset - mp.closure, mp.onset
                src[k0:k1] = cs + (np.arange(k1 - k0) + 0.5) * (max(0.0, r - cs) / (k1 - k0))
                kind[k0:k1] = 1
            k0, k1 = mp.onset, mp.beat
            src[k0:k1] = r + np.arange(k1 - k0) * ((va - r) / max(1, k1 - k0))
            kind[k0:k1] = 1
            v0 = va  # the heard vowel onset falls on the beat
        else:
            v0 = va
        k0, k1 = mp.beat, mp.vend
        is_last = n == last
        src[k0:k1] = _vowel_map(k1 - k0, v0, float(ve), keep_tail=not is_last, rng=rng, power=npower)
        ph = _phone(script.labels[v_lab])
        kind[k0:k1] = 2 if ph in _VOWEL_PH else 0
    src[D] = src[D - 1] if D else 0
    kind[D] = kind[D - 1] if D else 0
    level = melody_st(des, melody)
    # pitch: smoothed over 30 ms, drift and jitter, in semitones
    k = np.ones(6) / 6
    lev = np.convolve(np.pad(level, (3, 2), mode="edge"), k, mode="valid")[:D + 1]
    lev = lev + 0.12 * _smooth_noise(rng, D + 1, 30.0) + 0.03 * _smooth_noise(rng, D + 1, 1.5)
    f0 = low_hz * 2 ** ((lev + half_tone) / 12)
    nat_voiced = np.interp(src, np.arange(len(f0n)), (f0n > 0).astype(float)) > 0.5
    voiced = (kind == 2) | ((kind == 1) & nat_voiced)
    f0 = np.where(voiced, f0, 0.0)
    sp = _interp_frames(spn, src)
    ap = _interp_frames(apn, src)
    # a held sound keeps its level, as a reader's does (issue 32): over each held mora's middle
    # (from 100 ms after its beat to 100 ms before its end) the slow level (a 200 ms mean) is
    # brought to its median; the fast changes of the wandering envelope stay
    for mp in des.morae:
        a0, a1 = mp.beat + 20, mp.vend - 20
        if not mp.ku_end or a1 - a0 < 40:
            continue
        pw_db = 10 * np.log10(sp[a0:a1].sum(axis=1) + 1e-30)
        k = np.ones(40) / 40
        slow = np.convolve(np.pad(pw_db, 20, mode="edge"), k, mode="same")[20:-20]
        g = np.median(slow) - slow
        ramp = np.minimum(1.0, np.minimum(np.arange(a1 - a0), np.arange(a1 - a0)[::-1]) / 20.0)
        sp[a0:a1] *= 10 ** (g * ramp / 10)[:, None]
    # a low voice is a softer voice: the opening's low tone up to 2.5 dB under the reciting
    # tone's level (at -10 st; WORLD's pulses at a lower pitch are each stronger, and a low
    # opening's peaks would otherwise set the clip's gain under the true-peak ceiling)
    soft = (kind == 2) & (level < 0)  # vowels only: a consonant's onset stays as heard
    sp[soft] *= 10 ** (0.25 * level[soft] / 10)[:, None]
    # vowels: periodic below ~2 kHz, breathier above (a clear chanted voice; mei's weak u
    # and i are otherwise half noise, and a held noise flutters)
    fax = np.linspace(0.0, 1.0, ap.shape[1])
    ap[kind == 2] = np.minimum(ap[kind == 2], (0.02 + 0.5 * fax)[None, :])
    # de-esser in the envelope: consonant frames capped against the vowels
    bins = sp.shape[1]
    hf = int(_HF_HZ / (RATE / 2) * (bins - 1))
    power = sp.sum(axis=1)
    vref = np.median(power[kind == 2]) if np.any(kind == 2) else np.median(power)
    cons = kind == 1
    if np.any(cons):
        hp = sp[cons, hf:].sum(axis=1)
        g_hf = np.minimum(1.0, vref * 10 ** (_HF_CAP_DB / 10) / np.maximum(hp, 1e-30))
        sp[np.ix_(cons, np.arange(hf, bins))] *= g_hf[:, None]
        tot = sp[cons].sum(axis=1)
        g = np.minimum(1.0, vref * 10 ** (_CONS_CAP_DB / 10) / np.maximum(tot, 1e-30))
        sp[cons] *= g[:, None]
    sil = kind == 0
    sp[sil] = np.maximum(sp[sil] * 1e-4, 1e-16)
    ap[sil] = 1.0
    y = pw.synthesize(np.ascontiguousarray(f0), np.ascontiguousarray(sp), np.ascontiguousarray(ap),
                      RATE, _MS)
    n_out = D * FRAME
    y = np.concatenate([y, np.zeros(max(0, n_out - len(y)))])[:n_out]
    # silence where the design is silent (breaths, and whatever is not a mora), 2 ms ramps
    mask = np.repeat((kind[:D] != 0).astype(float), FRAME)
    for mp in des.morae:  # closures stay in the mask (they are quiet, not cut)
        if mp.closure:
            mask[(mp.onset - mp.closure) * FRAME:mp.onset * FRAME] = 1.0
    ramp = np.ones(96) / 96
    mask = np.minimum(mask, np.convolve(mask, ramp, mode="same") * 2)
    # a vowel (or ん) right after another mora's vowel is re-articulated on its beat, as a
    # reader separates morae: the level dips before the beat and comes back on it, so the mora
    # has an onset a listener hears (without it the vowel glides and no onset is heard); a
    # fricative, glide or nasal after a vowel likewise, the level coming back where it is heard
    fall, rise = _VV_FALL_MS * RATE // 1000, _VV_RISE_MS * RATE // 1000
    dip = 10 ** (_VV_DIP_DB / 20)
    heard = heard_onsets(des)
    for n, mp in enumerate(des.morae):
        if n == 0 or des.morae[n - 1].ku_end or (mp.cons and mp.cons not in _DIP_CONS):
            continue
        b = heard[n]
        a0, a1 = max(0, b - fall - rise // 2), min(n_out, b + rise // 2)
        if a1 - a0 < fall + rise // 2:
            continue
        g = np.concatenate([np.geomspace(1.0, dip, fall), np.geomspace(dip, 1.0, a1 - a0 - fall)])
        mask[a0:a1] *= g
    y *= np.clip(mask, 0, 1)
    y[:48] *= np.linspace(0, 1, min(48, n_out))
    return y


def end_fade(y, des: Design, *, floor_dbfs: float = -42.0):
    """The gentle end, applied after the loudness gain: over the last ``_END_MS`` (or half the
    last vowel) the level falls dB-linearly to ``floor_dbfs`` (at least 10 dB, at most 24 dB
    under the held sound), then 3 ms to zero, so the sound is heard right to the clip's end."""
    n = len(y)
    last = des.morae[-1]
    end = min(round(_END_MS / _MS), max(8, (last.vend - last.beat) // 2)) * FRAME
    end = min(end, n)
    if end <= 0:
        return y
    body = y[max(0, n - end - RATE // 2):n - end]
    level = 10 * np.log10(np.mean(body * body) + 1e-20) if len(body) else -20.0
    depth = float(np.clip(floor_dbfs - level, -24.0, -10.0))
    y = y.copy()
    y[n - end:] *= 10 ** (depth / 20 * np.linspace(0, 1, end))
    z = min(144, n)
    y[n - z:] *= np.linspace(1, 0, z)
    return y
