"""Pure parts of the club session (reader.club): plan slicing, the memorisation timer on a
fake clock, the session file (round trip, corrupt files), keys, and step-back targets."""
from __future__ import annotations

import json

import numpy as np
import pytest

from audio_fixtures import small_plan, tone_voice  # noqa: F401
from reader import club
from reader.errors import KarutaError


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


# ---------------------------------------------------------------------------- slicing
def test_slice_plan_keeps_every_frame_exact(tone_voice):
    from audio.render import render

    plan = small_plan(tone_voice, cards=4, seed=3)
    whole = render(plan, tone_voice)
    for k in range(4):
        start = club.card_start_index(plan, k)
        assert plan.segments[start].kind in ("ma", "kami")
        tail = club.slice_plan(plan, start)
        off = plan.segments[start].start
        assert tail.segments[0].start == 0
        assert tail.frames == plan.frames - off
        for a, b in zip(tail.segments, plan.segments[start:]):
            assert (a.kind, a.poem, a.frames, a.kimariji, a.wait) == (b.kind, b.poem, b.frames, b.kimariji, b.wait)
            assert a.start + off == b.start and a.end + off == b.end
            if b.decisive is not None:
                assert a.decisive + off == b.decisive
        # the derived plan sounds exactly like the original's tail, sample for sample
        assert np.array_equal(render(tail, tone_voice), whole[off:])
        assert tail.order == plan.order


def test_card_start_is_the_ma_before_the_kami(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    kami = club.card_kami_index(plan)
    assert [plan.segments[i].poem for i in kami] == list(plan.order)
    for k in range(3):
        s = plan.segments[club.card_start_index(plan, k)]
        assert s.kind == "ma" and s.poem == plan.order[k]
    with pytest.raises(ValueError):
        club.slice_plan(plan, len(plan.segments))


# ---------------------------------------------------------------------------- timer
def test_timer_signals_once_at_13_and_ends_at_15_minutes():
    clk = FakeClock()
    t = club.MemorizeTimer(15 * 60, club.parse_signals(None, 15), clk)
    t.start()
    assert t.poll() == [] and t.remaining() == 900 and t.next_signal() == 780
    clk.t += 779.9
    assert t.poll() == [] and not t.swings
    clk.t += 0.2
    assert t.poll() == [("signal", 780.0)] and t.swings
    assert t.poll() == []  # once
    clk.t += 119.8
    assert t.poll() == [] and t.remaining() == pytest.approx(0.1)
    clk.t += 0.2
    ev = t.poll()
    assert [e[0] for e in ev] == ["end"] and t.ended and t.remaining() == 0
    assert t.poll() == []


def test_timer_settable_signals_skip_and_jumps():
    clk = FakeClock()
    t = club.MemorizeTimer(600, club.parse_signals("2,5", 10), clk)
    t.start()
    clk.t += 400  # a slow poll passes two signals: both fire, in order
    assert t.poll() == [("signal", 120.0), ("signal", 300.0)]
    t.skip()
    assert [e[0] for e in t.poll()] == ["end"]
    t2 = club.MemorizeTimer(600, (120.0,), clk)
    t2.start()
    t2.skip()
    assert [e[0] for e in t2.poll()] == ["end"] and not t2.fired  # no signal after a skip


def test_signal_options():
    assert club.parse_signals(None, 15) == (780.0,)
    assert club.parse_signals(None, 1) == ()
    assert club.parse_signals("none", 15) == ()
    for bad in ("x", "16", "0"):
        with pytest.raises(KarutaError):
            club.parse_signals(bad, 15)


def test_chimes_are_short_and_not_silent():
    for kind in ("signal", "end"):
        c = club.chime(48000, kind)
        assert c.dtype == np.float32 and 0.2 < len(c) / 48000 < 2.0
        assert 0.1 < np.abs(c).max() <= 1.0
    cur = club.ArrayCursor(club.chime(48000), 48000)
    got = np.concatenate([cur.read(480) for _ in range(200)])
    assert np.array_equal(got, club.chime(48000)) and cur.read(480).shape[0] == 0


# ---------------------------------------------------------------------------- session file
OPTS = dict(rules="kyogi", seed=7, cards=4, poems_spec=None, colors=(), karafuda=None, ma=0.3,
            yoin=0.2, take=0.2, gap=None, speed=None, joka=False, last_shimo=None, voice_spec="tone")


class _NoOutput:
    is_active = False

    def stop(self):
        pass

    def wait(self, timeout=None):
        return True


def test_save_resume_round_trip(tmp_path, tone_voice):
    from reader.cli_read import build

    plan, voice = build(OPTS)
    sf = club.SessionFile(tmp_path / "s" / "last.json")
    s = club.ClubSession(plan, voice, _NoOutput(), opts=OPTS, session=sf, wallclock=lambda: 0)
    s.save()
    # two cards read (as the live loop records them)
    s._card_read(0)
    s._card_read(1)
    data = sf.load()
    assert data["position"] == 2 and data["order"] == list(plan.order) and not data["finished"]
    assert [e["poem"] for e in data["log"]] == list(plan.order[:2])
    kami = [plan.segments[i] for i in club.card_kami_index(plan)]
    assert [e["kimariji"] for e in data["log"]] == [k.kimariji for k in kami[:2]]
    assert [e["kimariji_sound"] for e in data["log"]] == [k.kimariji_sound for k in kami[:2]]
    # the saved options rebuild the same plan
    again, _ = build(club.options_from_save(data["options"]))
    assert again.order == plan.order and again.to_dict() == plan.to_dict()
    # resumed session starts at card 3's 間 and marks a re-read card "again"
    r = club.ClubSession(again, voice, _NoOutput(), opts=OPTS, session=sf, position=2,
                         log=data["log"], wallclock=lambda: 0)
    assert r.position == 2 and club.card_start_index(again, 2) == club.card_kami_index(again)[2] - 1
    r._card_read(1)
    assert r.log[-1]["again"] is True and r.position == 2
    assert json.loads(sf.path.read_text())["log"][-1]["card"] == 2


@pytest.mark.parametrize("text, words", [
    ("{not json", "corrupt"),
    ("[]", "not a karuta session"),
    ('{"kind": "karuta-club-session", "version": 1}', "options missing"),
    ('{"kind": "karuta-club-session", "version": 99}', "version 99"),
    ("", "corrupt"),
])
def test_corrupt_session_is_one_line_and_left_alone(tmp_path, text, words):
    p = tmp_path / "last.json"
    p.write_text(text)
    with pytest.raises(club.SessionError) as e:
        club.SessionFile(p).load()
    assert words in str(e.value) and "\n" not in str(e.value)
    assert p.read_text() == text


def test_missing_session(tmp_path):
    with pytest.raises(club.SessionError, match="no saved session"):
        club.SessionFile(tmp_path / "nope.json").load()


def test_default_session_path_follows_karuta_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path))
    assert club.default_session_path() == tmp_path / "sessions" / "last.json"


