"""audio.align: mora onsets of a recording, on packs where the truth is known.

The "recordings" are re-timed readings: every mora lengthened or shortened by its own factor
(0.7-1.4x), at another level, with noise.  Their true onsets are known, so the estimated
onsets can be checked.  Two references: a small vowel-formant voice defined here (always
available) and the synthesized voice.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from audio.align import LOW_CONFIDENCE, Timeline, align, dtw, features, proportional
from audio.stretch import stretch
from audio.voice import Layout, Mora, SpeechItem, reading_for

RATE = 48000
_VOWEL_FORMANTS = {"a": (800, 1200), "i": (300, 2300), "u": (350, 1300), "e": (500, 1900), "o": (500, 850), "n": (250, 2600)}
_ROMA = dict(zip("あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽ",
                 "aiueoaiueoaiueoaiueoaiueoaiueoaiueoauoaiueoaonaiueoaiueoaiueoaiueoaiueo"))


def _mora_sound(kana: str, n: int, seed: int) -> np.ndarray:
    """A vowel (two formants over a 120 Hz pulse) after a short consonant-like noise burst."""
    rng = np.random.default_rng(sum(map(ord, kana)) + seed)
    v = _ROMA.get(kana[0], "a")
    f1, f2 = _VOWEL_FORMANTS[v]
    t = np.arange(n) / RATE
    f0 = 120 + 15 * ((sum(map(ord, kana)) % 7) - 3)
    sig = np.zeros(n)
    for h in range(1, 30):
        f = h * f0
        g = np.exp(-((f - f1) / 150) ** 2) + 0.6 * np.exp(-((f - f2) / 200) ** 2) + 0.02
        sig += g * np.sin(2 * np.pi * f * t)
    sig /= np.abs(sig).max() + 1e-9
    cons = min(n // 4, int(0.04 * RATE))
    c = ord(kana[0]) % 5
    if kana[0] not in "あいうえお":
        band = np.fft.irfft(np.fft.rfft(rng.normal(0, 1, cons)) * (np.arange(cons // 2 + 1) > (c + 1) * cons // 24), cons)
        sig[:cons] = 0.6 * band / (np.abs(band).max() + 1e-9)
    env = np.minimum(1, np.minimum(np.arange(n), np.arange(n)[::-1]) / (0.008 * RATE))
    return (0.5 * sig * env).astype(np.float32)


class FormantVoice:
    """A reference voice whose morae sound different from each other (a crude vowel voice)."""

    name = "formant"
    sample_rate = RATE

    def __init__(self, mora_ms=280, seed=0):
        self.mora_ms, self.seed = mora_ms, seed

    def _durations(self, item):
        from poems.kimariji import sound_morae

        out = []
        n = int(self.mora_ms / item.speed * RATE / 1000)
        for ku in reading_for(item):
            m = sound_morae([ku])
            out += [(k, n * (2 if i == len(m) - 1 else 1)) for i, k in enumerate(m)]
        return out

    def layout(self, item):
        pos, morae = 0, []
        for k, n in self._durations(item):
            morae.append(Mora(k, pos, pos + n))
            pos += n
        return Layout(pos, RATE, tuple(morae))

    def samples(self, item):
        return np.concatenate([_mora_sound(k, n, self.seed) for k, n in self._durations(item)])


def retime(x, layout, rng, lo=0.7, hi=1.4):
    """Each mora stretched by its own factor: (new clip, true onsets)."""
    parts, onsets, pos = [], [], 0
    for m in layout.morae:
        seg = stretch(x[m.start:m.end], RATE, 1 / rng.uniform(lo, hi))
        onsets.append(pos)
        pos += len(seg)
        parts.append(seg)
    return np.concatenate(parts), onsets


def onset_errors_ms(t: Timeline, truth):
    return np.abs(np.array([m.start for m in t.morae]) - np.array(truth)) / RATE * 1000


@pytest.mark.parametrize("key", ["1", "17", "44", "87", "joka"])
def test_formant_reference_onsets(key):
    v = FormantVoice()
    item = SpeechItem(key, "kami")
    lay, ref = v.layout(item), v.samples(item)
    rng = np.random.default_rng(int(key) if key.isdigit() else 0)
    rec, truth = retime(ref, lay, rng)
    rec = 0.3 * rec + rng.normal(0, 0.002, len(rec)).astype(np.float32)
    t = align(rec, RATE, ref, lay)
    err = onset_errors_ms(t, truth)
    # this crude voice makes と/の (same vowel, similar burst) nearly alike: most onsets are
    # within 40 ms, a look-alike neighbour may be off by up to ~0.1 s
    assert np.median(err) < 15 and np.percentile(err, 85) < 40 and err.max() < 120, err.round()
    assert t.confidence >= LOW_CONFIDENCE and t.method == "dtw"
    assert [m.kana for m in t.morae] == [m.kana for m in lay.morae]
    assert t.morae[-1].end == len(rec)
    assert all(a.end == b.start and a.start < a.end for a, b in zip(t.morae, t.morae[1:]))


def test_low_confidence_for_wrong_text_and_noise():
    v = FormantVoice()
    item = SpeechItem("1", "kami")
    lay, ref = v.layout(item), v.samples(item)
    other = v.samples(SpeechItem("72", "kami"))
    noise = np.random.default_rng(1).normal(0, 0.1, len(ref)).astype(np.float32)
    assert align(other, RATE, ref, lay).confidence < LOW_CONFIDENCE
    assert align(noise, RATE, ref, lay).confidence < LOW_CONFIDENCE


def test_recording_at_another_rate():
    from audio.decode import resample

    v = FormantVoice()
    item = SpeechItem("9", "kami")
    lay, ref = v.layout(item), v.samples(item)
    rec, truth = retime(ref, lay, np.random.default_rng(9))
    rec22 = resample(rec, RATE, 22050)
    t = align(rec22, 22050, ref, lay)
    err = np.abs(np.array([m.start for m in t.morae]) / 22050 - np.array(truth) / RATE) * 1000
    assert err.max() < 40


@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="synthesized voice needs pyworld")
@pytest.mark.parametrize("key,wrong_key", [("1", "15"), ("15", "50"), ("50", "77"), ("77", "1")])
def test_synth_reference_onsets(key, wrong_key, synth_cache):
    try:
        from audio.synth import SynthVoice
    except ImportError:
        pytest.skip("audio.synth not available")
    # the clips from the worker's shared cache (a clip is the same wherever it was made; the
    # cache itself: test_synth.py); the wrong text is another case's poem, made once for both
    v = SynthVoice(cache_dir=synth_cache / "synth", workers=0)
    item = SpeechItem(key, "kami")
    lay, ref = v.layout(item), v.samples(item)
    rng = np.random.default_rng(int(key))
    rec, truth = retime(ref, lay, rng)
    rec = 0.5 * rec + rng.normal(0, 0.003, len(rec)).astype(np.float32)
    t = align(rec, RATE, ref, lay)
    err = onset_errors_ms(t, truth)
    assert np.median(err) < 15 and err.max() < 50, err.round()
    assert t.confidence >= LOW_CONFIDENCE
    wrong = v.samples(SpeechItem(wrong_key, "kami"))
    assert align(wrong, RATE, ref, lay).confidence < LOW_CONFIDENCE


def test_proportional_spreads_the_layout():
    lay = Layout(1000, RATE, (Mora("あ", 0, 250), Mora("き", 250, 500), Mora("の", 500, 1000)))
    t = proportional(2000, lay)
    assert [(m.start, m.end) for m in t.morae] == [(0, 500), (500, 1000), (1000, 2000)]
    assert t.confidence == 0.0 and t.method == "proportional"
    assert Timeline.from_json(t.to_json()) == t


def test_dtw_recovers_a_known_warp():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(60, 5))
    idx = np.sort(np.concatenate([np.arange(60), rng.choice(60, 30)]))
    B = A[idx] + rng.normal(0, 0.01, (len(idx), 5))
    pa, pb, _ = dtw(A, B)
    assert pa[0] == 0 and pb[0] == 0 and pa[-1] == 59 and pb[-1] == len(idx) - 1
    assert np.all(np.diff(pa) >= 0) and np.all(np.diff(pb) >= 0)
    assert np.all(idx[pb] == pa)


def test_features_shape():
    f = features(np.zeros(RATE, np.float32), RATE)
    assert f.shape[1] == 13 and 95 <= f.shape[0] <= 100


@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="synthesized voice needs pyworld")
def test_another_voice_aligns_and_a_wrong_text_does_not(synth_cache):
    """Issue 21: HTS at a speaking pace as another speaker (vocal tract 12 % longer, five
    half-tones lower, uniform ku pauses) against the built-in chant: sure of its own text,
    unsure of another's; the morae land near the known onsets."""
    from testbed.foreign_pack import HtsReader

    from audio.decode import resample, trim_silence
    from audio.synth import SynthVoice
    from audio.align import ku_sizes

    v = SynthVoice(cache_dir=synth_cache / "synth", workers=0)
    r = HtsReader(seed=3).read("12")
    x = resample(r.x[: r.kami_end], r.rate, RATE)
    s, e = trim_silence(x, RATE)
    kami = x[s:e]
    truth = np.array(r.kami_onsets) * RATE / r.rate - s
    for key in ("12", "40"):
        item = SpeechItem(key, "kami")
        lay = v.layout(item)
        t = align(kami, RATE, v.samples(item), lay, ku_sizes=ku_sizes(item, lay))
        if key == "12":
            assert t.confidence >= LOW_CONFIDENCE
            err = onset_errors_ms(t, truth)
            assert np.median(err) < 30 and np.percentile(err, 90) < 80, err.round()
        else:
            assert t.confidence < LOW_CONFIDENCE
    v.close()


