"""Measurements of what a listener hears, for the acoustic benchmark and tests (numpy/scipy only).

Each function takes float samples at ``rate`` and returns plain numbers; none knows how the
audio was made, so they measure recorded voices as well as the synthesized one.

* ``heard_bounds``: first and last sound, a sound being a 5 ms window whose RMS is above
  -50 dBFS (1 ms steps; the window's centre is the time).
* ``loop_similarity``: the largest normalised autocorrelation at lags 15-60 ms: 1.000 for a
  loop of whole periods repeated exactly; a living held vowel stays lower.
* ``ripple_db``: amplitude flutter of a held sound: the level of each 5 ms window (about one
  pitch period or more) in dB, band-passed to 20-60 Hz, as a peak-to-peak figure (2 sqrt(2) x
  the band's RMS).
* ``dip_and_return``: a >= 10 dB dip followed by a return within a stretch (the "double
  ending" of a ku-final vowel).
* ``sharp_rise``: the acoustic onset near a time: the first 1 ms step where the rise of
  spectral energy (dB rises of 16 bands, 300 Hz-12 kHz, 8 ms windows, band power averaged over
  the last 14 ms) reaches half its largest value in the search window.
* ``vowel_onset``: where the first-formant band (450-1200 Hz) comes, after its dip at the
  consonant, within 6 dB of the vowel's level.
* ``harvest_st``: the pitch track as issue 21 measured a human reader: WORLD's Harvest, 10 ms
  frames, semitones over 100 Hz (NaN where unvoiced).
* ``ku_opening``: how a ku (or a clip) opens: its first 150 ms of voice against the reciting
  tone (the median pitch 0.45-1.2 s after the onset): the depth in semitones, how long it stays
  low, how long the glide up takes, and the pitch range after it.
* ``mel_flux_onset``: an onset measure independent of ``sharp_rise``: the first 1 ms step
  near a time where the log-mel flux (the mean dB rise over 10 ms of 40 mel bands) reaches 6 dB;
  None when there is no such rise.
* ``reading_figures`` / ``summary_lines``: a whole rendered reading against its plan, with the
  timing of issue 21's human reader (``READER_TIMING``; the jo-ka's parts: ``joka_rows``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["heard_bounds", "loop_similarity", "ripple_db", "dip_and_return",
           "sharp_rise", "vowel_onset", "held_drift", "period_ripple_db", "window_db", "harvest_st", "ku_opening", "mel_flux_onset",
           "OPENS_LOW_ST", "READER_TIMING", "READER_RHYTHM", "rhythm_lines", "joka_rows", "reading_figures", "summary_lines"]


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
    """(first, last) sample of sound: the centres of the first and the last 5 ms window whose
    RMS is above ``threshold_db`` dBFS (windows every 1 ms); None when nothing is heard."""
    e = window_db(x, rate)
    hop, win = rate // 1000, rate * 5 // 1000
    hit = np.nonzero(e > threshold_db)[0]
    if not len(hit):
        return None
    return int(hit[0] * hop + win // 2), int(hit[-1] * hop + win // 2)


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


def held_drift(x, rate: int, pitch: bool = True) -> dict | None:
    """How a held sound ``x`` (a held mora from 100 ms after its onset to 150 ms before its
    end: the caller cuts it) keeps its level and pitch: ``level_db``, the median 10 ms RMS
    level of its last third less that of its first third; ``pitch_st``, the same for its WORLD
    Harvest pitch (10 ms; voiced frames), and ``pitch_range_st`` (5-95 %).  None under 300 ms.
    The same measure for a human reader (``scripts/measure_reader.py``) and the chant
    (``reading_figures``)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < rate * 3 // 10:
        return None
    lv = window_db(x, rate, win_ms=10.0, hop_ms=5.0)
    third = max(1, len(lv) // 3)
    out = {"level_db": float(np.median(lv[-third:]) - np.median(lv[:third])), "pitch_st": None,
           "pitch_range_st": None}
    if pitch:
        if rate % 16000 == 0 and rate > 16000:  # the pitch needs no more (a third of the cost)
            from scipy.signal import resample_poly

            _t, st = harvest_st(resample_poly(x, 1, rate // 16000), 16000)
        else:
            _t, st = harvest_st(x, rate)
        v = st[np.isfinite(st)]
        if len(v) > 10:
            out["f0_hz"] = float(100.0 * 2 ** (np.median(v) / 12))
            t3 = len(v) // 3
            out["pitch_st"] = float(np.median(v[-t3:]) - np.median(v[:t3]))
            out["pitch_range_st"] = float(np.percentile(v, 95) - np.percentile(v, 5))
    return out


def period_ripple_db(x, rate: int, f0_hz: float | None = None) -> float:
    """Peak-to-peak amplitude (dB) of the 20-60 Hz flutter of a held sound's per-period level:
    the RMS of each pitch period (the period of its median Harvest pitch, one value a period),
    band-passed 20-60 Hz.  Finer than ``ripple_db``'s 5 ms windows (which straddle periods and
    smooth a period-to-period swing): a voice whose envelope alternates frame to frame shows
    here.  ``f0_hz``: its pitch if known (``held_drift``'s).  NaN for a sound under 300 ms or
    with no pitch."""
    from scipy.signal import butter, sosfiltfilt

    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if len(x) < rate * 3 // 10:
        return float("nan")
    if f0_hz is None:
        _t, st = harvest_st(np.ascontiguousarray(x[::3]) if rate % 3 == 0 else x,
                            rate // 3 if rate % 3 == 0 else rate)
        v = st[np.isfinite(st)]
        if len(v) < 10:
            return float("nan")
        f0_hz = 100.0 * 2 ** (float(np.median(v)) / 12)
    f0 = f0_hz
    period = rate / f0
    n = int(len(x) / period)
    edges = np.round(np.arange(n + 1) * period).astype(int)
    p = np.concatenate([[0.0], np.cumsum(x * x)])
    e = 10 * np.log10((p[edges[1:]] - p[edges[:-1]]) / np.diff(edges) + 1e-20)
    if n < 40 or f0 / 2 <= 60:
        return float("nan")
    sos = butter(4, [20, 60], btype="bandpass", fs=f0, output="sos")
    skip = max(1, int(f0 * 0.05))  # the filter's edges
    b = sosfiltfilt(sos, e - e.mean())[skip:-skip]
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


def _stft_db(x, rate: int, win_ms: float = 8.0, hop_ms: float = 1.0):
    win, hop = round(rate * win_ms / 1000), round(rate * hop_ms / 1000)
    if len(x) < win:
        return np.zeros((0, win // 2 + 1)), hop, win
    idx = np.arange(0, len(x) - win + 1, hop)[:, None] + np.arange(win)[None, :]
    frames = x[idx] * np.hanning(win)[None, :]
    spec = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    return 10 * np.log10(spec + 1e-12), hop, win


def _band_db(x, rate: int, lo_hz: float, hi_hz: float, bands: int, win_ms: float = 8.0,
             hop_ms: float = 1.0):
    """Levels (dB) of ``bands`` log-spaced bands between ``lo_hz`` and ``hi_hz`` (8 ms Hann
    windows every 1 ms): a smoothed spectrum, blind to harmonics moving with the pitch."""
    s, hop, win = _stft_db(x, rate, win_ms, hop_ms)
    if not len(s):
        return s, hop, win
    p = 10 ** (s / 10)
    edges = np.geomspace(lo_hz, hi_hz, bands + 1) * win / rate
    cols = [p[:, int(a):max(int(a) + 1, int(b))].sum(axis=1) for a, b in zip(edges[:-1], edges[1:])]
    return 10 * np.log10(np.stack(cols, axis=1) + 1e-12), hop, win


def _from(x, a: int, b: int):
    """``x[a:b]``, silence where ``a`` is before the start (what is heard before a clip)."""
    return np.concatenate([np.zeros(max(0, -a)), x[max(0, a):b]])


#: ms (1 ms frames) over which ``sharp_rise`` averages band power: two pitch periods of a ku's
#: low opening (147 Hz, ``audio.chant.MELODY``)
_PULSE_MS = 14


def sharp_rise(x, rate: int, around: int, before_ms: float = 60.0, after_ms: float = 60.0):
    """The acoustic onset near sample ``around``: the first 1 ms step in [around - before,
    around + after] whose rise of spectral energy (the dB rises over 4 ms of 16 log-spaced
    bands from 300 Hz to 12 kHz, summed) reaches half the largest rise in that span.  Each
    band's power is first averaged over the last ``_PULSE_MS`` (two pitch periods at 147 Hz):
    with 8 ms windows alone, a voice under ~250 Hz (a ku's low opening, 147 Hz) flutters from
    pitch pulse to pitch pulse, and that flutter read as onsets.  Sample index (window centre)."""
    from scipy.ndimage import uniform_filter1d

    x = np.asarray(x, dtype=np.float64).reshape(-1)
    a = around - round(rate * (before_ms + 20 + _PULSE_MS) / 1000)
    b = min(len(x), around + round(rate * (after_ms + 20) / 1000))
    s, hop, win = _band_db(_from(x, a, b), rate, 300.0, 12000.0, 16)
    if len(s) < 6:
        return around
    # the average of the last _PULSE_MS frames (trailing: an onset is not heard before it comes)
    s = 10 * np.log10(uniform_filter1d(10 ** (s / 10), _PULSE_MS, axis=0, mode="nearest",
                                       origin=_PULSE_MS // 2 - 1))
    s = np.maximum(s, s.max() - 60)  # ignore changes deep in the floor
    flux = np.maximum(0.0, s[4:] - s[:-4]).sum(axis=1)  # 4 ms apart
    centres = a + (np.arange(len(flux)) + 2) * hop + win // 2
    ok = (centres >= around - rate * before_ms / 1000) & (centres <= around + rate * after_ms / 1000)
    if not np.any(ok):
        return around
    f = np.where(ok, flux, 0.0)
    i = int(np.nonzero(f >= 0.5 * f.max())[0][0])
    return int(centres[i])


def vowel_onset(x, rate: int, around: int, before_ms: float = 60.0, after_ms: float = 60.0):
    """Where a vowel starts near sample ``around``: after the dip of the 450-1200 Hz band
    (first-formant region; 8 ms windows every 1 ms) in [around - before, around + 20 ms], the
    first step where that band comes within 6 dB of the vowel's level (its maximum in the
    100 ms after ``around``).  Bursts and nasal murmurs stay well under that level, so this is
    the voiced vowel's onset, the beat a listener hears."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    a = max(0, around - round(rate * (before_ms + 10) / 1000))
    b = min(len(x), around + round(rate * max(after_ms, 100.0) / 1000))
    s, hop, win = _band_db(x[a:b], rate, 450.0, 1200.0, 1)
    if len(s) < 12:
        return around
    band = s[:, 0]
    centres = a + np.arange(len(band)) * hop + win // 2
    lo_t = around - rate * before_ms / 1000
    dip_zone = (centres >= lo_t) & (centres <= around + rate * 0.02)
    peak_zone = (centres >= around) & (centres <= around + rate * 0.1)
    if not np.any(dip_zone) or not np.any(peak_zone):
        return around
    ref = band[peak_zone].max()
    dip = int(np.argmin(np.where(dip_zone, band, np.inf)))
    hit = np.nonzero((np.arange(len(band)) >= dip) & (band >= ref - 6.0))[0]
    if not len(hit):
        return around
    return int(min(centres[hit[0]], around + rate * after_ms / 1000))


def harvest_st(x, rate: int, frame_ms: float = 10.0):
    """(times in s, semitones over 100 Hz): WORLD's Harvest f0 every ``frame_ms`` (80-700 Hz),
    NaN where unvoiced.  The measure issue 21 used on a human reader's recording."""
    import pyworld as pw

    x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))
    if len(x) < rate // 20:
        return np.zeros(0), np.zeros(0)
    f0, t = pw.harvest(x, rate, f0_floor=80.0, f0_ceil=700.0, frame_period=frame_ms)
    st = np.full(len(f0), np.nan)
    v = f0 > 0
    st[v] = 12 * np.log2(f0[v] / 100.0)
    return t, st


#: a ku "opens low" when its first 150 ms of voice sit at least this far under its reciting tone
#: (the human reader of issue 21: -9 to -12 st, 7 of 7 ku; the two-level accent voice: +1.6)
OPENS_LOW_ST = -6.0


def ku_opening(x, rate: int, end: int | None = None, track=None) -> dict | None:
    """How the sound in ``x`` (starting at a ku's onset, ending at ``end``, default its end)
    opens, from the Harvest pitch (``track``: ``harvest_st(x[:end])``, if already made):

    * ``depth_st``: the median pitch of the first 150 ms of voice (the first 15 voiced 10 ms
      frames) minus the reciting tone, the median pitch 0.45-1.2 s after the onset;
    * ``low_ms``: from the first voiced frame to the last frame within 1 st of the opening's
      level before the glide (how long the first mora stays low); ``glide_ms``: from there to
      the first frame within 1 st of the reciting tone (for a 10 st opening, 10 % to 90 % of
      the way); both None when the ku does not open at least 2 st low or never gets there;
    * ``after_range_st``: the pitch range (5-95 %) from the end of the glide (or 0.45 s) to
      ``end``, and ``on_tone``: the share of its voiced frames within 2 st of the reciting tone
      (one reciting tone: a small range, nearly all frames on the tone).

    None when there is too little voice to say."""
    end = len(x) if end is None else min(end, len(x))
    t, st = track if track is not None else harvest_st(x[:end], rate)
    if not len(t):
        return None
    voiced = np.nonzero(np.isfinite(st))[0]
    ref = st[(t >= 0.45) & (t <= 1.2)]
    ref = ref[np.isfinite(ref)]
    if len(voiced) < 15 or len(ref) < 10:
        return None
    tone = float(np.median(ref))
    rel = st - tone
    first = voiced[:15]
    first = first[t[first] <= t[voiced[0]] + 0.3]  # the first voice, not a later mora's
    depth = float(np.median(rel[first]))
    low_ms = glide_ms = None
    glide_end = 0.45
    fin = np.isfinite(rel)
    if depth <= -2.0:
        i0 = voiced[0]
        # the glide's end: the first frame within 1 st of the tone from which the voice stays
        # within 2.5 st of it for 100 ms (10 voiced frames); its start: the last frame before
        # that still within 1 st of the opening (so stray frames on a consonant end neither)
        for i in voiced[voiced > i0]:
            nxt = rel[i:][fin[i:]][:10]
            if abs(rel[i]) <= 1.0 and np.abs(nxt).max() <= 2.5:
                low = np.nonzero(fin[:i] & (rel[:i] <= depth + 1.0))[0]
                j = low[-1] if len(low) else i0
                low_ms = float((t[j] - t[i0]) * 1000)
                glide_ms = float((t[i] - t[j]) * 1000)
                glide_end = float(t[i])
                break
    after = rel[(t >= glide_end) & fin]
    if len(after) > 10:
        rng = float(np.percentile(after, 95) - np.percentile(after, 5))
        on_tone = float(np.mean(np.abs(after) <= 2.0))
    else:
        rng = on_tone = float("nan")
    return {"depth_st": depth, "low_ms": low_ms, "glide_ms": glide_ms, "after_range_st": rng,
            "on_tone": on_tone, "tone_st": tone}


def _mel_filters(n_fft: int, rate: int, bands: int, lo_hz: float, hi_hz: float):
    """Triangular mel filters (HTK mel scale), ``bands`` x (n_fft // 2 + 1), unit peak."""
    def mel(f):
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    def hz(m):
        return 700.0 * (10 ** (np.asarray(m) / 2595.0) - 1.0)

    edges = hz(np.linspace(mel(lo_hz), mel(hi_hz), bands + 2))
    f = np.arange(n_fft // 2 + 1) * rate / n_fft
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.maximum(0.0, np.minimum((f - lo) / (mid - lo), (hi - f) / (hi - mid)))


def mel_flux_onset(x, rate: int, around: int, before_ms: float = 10.0, after_ms: float = 150.0,
                   rise_db: float = 6.0, win_ms: float = 10.0):
    """An onset near sample ``around`` found without ``sharp_rise``'s relative threshold: the
    log-mel spectrum (40 bands, 60 Hz-12 kHz, 10 ms Hann windows zero-padded to 2048 points,
    every 1 ms, floored 60 dB under its loudest), its flux (per band the dB rise against the
    window 10 ms earlier, negative rises 0, the mean over the bands), and the first step in
    [around - before, around + after] where the flux reaches ``rise_db`` (the first rise after
    ``around``; one that starts up to ``before_ms`` earlier belongs to it).  The time is the
    later window's centre (an abrupt onset from silence reads -4 ms).  Sample index, or None
    when nothing in the span rises that much."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    win, hop, lag, n_fft = round(rate * win_ms / 1000), rate // 1000, 10, 2048
    a = around - round(rate * before_ms / 1000) - win - lag * hop
    b = min(len(x), around + round(rate * after_ms / 1000) + win)
    seg = _from(x, a, b)
    if len(seg) < win + lag * hop + 2:
        return None
    idx = np.arange(0, len(seg) - win + 1, hop)[:, None] + np.arange(win)[None, :]
    spec = np.abs(np.fft.rfft(seg[idx] * np.hanning(win)[None, :], n=n_fft, axis=1)) ** 2
    mel = 10 * np.log10(spec @ _mel_filters(n_fft, rate, 40, 60.0, 12000.0).T + 1e-12)
    mel = np.maximum(mel, mel.max() - 60.0)
    flux = np.maximum(0.0, mel[lag:] - mel[:-lag]).mean(axis=1)
    times = a + (np.arange(len(flux)) + lag) * hop + win // 2  # the later window's centre
    ok = (times >= around - rate * before_ms / 1000) & (times <= around + rate * after_ms / 1000)
    hit = np.nonzero(ok & (flux >= rise_db))[0]
    return int(times[hit[0]]) if len(hit) else None


# ------------------------------------------------------------------------------------------------
# a whole rendered reading, against its plan (scripts/bench_acoustic.py, tests)


def reading_figures(wav_path, plan: dict, voice) -> dict:
    """Every figure of the voice's acoustic targets for a rendered reading (``karuta render``'s
    file and its ``--plan-out`` JSON).  ``voice`` (default: a ``SynthVoice``) gives each clip's
    design (ku ends, beats, the 余韻's start): an ``audio.synth.SynthVoice`` (only the
    synthesized voice has one).

    Reads the file a segment at a time (a 100-card reading is 1.7 GB as float64)."""
    import soundfile as sf

    from audio.loudness import integrated_lufs, short_lufs, true_peak_db
    from audio.voice import SpeechItem

    rate = int(plan["sample_rate"])
    settings = plan.get("settings", {})
    speed = float(settings.get("speed", 1.0))
    yoin = int(settings.get("yoin_ms", 0))
    segs = plan["segments"]
    f = sf.SoundFile(str(wav_path))

    def read(a, b):
        f.seek(max(0, a))
        return f.read(max(0, b - max(0, a)), dtype="float64", always_2d=True)[:, 0]

    out: dict = {"kami_lufs": [], "hold_vs_shimo_lu": [], "loop": [], "ripple": [], "true_peak": [],
                 "over_099": 0, "ku_ends": 0, "double_endings": 0, "ku_f0_range": [],
                 "ku_onset_sd": [], "onset_intervals": [], "heard_ma_err_ms": [],
                 "decisive_err_ms": [], "decisive_flux_ms": [], "no_rise": [], "openings": [],
                 "onset_openings": [], "ku_pace_s": [], "ku_len_s": [], "breath_s": [], "joka": [],
                 "ku_mora_ms": [], "ku_onsets": [], "ku_last": [], "held": [], "period_ripple": [], "rate": rate}
    last_heard_end = None  # sample (in the file) of the last sound of the jo-ka's last part
    ms = rate // 1000
    prev_speech = None
    for i, s in enumerate(segs):
        kind = s["kind"]
        a, b = s["start_frame"], s["end_frame"]
        if kind == "ma" and prev_speech is not None and i + 1 < len(segs):
            nxt = segs[i + 1]
            tail = read(prev_speech["end_frame"] - rate, prev_speech["end_frame"])
            head = read(nxt["start_frame"], nxt["start_frame"] + rate)
            hb_t, hb_h = heard_bounds(tail, rate), heard_bounds(head, rate)
            if hb_t and hb_h:
                end = prev_speech["end_frame"] - rate + hb_t[1]
                start = nxt["start_frame"] + hb_h[0]
                out["heard_ma_err_ms"].append(((start - end) - (b - a)) / ms)
        if kind not in ("kami", "shimo", "whole"):
            continue
        prev_speech = s
        x = read(a, b)
        if s["poem"] == "joka":  # each part's heard length and the heard gap before it
            hb = heard_bounds(x, rate)
            if hb:
                row = {"part": kind, "start": a + hb[0], "end": a + hb[1]}
                if last_heard_end is not None:
                    row["gap_s"] = (a + hb[0] - last_heard_end) / rate
                last_heard_end = a + hb[1]
                out["joka"].append(row)
        tp = true_peak_db(x)
        out["true_peak"].append(tp)
        out["over_099"] += int(np.sum(np.abs(x) >= 0.99))
        key = str(s["poem"])
        item = SpeechItem(key, kind, speed=speed, hold_ms=yoin if kind == "shimo" else 0)
        timed = voice._time(item) if hasattr(voice, "_time") else None
        des = getattr(timed, "design", None)
        if kind == "kami" and key.isdigit():
            out["kami_lufs"].append(integrated_lufs(x, rate))
        if "decisive_ms" in s:
            d = int(round(s["decisive_ms"] * rate / 1000)) - a
            out["decisive_err_ms"].append((sharp_rise(x, rate, d) - d) / ms)
            rise = mel_flux_onset(x, rate, d)
            if rise is None:
                out["no_rise"].append(key)
            else:
                out["decisive_flux_ms"].append((rise - d) / ms)
        if des is None:
            continue
        g = 240
        if out["joka"] and s["poem"] == "joka" and des.hold:  # the speech before the 余韻
            out["joka"][-1]["speech_end"] = a + des.speech * g
        if kind == "shimo" and des.hold:
            speech = des.speech * g
            body = x[speech:max(speech, len(x) - 400 * ms)]
            if len(body) > rate // 2:
                mid = len(body) // 2
                w = body[max(0, mid - 3 * rate // 4):mid + 3 * rate // 4]
                out["loop"].append(loop_similarity(w, rate))
                out["ripple"].append(ripple_db(body, rate))
                out["hold_vs_shimo_lu"].append(short_lufs(body, rate) - integrated_lufs(x[:speech], rate))
        # ku by ku: the ends, the pitch, the vowel onsets
        morae = des.morae
        prev_end = None
        for start, n in des.kus():
            ku, m = morae[start:n + 1], morae[n]
            vend = (m.vend - (des.hold if n == len(morae) - 1 else 0)) * g
            # the ku as heard: from its first sound to its last (its closure and the breaths
            # around it are silent)
            k_a = (ku[0].onset - ku[0].closure) * g
            hb = heard_bounds(x[k_a:vend + 20 * ms], rate)
            if hb:
                out["ku_len_s"].append((hb[1] - hb[0]) / rate)
                if prev_end is not None:
                    out["breath_s"].append((k_a + hb[0] - prev_end) / rate)
                    if out["joka"] and s["poem"] == "joka" and kind == "kami" and start == des.kus()[1][0]:
                        out["joka"][-1]["breath_s"] = out["breath_s"][-1]
                prev_end = k_a + hb[1]
            out["ku_ends"] += 1
            if dip_and_return(x[max(0, vend - 150 * ms):vend], rate):
                out["double_endings"] += 1
            k0 = ku[0].onset * g
            op = ku_opening(x[k0:vend], rate)
            if op is not None:
                out["openings"].append(op)
                if start == 0:
                    out["onset_openings"].append(op)
                if np.isfinite(op["after_range_st"]):
                    out["ku_f0_range"].append(op["after_range_st"])
            # the rhythm inside the ku (issue 32): every mora's vowel onset as heard, the last
            # mora held to the ku's last sound; the held sound's level, pitch and flutter
            t_on = [vowel_onset(x, rate, mm.beat * g) for mm in ku]
            last_ku = n == len(morae) - 1
            held_on = bool(last_ku and des.hold and len(x) >= des.frames * g - g)  # (the jo-ka's
            # first 下の句 is read without its 余韻)
            if hb and len(ku) >= 2:
                end = k_a + hb[1]
                out["ku_mora_ms"].append([(t2 - t1) / ms for t1, t2 in zip(t_on, t_on[1:])])
                out["ku_onsets"].append((f"{key} {kind}", [(t - t_on[0]) / ms for t in t_on], (end - t_on[0]) / ms))
                out["ku_last"].append({"morae": len(ku), "part_end": last_ku, "held_s": (end - t_on[-1]) / rate,
                                       "share": (end - t_on[-1]) / max(1, end - t_on[0])})
            # as a reader's is measured (scripts/measure_reader.py): to 150 ms before its last
            # sound (a held clip's: its 余韻's)
            hb_all = heard_bounds(x[k_a:], rate) if last_ku else hb
            h_end = k_a + hb_all[1] - 150 * ms if hb_all else vend - 150 * ms
            seg = x[t_on[-1] + 100 * ms:max(t_on[-1] + 100 * ms, h_end)]
            hd = held_drift(seg, rate)
            if hd is not None:
                hd.update(key=key, part=kind, ku=len(out["held"]), part_end=last_ku, hold=held_on)
                out["held"].append(hd)
                out["period_ripple"].append((period_ripple_db(seg, rate, hd.get("f0_hz")), f"{key} {kind} ku {des.kus().index((start, n)) + 1}"
                                             + (" (with its 余韻)" if held_on else "")))
            onsets = [(j, vowel_onset(x, rate, mm.beat * g)) for j, mm in enumerate(ku) if mm.cons]
            iv = [(t2 - t1) / ms / (j2 - j1) for (j1, t1), (j2, t2) in zip(onsets, onsets[1:])
                  if j2 - j1 == 1]
            # against the designed intervals (a reader's rhythm varies them on purpose, issue 32)
            dev = [(t2 - t1) / ms - (ku[j2].beat - ku[j1].beat) * g / ms
                   for (j1, t1), (j2, t2) in zip(onsets, onsets[1:]) if j2 - j1 == 1]
            if len(iv) >= 2:
                out["ku_onset_sd"].append(float(np.std(dev)))
                out["onset_intervals"] += iv
            if len(onsets) >= 3:  # the pace: first to last vowel onset over the morae between
                (j1, t1), (j2, t2) = onsets[0], onsets[-1]
                out["ku_pace_s"].append((t2 - t1) / rate / (j2 - j1))
    f.close()
    return out


#: a human reader's timing, what the reading's timing is measured against, each (low, high):
#: seconds a mora within a ku (a ku's first to last vowel onset over the morae between) and a
#: ku's length within a part (first to last sound), 10-90 % of issue 32's reader (93-155 ku of
#: 31 files, ``scripts/measure_reader.py``; issue 21's jo-ka reader was measured at 0.31-0.36 s
#: a mora as a whole ku's pace); and the jo-ka's parts in order (its 上の句 with the breath after
#: its first ku, the pause before the 下の句, the 下の句, the pause before it is read again, the
#: 下の句 again: issue 21's reader, one jo-ka, 21 s)
READER_TIMING = {"mora_s": (0.13, 0.28), "ku_s": (1.7, 3.2), "joka_kami_s": (6.7, 6.7),
                 "joka_breath_s": (0.2, 0.2), "joka_gap_s": (1.5, 1.5), "joka_shimo_s": (5.2, 5.5),
                 "joka_repeat_gap_s": (0.9, 0.9)}


#: a human reader's rhythm inside the ku (issue 32), measured by ``scripts/measure_reader.py``
#: on one reader's full set (31 files: the jo-ka and poems 1-30; 93 ku within a part, 62 at a
#: part's end): each mora's length (onset to the next) by its position from the ku's start,
#: ms (median); every such mora's (p10, median, p90); the last mora's share of its ku within
#: a part by the ku's morae (median); how long the last mora is held within a part and at a
#: part's end, s (p10, median, p90); a held sound's last third against its first third,
#: level dB and pitch st (p10, median, p90)
READER_RHYTHM = {"mora_ms": (165, 145, 170, 175, 180, 185, 185), "inner_ms": (80, 165, 345),
                 "last_share": {5: 0.60, 7: 0.49}, "ku_end_s": (0.90, 1.10, 1.56),
                 "part_end_s": (3.56, 4.01, 4.40), "held_level_db": (-4.5, -1.8, 0.2),
                 "held_pitch_st": (-0.15, 0.04, 0.20)}


def rhythm_lines(fig: dict) -> list[str]:
    """The rhythm inside the ku (``reading_figures``' ``ku_mora_ms``, ``ku_last``, ``held``,
    ``period_ripple``) beside the human reader's (``READER_RHYTHM``)."""
    r = READER_RHYTHM
    lines = []

    def q(v, f="{:.0f}"):
        if not len(v):
            return "-"
        m, lo, hi = np.percentile(v, [50, 10, 90])
        return f"{f.format(m)} [{f.format(lo)}, {f.format(hi)}]"

    rows = fig.get("ku_mora_ms", [])
    by_pos = {}
    for d in rows:
        for j, v in enumerate(d):
            by_pos.setdefault(j, []).append(v)
    inner = [v for d in rows for v in d]
    lines.append("mora by position in the ku (vowel onset to the next, ms, median; the reader's beside): "
                 + ", ".join(f"{j + 1}: {float(np.median(v)):.0f} ({r['mora_ms'][min(j, len(r['mora_ms']) - 1)]})"
                             for j, v in sorted(by_pos.items()) if len(v) >= 3)
                 + f"; every mora before the last {q(inner)} ms (the reader: {r['inner_ms'][1]} "
                 f"[{r['inner_ms'][0]}, {r['inner_ms'][2]}]; 10 %, 90 %)")
    kl = fig.get("ku_last", [])
    within = [k for k in kl if not k["part_end"]]
    ends = [k for k in kl if k["part_end"]]
    sh = {n: [100 * k["share"] for k in within if k["morae"] == n] for n in (5, 7)}
    lines.append(f"last mora held: within a part {q([k['held_s'] for k in within], '{:.2f}')} s (the reader "
                 f"{r['ku_end_s'][1]:.2f} [{r['ku_end_s'][0]:.2f}, {r['ku_end_s'][2]:.2f}]); its share of a 5-mora ku "
                 f"{q(sh[5])} % (the reader {100 * r['last_share'][5]:.0f} %), of a 7-mora ku {q(sh[7])} % (the reader "
                 f"{100 * r['last_share'][7]:.0f} %); at a part's end (before a 余韻) "
                 f"{q([k['held_s'] for k in ends], '{:.2f}')} s (the reader {r['part_end_s'][0]:.1f}-{r['part_end_s'][2]:.1f} s; "
                 f"issue 21's 1.1-2.4 s)")
    held = fig.get("held", [])
    lv = [h["level_db"] for h in held]
    ps = [h["pitch_st"] for h in held if h["pitch_st"] is not None]
    worst = min(held, key=lambda h: h["level_db"], default=None)
    lines.append(f"held sounds (100 ms in to 150 ms before the end; the 余韻 included), last third - first third: level "
                 f"{q(lv, '{:+.1f}')} dB, lowest {worst['level_db'] if worst else float('nan'):+.1f} dB"
                 + (f" ({worst['key']} {worst['part']})" if worst else "")
                 + f"; pitch {q(ps, '{:+.2f}')} st over {len(held)}   (target: no fall beyond 3 dB; the reader "
                 f"{r['held_level_db'][1]:+.1f} [{r['held_level_db'][0]:+.1f}, {r['held_level_db'][2]:+.1f}] dB, "
                 f"{r['held_pitch_st'][1]:+.2f} [{r['held_pitch_st'][0]:+.2f}, {r['held_pitch_st'][2]:+.2f}] st)")
    pr = [(v, w) for v, w in fig.get("period_ripple", []) if np.isfinite(v)]
    if pr:
        v, w = max(pr)
        lines.append(f"held sounds' per-period level, 20-60 Hz: median {float(np.median([p for p, _ in pr])):.2f} dB, "
                     f"worst {v:.2f} dB ({w}) over {len(pr)}   (target: <= 1.5 dB on every held sound)")
    return lines


def joka_rows(fig: dict) -> list[tuple[str, float, tuple[float, float]]]:
    """The jo-ka's parts and pauses as heard, in order: (what, seconds, the reader's
    (low, high)).  A held 下の句 counts to its 余韻's start."""
    r = READER_TIMING
    out = []
    shimo = 0
    for row in fig.get("joka", []):
        if "gap_s" in row:
            out.append(("pause before the 下の句" if row["part"] == "shimo" and shimo == 0
                        else "pause before the 下の句 again", row["gap_s"],
                        r["joka_gap_s"] if shimo == 0 else r["joka_repeat_gap_s"]))
        length = (row.get("speech_end", row["end"]) - row["start"]) / fig["rate"]
        if row["part"] == "kami":
            out.append(("上の句", length, r["joka_kami_s"]))
            if "breath_s" in row:
                out.append(("  breath after its first ku", row["breath_s"], r["joka_breath_s"]))
        else:
            out.append(("下の句" + (" again (to its 余韻)" if shimo else ""), length, r["joka_shimo_s"]))
            shimo += 1
    return out


def summary_lines(fig: dict) -> list[str]:
    """The figures of ``reading_figures`` as report lines, each with its target."""
    def med(v):
        return float(np.median(v)) if len(v) else float("nan")

    def pct(v, q):
        return float(np.percentile(v, q)) if len(v) else float("nan")

    lines = []
    lo, rp, hv = fig["loop"], fig["ripple"], fig["hold_vs_shimo_lu"]
    lines.append(f"余韻 loop similarity (best 15-60 ms lag): median {med(lo):.3f}, max {max(lo, default=float('nan')):.3f} "
                 f"over {len(lo)} holds   (target: median < 0.98)")
    lines.append(f"余韻 ripple 20-60 Hz: median {med(rp):.2f} dB, max {max(rp, default=float('nan')):.2f} dB   "
                 f"(target: <= 1.5 dB on every hold)")
    out = sum(1 for v in hv if abs(v) > 4)
    lines.append(f"余韻 loudness - its 下の句: {min(hv, default=float('nan')):+.1f} .. {max(hv, default=float('nan')):+.1f} LU, "
                 f"{out} of {len(hv)} outside ±4 LU   (target: all within ±4 LU)")
    kl = [v for v in fig["kami_lufs"] if np.isfinite(v)]
    lines.append(f"上の句 loudness: sd {float(np.std(kl)):.2f} LU over {len(kl)} (mean {float(np.mean(kl)):.1f} LUFS)   "
                 f"(target: sd <= 1.5 LU)")
    lines.append(f"true peak: max {max(fig['true_peak'], default=float('nan')):.2f} dBTP; samples >= 0.99 FS: "
                 f"{fig['over_099']}   (target: <= -1 dBTP, none)")
    de, ke = fig["double_endings"], fig["ku_ends"]
    lines.append(f"double endings: {de} of {ke} ku ends ({100 * de / max(1, ke):.1f} %)   (target: <= 5 %)")
    oo, ops = fig["onset_openings"], fig["openings"]

    def col(rows, k):
        return [r[k] for r in rows if r[k] is not None and np.isfinite(r[k])]

    low = sum(1 for r in oo if r["depth_st"] <= OPENS_LOW_ST)
    low_all = sum(1 for r in ops if r["depth_st"] <= OPENS_LOW_ST)
    lines.append(f"ku openings (Harvest, 10 ms; first 150 ms of voice - the tone 0.45-1.2 s on): 上の句/下の句 onsets "
                 f"median {med(col(oo, 'depth_st')):+.1f} st, {low} of {len(oo)} open low (<= {OPENS_LOW_ST:.0f} st); "
                 f"every ku median {med(col(ops, 'depth_st')):+.1f} st, {low_all} of {len(ops)}   "
                 f"(target: median -10 ± 2 st, >= 90 % of onsets low; the human reader: -9.5 st, 7 of 7)")
    lines.append(f"ku openings: low for median {med(col(ops, 'low_ms')):.0f} ms [{pct(col(ops, 'low_ms'), 10):.0f}, "
                 f"{pct(col(ops, 'low_ms'), 90):.0f}], glide up (1 st off each end) median {med(col(ops, 'glide_ms')):.0f} ms "
                 f"[{pct(col(ops, 'glide_ms'), 10):.0f}, {pct(col(ops, 'glide_ms'), 90):.0f}] (10 %, 90 %)   "
                 f"(the human reader: low ~150-250 ms, glide ~150 ms)")
    fr, on = fig["ku_f0_range"], col(ops, "on_tone")
    lines.append(f"pitch after the glide: per-ku range (5-95 %) median {med(fr):.2f} st, 90 % {pct(fr, 90):.2f} st over "
                 f"{len(fr)} ku; voiced frames within 2 st of the reciting tone: median {100 * med(on):.1f} %, "
                 f"10 % of ku under {100 * pct(on, 10):.1f} %   (target: range median <= 4 st; one tone: median >= 90 %)")
    r = READER_TIMING
    pace, kl, br = fig["ku_pace_s"], fig["ku_len_s"], fig["breath_s"]
    lines.append(f"ku pace (first to last vowel onset / morae between): median {med(pace):.3f} s a mora, "
                 f"range {min(pace, default=float('nan')):.3f}..{max(pace, default=float('nan')):.3f} over {len(pace)} ku   "
                 f"(the human reader: {r['mora_s'][0]:.2f}-{r['mora_s'][1]:.2f} s a mora)")
    lines.append(f"ku length (first to last sound): median {med(kl):.2f} s, range {min(kl, default=float('nan')):.2f}.."
                 f"{max(kl, default=float('nan')):.2f} s over {len(kl)} ku; breaths between ku median {med(br):.2f} s "
                 f"[{min(br, default=float('nan')):.2f}, {max(br, default=float('nan')):.2f}]   "
                 f"(the human reader: ku {r['ku_s'][0]:.1f}-{r['ku_s'][1]:.1f} s, a {r['joka_breath_s'][0]:.1f} s breath)")
    jr = joka_rows(fig)
    if jr:
        lines.append("jo-ka as heard (first to last sound; the reader's figure beside each): " + "; ".join(
            f"{what.strip()} {v:.2f} s ({lo:.1f}" + (f"-{hi:.1f}" if hi != lo else "") + ")" for what, v, (lo, hi) in jr))
    sd = fig["ku_onset_sd"]
    lines.append(f"vowel-onset intervals within a ku - the designed ones: sd median {med(sd):.1f} ms, 90 % {pct(sd, 90):.1f} ms "
                 f"({len(fig['onset_intervals'])} intervals, mean {float(np.mean(fig['onset_intervals'] or [np.nan])):.1f} ms)   "
                 f"(target: sd <= 15 ms)")
    hm = fig["heard_ma_err_ms"]
    bad = sum(1 for v in hm if abs(v) > 15)
    lines.append(f"heard 間 - set 間: {min(hm, default=float('nan')):+.1f} .. {max(hm, default=float('nan')):+.1f} ms "
                 f"(median {med(hm):+.1f}), {bad} of {len(hm)} outside ±15 ms   (target: all within ±15 ms)")
    de = fig["decisive_err_ms"]
    ab = np.abs(de)
    lines.append(f"decisive onset, acoustic - plan: median {med(de):+.1f} ms, |err| median {med(ab):.1f} ms, "
                 f"90 % {pct(ab, 90):.1f} ms over {len(de)} cards   (target: median <= 10, 90 % <= 25 ms)")
    lines += rhythm_lines(fig)
    fx, nr = fig["decisive_flux_ms"], fig["no_rise"]
    miss = np.concatenate([np.abs(fx), np.full(len(nr), np.inf)])
    lines.append(f"decisive onset, log-mel flux rise >= 6 dB - plan: median {med(fx):+.1f} ms, 90 % {pct(fx, 90):+.1f} ms, "
                 f"range {min(fx, default=float('nan')):+.0f}..{max(fx, default=float('nan')):+.0f} ms; |err| 90 % "
                 f"{float(np.percentile(miss, 90, method='higher')) if len(miss) else float('nan'):.1f} ms over {len(miss)} cards; no rise: {len(nr)}"
                 f"{' (' + ', '.join(nr) + ')' if nr else ''}   (target: |err| 90 % <= 25 ms, a card with no rise a miss)")
    return lines


