"""Online play with a human at each board: ``karuta practice --host`` and ``--join HOST
--code C`` (no ``--as``), two app processes, each with its own X server (Xvfb) and its own
PulseAudio null sink, the guest reaching the host through a relay that delays every chunk
80 ± 20 ms and loses some (resent 200 ms later, as TCP does).  Real clicks (XTest through
xdotool) at known instants on both boards, timed from each sink's monitor.

The pure logic (clocks, the judge, the timeline) is tested in tests/test_online.py; the
figures (start skew, touch-frame error, earlier wins, a cut) come from
scripts/bench_online.py.
"""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from audio_fixtures import pulse_server  # noqa: F401
from cli_run import karuta_argv, karuta_env
from test_practice_window import GREEN
from testbed.apps import end_app, start_app
from testbed.board import card_px as _card_px
from testbed.onsets import Onsets
from testbed.onsets import onset_number as _onset_number
from testbed.relay import Relay
from testbed.x_driver import screenshot_when
from testbed.x_driver import window_or_stacks as _window_or_stacks
from waits import wait_until

SEED = 133  # read 1 is the guest's (B's) one card: whoever takes it first decides the match


def _match():
    from audio.voice import ToneVoice
    from reader.practice import headless
    from reader.practice.match import Seat

    return headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, SEED,
                              ToneVoice(), cards=1, reading={"joka": False})


class Sinks:
    """Two null sinks on the session's PulseAudio, one a machine (removed at the end)."""

    def __init__(self, server, names):
        self.env = server.env
        self.modules = []
        for n in names:
            r = subprocess.run(["pactl", "load-module", "module-null-sink", f"sink_name={n}",
                                "rate=48000"], env=self.env, capture_output=True, text=True,
                               check=True)
            self.modules.append(r.stdout.strip())

    def close(self):
        for mod in self.modules:
            subprocess.run(["pactl", "unload-module", mod], env=self.env, capture_output=True)


def _lines(path):
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _click(display, wid, x, y) -> tuple[float, float]:
    """A click at (x, y) in window ``wid``: the monotonic instants just before and after."""
    env = karuta_env({"DISPLAY": display})
    before = time.monotonic()
    subprocess.run(["xdotool", "mousemove", "--window", wid, str(x), str(y), "click", "1"],
                   env=env, check=True)
    return before, time.monotonic()