def test_a_long_stop_closure_is_not_taken_for_a_ku_end():
    """Issue 32: a human reader says a ku's first morae quickly and may hold a stop's closure
    140 ms (つ…き); with one real pause in the 上の句, that closure was taken for the end of the
    first ku, which squeezed the whole ku into the clip's first 170 ms (き 170 ms early).
    No ku may be that short: the pauses that end ku are not chosen then."""
    from audio.align import _ku_pauses

    db = np.full(700, -20.0)  # 10 ms frames of a 上の句: voice
    db[:5] = db[695:] = -80.0
    db[17:31] = -80.0  # the closure after a quick first mora
    db[420:436] = -80.0  # the one pause the reader takes, after the second ku
    assert _ku_pauses(db, [5, 7, 5]) is None
    db[230:250] = -80.0  # a pause after the first ku too: both pauses end ku
    assert _ku_pauses(db, [5, 7, 5]) == [(230, 250), (420, 436)]


@pytest.mark.skipif(importlib.util.find_spec("pyworld") is None, reason="synthesized voice needs pyworld")
@pytest.mark.parametrize("key,wrong_keys", [("5", ("51", "4", "6")), ("86", ("5", "85", "87"))])
def test_a_readers_rhythm_puts_the_decisive_onset_on_the_burst(key, wrong_keys, synth_cache):
    """Issue 32: another voice (HTS as another speaker) in a human reader's rhythm: each ku's
    early morae 150 ms, its last mora held for half the ku, no pause inside the 上の句.  The
    decisive mora (a stop: おく, なげけ) is put where its burst is, within 6 ms (the DTW alone
    lands 10 ms late, after the burst, where the vowel's spectrum starts); the reading's own
    text fits it better than three other poems' (a lower cost ratio: what names swapped files).
    (That every other text is also below the confidence threshold does not hold on such
    readings: 5 read against 6's text was 0.80 with the even-paced built-in voice, against 51's
    0.91 with the reader-paced one; docs/not-done.md.)"""
    from testbed.foreign_pack import HtsReader, in_readers_rhythm

    from audio.align import ku_sizes
    from audio.decode import resample
    from audio.synth import SynthVoice
    from poems.kimariji import kimariji_length

    v = SynthVoice(cache_dir=synth_cache / "synth", workers=0)
    r = HtsReader(seed=3).read(key)
    y, designed = in_readers_rhythm(r, quick_s=0.15, hold_share=0.5)
    x = resample(y, r.rate, RATE)
    truth = np.array(designed) * RATE / r.rate
    d = kimariji_length(range(1, 101))[int(key)] - 1
    item = SpeechItem(key, "kami")
    lay = v.layout(item)
    t = align(x, RATE, v.samples(item), lay, ku_sizes=ku_sizes(item, lay))
    assert t.confidence >= LOW_CONFIDENCE
    err_ms = (t.morae[d].start - truth[d]) / RATE * 1000
    assert abs(err_ms) <= 6, err_ms
    from audio.align import align_detail

    def ratio(k):
        it = SpeechItem(k, "kami")
        lay_k = v.layout(it)
        return align_detail(x, RATE, v.samples(it), lay_k, ku_sizes=ku_sizes(it, lay_k))[1]["ratio"]

    own = ratio(key)
    others = {k: ratio(k) for k in wrong_keys}
    assert all(own < r for r in others.values()), (own, others)
    v.close()


