"""The reading engine: order, rhythm and timing of plans (with the fast tone voice)."""
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from audio.voice import ToneVoice
from poems import COLORS
from poems.kimariji import kimariji
from reader.reading.engine import build_plan
from reader.base.errors import SelectionError
from reader.reading.selection import parse_selection
from reader.reading.settings import preset

VOICE = ToneVoice()
RATE = VOICE.sample_rate


def kinds(plan, poem):
    return [s.kind for s in plan.segments if s.poem == poem]


def test_kyogi_reads_all_hundred_in_a_seeded_shuffle():
    a = build_plan(preset("kyogi"), 7, VOICE)
    assert sorted(a.order) == list(range(1, 101))
    assert a.order != tuple(range(1, 101))
    assert build_plan(preset("kyogi"), 7, VOICE) == a
    assert build_plan(preset("kyogi"), 8, VOICE).order != a.order


def test_kyogi_rhythm_joka_then_kami_take_shimo_ma():
    plan = build_plan(preset("kyogi"), 1, VOICE)
    seq = [(s.kind, s.poem) for s in plan.segments]
    first, second = plan.order[:2]
    assert seq[:8] == [("kami", "joka"), ("gap", "joka"), ("shimo", "joka"), ("gap", "joka"),
                       ("shimo", "joka"), ("ma", first), ("kami", first), ("take", first)]
    assert seq[8:12] == [("shimo", first), ("ma", second), ("kami", second), ("take", second)]
    # every card: 間 then 上の句, then the take, then that card's own 下の句
    for no in plan.order:
        assert kinds(plan, no) == ["ma", "kami", "take", "shimo"]
    # the jo-ka as a human reader reads it (issue 21): 1.5 s before its 下の句, 0.9 s between
    # the two 下の句, and only the second, which leads into the 間, is held like any other
    joka_shimo = plan.find("shimo", "joka")
    assert [s.speech.hold_ms for s in joka_shimo] == [0, 3000]
    assert [s.frames for s in plan.segments[:5] if s.kind == "gap"] == [int(1.5 * RATE), int(0.9 * RATE)]
    shifted = build_plan(preset("kyogi", joka_gap_ms=2000, gap_ms=500), 1, VOICE)
    assert [s.frames for s in shifted.segments[:5] if s.kind == "gap"] == [2 * RATE, RATE // 2]


def test_every_ma_is_exactly_one_second_and_segments_tile():
    plan = build_plan(preset("kyogi"), 3, VOICE)
    mas = [s for s in plan.segments if s.kind == "ma"]
    assert len(mas) == 100
    assert {s.frames for s in mas} == {RATE}
    for a, b in zip(plan.segments, plan.segments[1:]):
        assert a.end == b.start
        if b.kind == "kami" and a.kind != "ma":
            pytest.fail("a 上の句 without its 間")
    assert plan.segments[0].start == 0


def test_settings_change_the_timing():
    s = preset("kyogi", ma_ms=1500, take_ms=5000, yoin_ms=1000, cards=3)
    plan = build_plan(s, 1, VOICE)
    assert {x.frames for x in plan.segments if x.kind == "ma"} == {int(1.5 * RATE)}
    assert {x.frames for x in plan.segments if x.kind == "take"} == {5 * RATE}
    assert all(x.wait for x in plan.segments if x.kind == "take")
    shimo = plan.find("shimo", plan.order[0])[0]
    unheld = VOICE.layout(shimo.speech.__class__(shimo.speech.key, "shimo", 1.0, 0)).frames
    assert shimo.frames == unheld + RATE
    assert len(plan.order) == 3
    faster = build_plan(preset("kyogi", speed=1.5, cards=3), 1, VOICE)
    assert faster.frames < build_plan(preset("kyogi", cards=3), 1, VOICE).frames


def test_last_shimo_is_a_setting():
    with_last = build_plan(preset("kyogi", cards=2), 5, VOICE)
    without = build_plan(preset("kyogi", cards=2, last_shimo=False), 5, VOICE)
    assert kinds(with_last, with_last.order[-1])[-1] == "shimo"
    assert kinds(without, without.order[-1]) == ["ma", "kami", "take"]


def test_goshiki_announces_reads_karafuda_then_17_of_the_colour_without_waiting():
    plan = build_plan(preset("goshiki", poems=COLORS["blue"]), 11, VOICE)
    assert plan.segments[0].kind == "whole" and plan.segments[0].poem == "announce"
    assert kinds(plan, "karafuda") == ["ma", "kami", "gap", "shimo"]
    assert len(plan.order) == 17 and set(plan.order) < set(COLORS["blue"])
    assert not any(s.wait or s.kind == "take" for s in plan.segments)
    for no in plan.order:
        assert kinds(plan, no) == ["ma", "kami", "gap", "shimo"]
    per_poem = (plan.frames - plan.find("ma", plan.order[0])[0].start) / RATE / 17
    assert 5 < per_poem < 10, "about 7 s a poem"


def test_goshiki_needs_a_colour():
    with pytest.raises(SelectionError, match="colour"):
        build_plan(preset("goshiki"), 1, VOICE)


def test_beginner_reads_each_poem_straight_through():
    plan = build_plan(preset("beginner", poems=(1, 2, 3)), 2, VOICE)
    assert sorted(plan.order) == [1, 2, 3]
    assert [s.kind for s in plan.segments if s.poem == plan.order[1]] == ["ma", "kami", "gap", "shimo"]
    assert "joka" not in {s.poem for s in plan.segments}


def test_practice_subset_with_karafuda():
    chosen = parse_selection("1-20")
    plan = build_plan(preset("kyogi", poems=chosen, karafuda=10), 4, VOICE)
    assert len(plan.order) == 30
    assert set(plan.karafuda).isdisjoint(chosen) and len(plan.karafuda) == 10
    assert set(plan.order) == set(chosen) | set(plan.karafuda)
    assert plan.universe == tuple(sorted(plan.order))


def test_more_cards_than_poems_is_refused():
    with pytest.raises(SelectionError, match="more than"):
        build_plan(preset("kyogi", poems=(1, 2, 3), cards=4), 1, VOICE)
    with pytest.raises(SelectionError, match="karafuda"):
        build_plan(preset("kyogi", karafuda=1), 1, VOICE)


def test_kami_carries_its_kimariji_as_it_was_when_read():
    plan = build_plan(preset("kyogi"), 9, VOICE)
    read = []
    for no in plan.order:
        kami = plan.find("kami", no)[0]
        k = kimariji(plan.universe, read)[no]
        assert (kami.kimariji, kami.kimariji_sound) == (k.card, k.sound)
        layout = VOICE.layout(kami.speech)
        assert kami.decisive == kami.start + layout.morae[k.length - 1].start
        assert kami.start <= kami.decisive < kami.end
        read.append(no)
    # the last card's kimariji is its first sound: nothing else is left
    assert len(plan.find("kami", plan.order[-1])[0].kimariji_sound) == 1


def test_plan_json_is_stable():
    plan = build_plan(preset("kyogi", cards=2), 1, VOICE)
    d = plan.to_dict()
    assert d["sample_rate"] == RATE and d["order"] == list(plan.order)
    seg = d["segments"][0]
    assert {"kind", "poem", "start_ms", "end_ms"} <= set(seg)
    kami = next(s for s in d["segments"] if s["kind"] == "kami" and isinstance(s["poem"], int))
    assert {"kimariji", "kimariji_sound", "decisive_ms"} <= set(kami)
    ma = [s for s in d["segments"] if s["kind"] == "ma"]
    assert all(round(s["end_ms"] - s["start_ms"], 3) == 1000.0 for s in ma)


@hsettings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), ma=st.integers(0, 3000), take=st.integers(0, 8000),
       cards=st.integers(1, 100), rules=st.sampled_from(["kyogi", "beginner"]))
def test_any_plan_tiles_and_keeps_ma_exact(seed, ma, take, cards, rules):
    plan = build_plan(preset(rules, ma_ms=ma, take_ms=take, cards=cards), seed, VOICE)
    assert len(plan.order) == cards == len(set(plan.order))
    pos = 0
    for s in plan.segments:
        assert s.start == pos and s.end >= s.start
        pos = s.end
        if s.kind == "ma":
            assert s.frames == round(ma * RATE / 1000)
