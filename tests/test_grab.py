"""The grab timer's pure core: reaction times, the drill plan, log records, calibration maths."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from audio.voice import Layout, ToneVoice
from poems.kimariji import kimariji
from reader.drills.calibrate import CalibrationError, analyze
from reader.drills.grab import (ANTICIPATION_MS, LOG_FIELDS, card_at, drill_plan, log_record, reaction,
                         summarize, timeline_of)
from audio.plan import Segment

RATE = 48000
VOICE = ToneVoice(RATE, mora_ms=40)


def kami(start, decisive, end=None, poem=7):
    return Segment("kami", poem, start, end or start + 96000, kimariji="みかき",
                   kimariji_sound="みかき", decisive=decisive)


frames = st.integers(0, 10**8)
calib = st.floats(-200, 200, allow_nan=False)


@given(start=frames, after=st.integers(0, 10**6), tap=st.floats(0, 2e8, allow_nan=False), c=calib)
def test_reaction_is_tap_minus_onset_on_the_plan_timeline(start, after, tap, c):
    seg = kami(start, start + after)
    g = reaction(tap, seg, c, sample_rate=RATE)
    tap_ms = tap * 1000 / RATE - c
    assert g.tap_ms == pytest.approx(tap_ms, abs=1e-3)
    assert g.reaction_ms == pytest.approx(tap_ms - (start + after) * 1000 / RATE, abs=2e-3)
    assert g.from_kami_ms == pytest.approx(tap_ms - start * 1000 / RATE, abs=2e-3)
    # the two measures differ by exactly the onset's place in the 上の句
    assert g.from_kami_ms - g.reaction_ms == pytest.approx(after * 1000 / RATE, abs=3e-3)
    assert g.anticipation == (g.reaction_ms < ANTICIPATION_MS) or \
        abs(g.reaction_ms - ANTICIPATION_MS) < 2e-3
    assert not g.early or g.anticipation
    assert g.timeline == "exact" and g.poem == 7 and g.kimariji == "みかき"


@given(start=frames, after=st.integers(0, 10**6), r_ms=st.floats(-3000, 3000, allow_nan=False),
       c=calib)
def test_a_tap_at_onset_plus_r_plus_calibration_reads_r(start, after, r_ms, c):
    seg = kami(start, start + after)
    tap = (start + after) + (r_ms + c) * RATE / 1000
    assume(tap >= 0)
    g = reaction(tap, seg, c, sample_rate=RATE)
    assert g.reaction_ms == pytest.approx(r_ms, abs=2e-3)
    assert g.early == (g.reaction_ms < 0)


@given(tap=st.floats(0, 1e7, allow_nan=False), c1=calib, c2=calib)
def test_more_calibration_means_an_earlier_tap(tap, c1, c2):
    seg = kami(1000, 50000)
    a, b = reaction(tap, seg, c1), reaction(tap, seg, c2)
    assert (a.reaction_ms - b.reaction_ms) == pytest.approx(c2 - c1, abs=2e-3)


def test_anticipation_and_early_boundaries():
    seg = kami(0, 48000)
    assert reaction(48000 + 4799, seg).anticipation          # 99.98 ms
    assert not reaction(48000 + 4800, seg).anticipation      # 100 ms: a reaction
    assert not reaction(48000, seg).early and reaction(48000, seg).anticipation
    assert reaction(47999, seg).early


def test_without_a_mora_timeline_the_kami_start_is_used_and_flagged():
    seg = kami(4800, None)
    g = reaction(4800 + 48000, seg)
    assert g.timeline == "kami-start" and g.reaction_ms == g.from_kami_ms == 1000.0
    g = reaction(4800 + 48000, kami(4800, 20000), timeline="kami-start")
    assert g.timeline == "kami-start" and g.reaction_ms == 1000.0
    with pytest.raises(ValueError):
        reaction(0, seg, timeline="guess")


class EstimatedVoice(ToneVoice):
    """A recording-like voice: same layout, but its onsets are estimates."""

    def layout(self, item):
        lay = super().layout(item)
        return Layout(lay.frames, lay.sample_rate, lay.morae, exact=False)


class NoMoraeVoice(ToneVoice):
    def layout(self, item):
        lay = super().layout(item)
        return Layout(lay.frames, lay.sample_rate, ())


def test_timeline_quality_follows_the_voice():
    p = drill_plan(VOICE, 1, poems=[1, 2, 3])
    k = next(s for s in p.segments if s.kind == "kami")
    assert timeline_of(VOICE, k) == "exact"
    assert timeline_of(EstimatedVoice(RATE, mora_ms=40), k) == "estimated"
    q = drill_plan(NoMoraeVoice(RATE, mora_ms=40), 1, poems=[1, 2, 3])
    k = next(s for s in q.segments if s.kind == "kami")
    assert k.decisive is None and timeline_of(NoMoraeVoice(RATE, mora_ms=40), k) == "kami-start"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 12), kara=st.integers(0, 3))
def test_drill_plan_tiles_and_kimariji_are_dynamic(seed, n, kara):
    sel = list(range(1, 1 + n * 3, 3))
    p = drill_plan(VOICE, seed, poems=sel, karafuda=kara, ma_ms=300, take_ms=500)
    assert p.rules == "speed" and len(p.order) == n + kara
    assert set(p.universe) == set(sel) | set(p.karafuda)
    pos = 0
    for s in p.segments:
        assert s.start == pos
        pos = s.end
    read = []
    for no in p.order:
        (seg,) = p.find("kami", no)
        (take,) = p.find("take", no)
        assert take.wait and take.start == seg.end
        k = kimariji(p.universe, read)[no]
        assert seg.kimariji == k.card and seg.kimariji_sound == k.sound
        lay = VOICE.layout(seg.speech)
        assert seg.decisive == seg.start + lay.morae[k.length - 1].start
        assert seg.start <= seg.decisive < seg.end
        read.append(no)
    # the plan is JSON-able (--plan-out) and the same seed gives the same drill
    json.loads(p.to_json())
    assert drill_plan(VOICE, seed, poems=sel, karafuda=kara, ma_ms=300, take_ms=500) == p


def test_a_tap_belongs_to_the_card_being_read_or_waited_on():
    p = drill_plan(VOICE, 5, poems=[1, 2, 3], ma_ms=300, take_ms=500)
    first, second = p.order[0], p.order[1]
    k1, k2 = p.find("kami", first)[0], p.find("kami", second)[0]
    assert card_at(p, 0).poem == first                    # the lead pause before card 1
    assert card_at(p, k1.start + 10).poem == first
    assert card_at(p, k1.end).poem == first               # the take after it
    assert card_at(p, k1.end + 48000 * 0.4).poem == first
    assert card_at(p, k2.start - 1).poem == second        # the 間 before card 2
    assert card_at(p, p.frames + 10**6).poem == p.order[-1]


def test_log_record_has_the_stable_fields_in_order():
    g = reaction(48000 + 24000, kami(24000, 48000), 5.0)
    rec = log_record(g, correct=True, answer=7, card=1, ts="2026-01-01T00:00:00+00:00")
    assert tuple(rec) == LOG_FIELDS
    assert rec["reaction_ms"] == 495.0 and rec["from_kami_ms"] == 995.0
    assert rec["tap_ms"] == 1495.0 and rec["kimariji_onset_ms"] == 1000.0
    assert rec["kami_start_ms"] == 500.0 and rec["correct"] and not rec["anticipation"]
    assert json.loads(json.dumps(rec, ensure_ascii=False)) == rec


def test_summary_uses_correct_reactions_only():
    def rec(r, correct=True, fault=False):
        g = reaction(48000 + r * 48, kami(0, 48000))
        return log_record(g, correct=correct, fault=fault)

    s = summarize([rec(300), rec(500), rec(50), rec(200, False, True)], cards=6, missed=2)
    assert (s.taps, s.correct, s.faults, s.missed, s.anticipations) == (4, 3, 1, 2, 1)
    assert s.median_reaction_ms == 400 and s.best_reaction_ms == 300
    assert "400 ms" in s.describe()


def test_an_untimed_tap_counts_as_a_take_but_not_in_the_reaction_figures():
    """A tap across a gap in the sound (``untimed``): the log line keeps every stable field in
    order, with null reaction times, then says why; the summary leaves it out of the medians
    and counts it in its end line."""
    from reader.drills.grab import OPTIONAL_LOG_FIELDS, untimed

    def rec(r, gap=None):
        g = reaction(48000 + r * 48, kami(0, 48000))
        return log_record(g if gap is None else untimed(g, gap), correct=True)

    slow = rec(900, gap=-80.0)
    assert tuple(slow) == LOG_FIELDS + OPTIONAL_LOG_FIELDS
    assert slow["reaction_ms"] is None and slow["from_kami_ms"] is None
    assert slow["untimed"] == "the sound had a gap: not timed" and slow["gap_ms"] == -80.0
    assert slow["correct"] and not slow["anticipation"] and not slow["early"]
    assert json.loads(json.dumps(slow)) == slow
    s = summarize([rec(300), rec(500), slow, rec(400, gap=12.5)], cards=4)
    assert (s.taps, s.correct, s.untimed) == (4, 4, 2)
    assert s.median_reaction_ms == 400 and s.best_reaction_ms == 300
    assert s.describe().endswith("· 2 cards not timed: gaps in the sound")
    assert "not timed" not in summarize([rec(300)], cards=1).describe()

# ---------------------------------------------------------------------------- calibration maths
@given(offset=st.floats(-150, 150), jitter=st.lists(st.floats(-4, 4), min_size=12, max_size=30),
       strays=st.lists(st.floats(-290, 290), max_size=3))
def test_calibration_median_ignores_outliers(offset, jitter, strays):
    clicks = [1500 + 600 * i for i in range(len(jitter))]
    taps = [c + offset + j for c, j in zip(clicks, jitter)]
    # stray taps far from the beat (between clicks) are dropped, not averaged in
    taps += [clicks[i % len(clicks)] + 300 + s for i, s in enumerate(strays)]
    r = analyze(taps, clicks)
    assert abs(r.offset_ms - offset) <= 4.01
    assert r.taps >= len(jitter) - len(strays)


def test_calibration_needs_enough_taps():
    with pytest.raises(CalibrationError, match="only 2 taps"):
        analyze([1510, 2110], [1500 + 600 * i for i in range(20)])
    with pytest.raises(CalibrationError, match="tap once on each click"):
        analyze([], [1500])


def test_one_tap_per_click_the_nearer_kept():
    clicks = [0, 600, 1200, 1800, 2400, 3000]
    r = analyze([10, 30, 610, 1210, 1810, 2410, 3010], clicks)
    assert r.offset_ms == 10 and r.taps == 6 and r.dropped == 1
    assert math.isclose(r.spread_ms, 0)