def _spoken(parts, rate=RATE, seed=0):
    """Samples from (kind, seconds) parts: "v" a vowel (120 Hz pulse, energy under 2 kHz),
    "dip" a vowel 25 dB down (a break between like vowels), "x" a closure (near silence),
    "b" a stop's burst (15 ms of white noise), "f" a voiceless fricative's noise."""
    rng = np.random.default_rng(seed)
    out = []
    for kind, sec in parts:
        n = int(sec * rate)
        t = np.arange(n) / rate
        vowel = sum(np.sin(2 * np.pi * 120 * h * t) / h for h in range(1, 16))
        if kind == "v":
            out.append(0.3 * vowel / 3)
        elif kind == "dip":
            out.append(0.3 * vowel / 3 * 10 ** (-25 / 20))
        elif kind == "x":
            out.append(1e-4 * rng.standard_normal(n))
        else:  # "b", "f"
            out.append(0.2 * rng.standard_normal(n))
    return np.concatenate(out)


def test_a_stop_the_path_squeezed_after_a_like_vowel_goes_to_its_burst():
    """Issue 32: a human reader's つく (poem 13) and おおこ (44): two like vowels in a row,
    and the DTW put the whole of both on one mora: く squeezed into 18 ms just before ば,
    145 ms after its burst (つ got it all), or こ put on the second お's vowel, 160 ms early
    (と then squeezed against の).  Each confidently wrong.  A stop the path squeezed,
    after a mora it gave too much, takes the burst inside that mora; a stop whose next
    stop was squeezed takes the steepest rise up to that one's onset."""
    from audio.align import _snapped

    ms = RATE // 1000
    # つ (noise, closure), く's burst at 145 ms, its vowel, ば's short closure at 290 ms
    x = _spoken([("f", 0.08), ("x", 0.065), ("b", 0.015), ("v", 0.13), ("x", 0.02), ("v", 0.3)])
    got = _snapped(x, RATE, ["つ", "く", "ば", "ね"], [0, 280 * ms, 300 * ms, 450 * ms])
    assert abs(got[1] - 145 * ms) <= 5 * ms, got[1] / ms
    # お (400 ms), a break, お, こ's closure and burst at 580 ms, と's at 720 ms, の
    x = _spoken([("v", 0.4), ("dip", 0.01), ("v", 0.14), ("x", 0.03), ("b", 0.015), ("v", 0.105),
                 ("x", 0.02), ("b", 0.015), ("v", 0.2)])
    got = _snapped(x, RATE, ["お", "お", "こ", "と", "の"],
                   [0, 400 * ms, 410 * ms, 570 * ms, 580 * ms])
    assert abs(got[2] - 580 * ms) <= 5 * ms, got[2] / ms