@pytest.mark.realtime
def test_two_boards_one_reading_the_earlier_touch_takes_it(pulse_server, xvfb, xvfb2,
                                                          tmp_path, monkeypatch):
    m = _match()
    cur = m.current()
    assert cur.where == "B" and m.deal.hands["A"] != m.deal.hands["B"]  # the seed's premise
    rate = m.plan.sample_rate
    kami_onset = _onset_number(m.plan, m.voice, cur.kami)
    sinks = Sinks(pulse_server, ["online_h", "online_g"])
    ears = {}
    apps = {}
    try:
        ears = {k: Onsets(sink=f"online_{k}") for k in "hg"}
        for e in ears.values():
            assert e.listening.wait(30), "parec heard nothing from a sink's monitor"
        common = {"PULSE_SERVER": pulse_server.env["PULSE_SERVER"],  # (data: each its own)
                  "KARUTA_CONFIG_DIR": str(tmp_path / "cfg"), "PYTHONFAULTHANDLER": "1"}
        apps["h"] = start_app(karuta_argv(
            "practice", "--host", "--port", "0", "--seed", str(SEED), "--cards", "1",
            "--no-joka", "--voice", "tone", "--log", str(tmp_path / "h.jsonl")),
            env=karuta_env({**common, "DISPLAY": xvfb, "PULSE_SINK": "online_h",
                            "KARUTA_DATA_DIR": str(tmp_path / "data_h")}),
            cwd=tmp_path)
        out_h = []

        def hosting():
            line = apps["h"].stdout.readline()
            out_h.append(line)
            return line if line.startswith("hosting on port") else None

        line = wait_until(hosting, 60, what="the host's code")
        port, code = int(line.split()[3].rstrip(",")), line.split()[5].rstrip(":")
        relay = Relay(port, 0.08, 0.02, loss=0.02)
        apps["g"] = start_app(karuta_argv(
            "practice", "--join", f"127.0.0.1:{relay.port}", "--code", code,
            "--log", str(tmp_path / "g.jsonl")),
            env=karuta_env({**common, "DISPLAY": xvfb2, "PULSE_SINK": "online_g",
                            "KARUTA_DATA_DIR": str(tmp_path / "data_g")}),
            cwd=tmp_path)
        wid = {"h": _window_or_stacks(apps["h"], xvfb),
               "g": _window_or_stacks(apps["g"], xvfb2)}
        # both sinks start read 1's 上の句 together (measured on their monitors; checked at
        # the end, beside what each machine says of its sound)
        heard = {k: ears[k].wait(kami_onset, timeout=60) - cur.start / rate for k in "hg"}
        # the guest touches its card 0.4 s after the decisive sound, the host 0.15 s later
        gx, gy, gbox = _card_px(m, SEED, cur.poem, viewer="B")
        hx, hy, hbox = _card_px(m, SEED, cur.poem, viewer="A")
        assert not gbox.upside_down and hbox.upside_down  # each sees its own side near
        dec = cur.decisive / rate
        time.sleep(max(0.0, heard["g"] + dec + 0.40 - time.monotonic()))
        g_click = _click(xvfb2, wid["g"], gx, gy)
        time.sleep(max(0.0, heard["h"] + dec + 0.55 - time.monotonic()))
        h_click = _click(xvfb, wid["h"], hx, hy)
        logged = wait_until(lambda: len(_lines(tmp_path / "g.jsonl")) >= 2
                            and len(_lines(tmp_path / "h.jsonl")) >= 2, 30,
                            what="read 1 in both logs")
        assert logged
        # the match is over (B's territory is empty): the end table on both boards
        for display in (xvfb, xvfb2):
            screenshot_when(display, lambda im: not (im == GREEN).all(axis=2).any()
                            and im.mean() < 60, timeout=20, what="the end screen")
        for k, display in (("h", xvfb), ("g", xvfb2)):
            subprocess.run(["xdotool", "key", "--window", wid[k], "q"],
                           env=karuta_env({"DISPLAY": display}), capture_output=True)
        outs = {k: apps[k].communicate(timeout=30)[0] for k in "hg"}
    finally:
        for p in apps.values():
            end_app(p)
        for e in ears.values():
            e.close()
        sinks.close()
    outs["h"] = "".join(out_h) + outs["h"]
    assert apps["h"].returncode == 0 and apps["g"].returncode == 0, outs
    # together within 30 ms -- or a machine says its sound stalled or started late (at load
    # 20 the two sinks began 187 ms apart: what a busy machine's sound does, said, not hidden)
    audio = [ln for k in "hg" for ln in outs[k].splitlines() if ln.startswith("audio: ")]
    assert len(audio) == 2, outs
    if abs(heard["h"] - heard["g"]) >= 0.030:
        quiet = "audio: 0 underruns, 0 buffers without their speech in time, 0 starts"
        assert any(not ln.startswith(quiet) for ln in audio), (heard, audio)
    h, g = _lines(tmp_path / "h.jsonl"), _lines(tmp_path / "g.jsonl")
    assert g == h  # the guest's copy is the host's log
    assert h[0]["practice"]["seats"] == {"A": "human", "B": "human"}
    read = h[1]
    assert read["read"] == cur.poem and read["took"] == "B", read
    touches = {t["player"]: t for t in read["timing"]["touches"]}
    assert touches["B"]["verdict"] == "take"
    # each touch is the frame its machine heard when it was clicked: between the instants
    # before and after the click, on its own sink's clock (loose: the monitor's chunks, a
    # stalling null sink on a loaded machine)
    for p, (before, after), k in (("B", g_click, "g"), ("A", h_click, "h")):
        lo, hi = ((t - heard[k]) * rate for t in (before, after))
        frame = touches[p]["ms"] * rate / 1000
        assert lo - 0.03 * rate <= frame <= hi + 0.03 * rate, (p, touches[p], lo, hi)
    assert touches["B"]["ms"] < touches.get("A", {"ms": 1e12})["ms"]
    for k in "hg":
        assert "Traceback" not in outs[k], outs[k]
        assert "B wins" in outs[k], outs[k]
    # each machine's stats database learns its own player's touches, not the other's
    from reader.drills.stats import StatsDB

    for k, p in (("g", "B"), ("h", "A")):
        monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / f"data_{k}"))
        with StatsDB() as db:
            taps = [(t.poem, t.correct) for t in db.taps()]
        if p == "B":
            assert taps == [(cur.poem, True)], taps
        else:
            assert (cur.poem, True) not in taps, taps  # (B's take is not A's)
