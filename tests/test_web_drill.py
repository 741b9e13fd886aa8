"""The web drill's host (``reader.web.drill.WebDrill``), pure: messages and time in, messages
out, against the tone voice's plan, a calibration store and a stats database in a temporary
folder.  A touch's frame is judged as the laptop drill judges a tap's; what the page may send
is bounded and checked (``reader.web.protocol``)."""
from __future__ import annotations

import json

import pytest
from fakes import FakeClock

from reader.practice import online
from reader.web import protocol
from reader.web.drill import WebDrill

DEVICE = "ab" * 16
CODE = "123456"


@pytest.fixture
def parts(tmp_path):
    from audio.voice import ToneVoice
    from reader.drills.calibrate import CalibrationStore
    from reader.drills.grab import drill_plan
    from reader.drills.stats import StatsDB

    voice = ToneVoice()
    plan = drill_plan(voice, 3, poems=list(range(1, 11)), cards=3, karafuda=1, ma_ms=500,
                      take_ms=1000)
    store = CalibrationStore(tmp_path / "calibration.json")
    with StatsDB(tmp_path / "stats.sqlite3") as db:
        yield plan, voice, store, db


def make(parts, lines=None, **kw) -> WebDrill:
    plan, voice, store, db = parts
    return WebDrill(plan, voice, CODE, store=store, db=db, clock=FakeClock(),
                    echo=(lines.append if lines is not None else lambda s: None), **kw)


def hello(d: WebDrill, code=CODE, addr="10.0.0.5", link=1, device=DEVICE, now=0.0):
    return d.receive({"t": "hello", "v": protocol.VERSION, "code": code, "device": device},
                     now, link, addr)


def calibrate(parts, offset_ms: float) -> None:
    from reader.drills.calibrate import CalibrationResult

    parts[2].save(f"web:{DEVICE}", CalibrationResult(offset_ms, 20, 0, 1.0, clicks=20))


def test_five_wrong_codes_lock_that_address_and_not_another(parts):
    lines: list[str] = []
    d = make(parts, lines)
    for k in range(5):
        out = hello(d, code="000000", now=k)
        assert out[0]["t"] == "error" and out[0]["text"].startswith("wrong code") and d.hangup
    assert "try again in 60 s" in out[0]["text"]
    out = hello(d, now=10)  # the right code, from the locked address
    assert out[0]["text"].startswith("too many wrong codes from this address (10.0.0.5)")
    assert hello(d, addr="10.0.0.6", now=10)[0]["t"] == "welcome"  # another address
    assert hello(d, now=65)[0]["t"] == "welcome"  # the lock (from the 5th, at 4 s) ran out
    assert any("wrong tries so far (5 from 10.0.0.5)" in ln for ln in lines)


def test_another_device_is_refused_and_the_same_one_joins_again(parts):
    d = make(parts)
    assert hello(d)[0]["t"] == "welcome"
    out = hello(d, device="cd" * 16, link=2)
    assert out[0]["t"] == "error" and "another device" in out[0]["text"]
    w = hello(d, link=3)[0]
    assert w["t"] == "welcome" and d.link == 3
    # a message on the old link is refused
    assert d.receive({"t": "start"}, 1.0, 1, "10.0.0.5")[0]["t"] == "error"


def play_touch(d: WebDrill, offset_ms: float, stamp="ok", **extra):
    """Start, and touch the first card ``offset_ms`` after its kimariji's decisive frame."""
    d.receive({"t": "start"}, 1.0, 1, "x")
    poem = d.plan.order[0]
    seg = d.kami[poem]
    frame = seg.decisive + round(offset_ms * d.rate / 1000)
    return poem, d.receive({"t": "touch", "read": 0, "frame": frame, "stamp": stamp, **extra},
                           2.0, 1, "x")