def test_a_text_that_fits_clearly_better_than_its_neighbours_is_confident():
    """Issue 32: a chanting human's own text can cost nearly as much as its morae shuffled
    (low on the cost ratio alone) and still fit clearly better than the neighbouring poems':
    confident then, as far as its pace allows; a neighbour that fits as well leaves it at 0,
    however confident the cost ratio alone was (the text may be wrong: two files swapped).
    Fits ("fit": DTW cost plus the share of odd morae) measured on a human reader's set."""
    from audio.align import COMPETITOR_SURE, with_competitors

    # 26's 上の句: cost ratio confidence 0; own fit 1.934, neighbours 3.05 / 2.75 (pace 1.0)
    assert with_competitors(0.0, 1.0, 1.934, {"25": 3.05, "27": 2.75}) >= LOW_CONFIDENCE
    # 34's: own 2.226 (pace 0.81), neighbours 3.088 / 2.67
    assert with_competitors(0.0, 0.81, 2.226, {"33": 3.088, "35": 2.67}) >= LOW_CONFIDENCE
    # 18's 上の句 read against poem 17's text: 0.60 on the cost ratio alone, but poem 18 (its
    # neighbour) fits it far better: 0
    assert with_competitors(0.6, 0.62, 2.19, {"16": 2.4, "18": 1.547}) == 0.0
    # the same margin, morae squeezed (pace 0.44): still low
    assert with_competitors(0.0, 0.44, 2.2, {"8": 2.2 + COMPETITOR_SURE}) < LOW_CONFIDENCE
    # a margin under half COMPETITOR_SURE does not lift it out of low; none tried: as it was
    assert with_competitors(0.2, 1.0, 2.0, {"22": 2.0 + COMPETITOR_SURE * 0.4}) < LOW_CONFIDENCE
    assert with_competitors(0.2, 1.0, 2.0, {}) == 0.2