# ---------------------------------------------------------------------------- keys, step back
class FakeKeys:
    def __init__(self, text):
        self.chars = list(text)

    def get(self, timeout=0.0):
        from reader.terminal import Key

        return Key(self.chars.pop(0), 0) if self.chars else None


@pytest.mark.parametrize("text, cmd", [
    (" ", "next"), ("\r", "next"), ("\x1b[6~", "next"), ("\x1b[C", "next"), ("\x1bOC", "next"),
    ("p", "hold"), ("h", "hold"), ("r", "repeat"), ("b", "back"), ("\x1b[D", "back"),
    ("\x7f", "back"), ("q", "quit"), ("s", "skip"), ("\x1b", None), ("x", None),
])
def test_keys(text, cmd):
    assert club.read_command(FakeKeys(text)) == cmd


def test_back_target(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    s = club.ClubSession(plan, tone_voice, _NoOutput(), opts=OPTS,
                         session=club.SessionFile("/nonexistent/x.json"))
    assert s.back_target() is None
    kami = club.card_kami_index(plan)
    s.current, s.heard = 1, kami[1]  # card 2's 上の句
    assert s.back_target() == 0
    s.heard = kami[1] + 1  # its take
    assert plan.segments[s.heard].kind == "take" and s.back_target() == 0
    s.heard = kami[1] + 2  # released: its 下の句 -> read card 2 again
    assert plan.segments[s.heard].kind == "shimo" and s.back_target() == 1
    s.current, s.heard = 0, kami[0]
    assert s.back_target() == 0


def test_screen_shows_card_kimariji_counts_and_log(tone_voice):
    plan = small_plan(tone_voice, cards=3, seed=2)
    s = club.ClubSession(plan, tone_voice, _NoOutput(), opts=OPTS,
                         session=club.SessionFile("/tmp/unused.json"), wallclock=lambda: 0)
    s.save = lambda: None
    kami = club.card_kami_index(plan)
    s._heard(kami[0])
    s._heard(kami[0] + 1)
    text = "\n".join(club.screen_lines(s.view()))
    seg = plan.segments[kami[0]]
    assert "card 1/3" in text and "read 1 · left 2" in text and seg.kimariji in text
    assert f"{plan.order[0]:3d} {seg.kimariji}" in text