def test_a_touch_is_judged_as_the_laptop_drill_judges_a_tap(parts, tmp_path):
    from reader.drills.grab import reaction, timeline_of

    calibrate(parts, 20.0)
    d = make(parts)
    w = hello(d)[0]
    assert w["calibration"]["offset_ms"] == 20.0 and w["plan"] == online.plan_digest(d.plan)
    poem, out = play_touch(d, 300.0)
    assert out[0]["t"] == "choices" and poem in out[0]["cards"] and out[0]["read"] == 0
    assert out[0]["line"] == "+280 ms after the kimariji"
    # the phone slept and its page joined again: the cards to pick from come again
    again = hello(d, link=2)
    assert [m["t"] for m in again] == ["welcome", "choices"] and again[1] == out[0]
    assert again[0]["read"] == 0
    out = d.receive({"t": "answer", "read": 0, "card": poem}, 3.0, 2, "x")
    assert [m["t"] for m in out] == ["verdict", "go"] and out[0]["correct"]
    assert out[1] == {"t": "go", "read": 1, "frame": d.takes[poem].end}
    taps = parts[3].taps()
    seg = d.kami[poem]
    want = reaction(seg.decisive + 300 * 48, seg, 20.0, sample_rate=48000,
                    timeline=timeline_of(d.voice, seg))
    assert len(taps) == 1 and taps[0].reaction_ms == want.reaction_ms == 280.0
    assert taps[0].correct and not taps[0].fault
    settings = json.loads(parts[3]._conn.execute("SELECT settings FROM sessions").fetchone()[0])
    assert settings["device"] == f"web:{DEVICE}" and settings["calibration_ms"] == 20.0


@pytest.mark.parametrize("case,extra,why", [
    ("uncalibrated", {}, protocol.UNCALIBRATED),
    ("bad stamp", {"stamp": "bad"}, protocol.BAD_STAMP),
    ("gap", {"gap_ms": 12.5}, "the sound had a gap: not timed"),
])
def test_a_touch_that_cannot_be_timed_is_a_take_kept_out_of_the_reactions(parts, tmp_path,
                                                                           case, extra, why):
    import io

    if case != "uncalibrated":
        calibrate(parts, 10.0)
    log = io.StringIO()
    log.fileno = lambda: __import__("os").open(tmp_path / "x", __import__("os").O_CREAT)
    d = make(parts, log=log)
    hello(d)
    stamp = extra.pop("stamp", "ok")
    poem, out = play_touch(d, 300.0, stamp=stamp, **extra)
    assert out[0]["line"] == "not timed"
    d.receive({"t": "answer", "read": 0, "card": poem}, 3.0, 1, "x")
    taps = parts[3].taps()
    assert taps[0].correct and taps[0].reaction_ms is None and taps[0].from_kami_ms is None
    assert parts[3].per_poem(only_with_data=True)[0].median_reaction_ms is None
    rec = json.loads(log.getvalue().splitlines()[0])
    assert rec["untimed"] == why and rec["reaction_ms"] is None
    end = d.end_lines()[0]
    assert "1 card not timed" in end and (case == "gap") == ("gaps in the sound" in end), end


def test_touches_outside_the_card_or_for_another_read_are_not_taken(parts):
    calibrate(parts, 0.0)
    d = make(parts)
    hello(d)
    d.receive({"t": "start"}, 1.0, 1, "x")
    second = d.kami[d.plan.order[1]]
    out = d.receive({"t": "touch", "read": 0, "frame": second.start + 10, "stamp": "ok"},
                    2.0, 1, "x")
    assert out[0]["t"] == "warn" and "outside card 1" in out[0]["text"]
    out = d.receive({"t": "touch", "read": 1, "frame": second.start + 10, "stamp": "ok"},
                    2.0, 1, "x")
    assert out[0]["t"] == "warn" and "card 2 while card 1 is read" in out[0]["text"]
    assert parts[3].taps() == []


def test_a_card_left_alone_is_missed_a_karafuda_left_alone_is_right_and_a_touch_on_one_a_fault(
        parts):
    calibrate(parts, 0.0)
    d = make(parts)
    hello(d)
    d.receive({"t": "start"}, 1.0, 1, "x")
    verdicts = []
    for i, poem in enumerate(d.plan.order):
        if poem in d.plan.karafuda and i == 0:
            out = play_touch(d, 200.0)[1]
        else:
            out = d.receive({"t": "waited", "read": i}, 5.0 + i, 1, "x")
        verdicts.append((poem in d.plan.karafuda, out[0]["correct"], out[-1]["t"]))
    assert verdicts[-1][2] == "over" and d.over
    kara = [v for v in verdicts if v[0]]
    plain = [v for v in verdicts if not v[0]]
    assert kara and all(v[1] for v in kara) and not any(v[1] for v in plain)
    s = d.summary()
    assert s.missed == len(plain) and s.cards == len(d.plan.order)


def test_a_tap_along_saves_the_devices_calibration(parts):
    d = make(parts)
    assert hello(d)[0]["calibration"] is None
    clicks = d.receive({"t": "calibrate", "count": 8}, 1.0, 1, "x")[0]
    assert clicks["t"] == "clicks" and len(clicks["clicks"]) == 8
    assert isinstance(d.click_track(d.token), __import__("numpy").ndarray)
    taps = [c * 1000 / d.rate + 25.0 + (k % 3) for k, c in enumerate(clicks["clicks"])]
    out = d.receive({"t": "cal", "taps": taps}, 12.0, 1, "x")[0]
    assert out["t"] == "calibrated" and out["offset_ms"] == 26.0
    assert parts[2].offset_ms(f"web:{DEVICE}") == 26.0
    assert hello(d, link=2)[0]["calibration"]["offset_ms"] == 26.0
    # a gap in the page's sound at the third click: the taps from it on are not used
    clicks = d.receive({"t": "calibrate", "count": 8}, 20.0, 2, "x")[0]
    ms = [c * 1000 / d.rate for c in clicks["clicks"]]
    out = d.receive({"t": "cal", "taps": [m + 5 for m in ms], "moved_ms": ms[2] - 1},
                    30.0, 2, "x")[0]
    assert out["offset_ms"] is None and "the sound had a gap before click 3" in out["line"]


def test_clips_only_for_this_drill_and_plan(parts):
    d = make(parts)
    i = next(k for k, s in enumerate(d.plan.segments) if s.kind == "kami")
    assert len(d.clip(d.token, d.digest, i)) == d.plan.segments[i].frames
    assert d.clip("0" * 32, d.digest, i) == "not this drill's clip"
    assert "another plan" in d.clip(d.token, "0" * 16, i)
    assert d.clip(d.token, d.digest, i - 1) == "no such clip"  # (the 間 before it)


@pytest.mark.parametrize("text,why", [
    ("x" * 5000, "more than 4096 bytes"),
    ('{"t": "touch", "read": 0, "frame": NaN, "stamp": "ok"}', "not JSON"),
    ('{"t": "shout"}', "unknown message"),
    ('{"t": "answer", "read": 0, "card": 101}', "bad 'answer' message"),
    ('{"t": "start", "extra": 1}', "bad 'start' message"),
    ('{"t": ' + '[' * 1500 + ']' * 1500 + '}', "not JSON"),
])
def test_every_message_is_bounded_and_checked(text, why):
    with pytest.raises(online.ProtocolError, match=why):
        protocol.decode(text)


def test_the_command_says_in_one_line_what_it_cannot_do(tmp_path):
    """``--web`` with ``--window``, ``--port`` without ``--web``, and a port another program
    holds: one line each, exit 1 (in this process: no browser needed)."""
    import socket

    from cli_run import one_line_error, run_inproc

    env = {"KARUTA_CONFIG_DIR": str(tmp_path / "config")}
    res = run_inproc("drill", "speed", "--web", "--window", "--voice", "tone", env=env,
                     data_dir=tmp_path)
    one_line_error(res, "--web and --window: choose one")
    res = run_inproc("drill", "speed", "--port", "8000", env=env, data_dir=tmp_path)
    one_line_error(res, "--address and --port are for --web")
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    try:
        port = held.getsockname()[1]
        res = run_inproc("drill", "speed", "--web", "--address", "127.0.0.1", "--port",
                         str(port), "--voice", "tone", "--poems", "1-5", env=env,
                         data_dir=tmp_path)
    finally:
        held.close()
    one_line_error(res, f"cannot serve on 127.0.0.1:{port}")
