"""Calibration: the store, the click track, and ``karuta calibrate`` end to end in tmux with a
robot player that listens to the null sink's monitor (parec) and taps when it hears a click."""
from __future__ import annotations

import json
import os
import subprocess
import threading

import numpy as np
import pytest

from audio_fixtures import Stall, pulse_server, require_tool  # noqa: F401
from reader.drills.calibrate import (CalibrationError, CalibrationResult, CalibrationStore, click_track, config_dir, device_key)
from cli_run import run_inproc
from machine_stall import run_delays
from tmux_driver import karuta_argv


def test_store_round_trip_per_device(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_CONFIG_DIR", str(tmp_path / "cfg"))
    assert config_dir() == tmp_path / "cfg"
    store = CalibrationStore()
    assert store.load() == {} and store.offset_ms("sounddevice:pulse") is None
    store.save("sounddevice:pulse", CalibrationResult(12.5, 18, 2, 1.5, (12.0, 13.0)))
    store.save("pygame:dummy", CalibrationResult(-3.0, 10, 0, 0.5))
    again = CalibrationStore()
    assert again.offset_ms("sounddevice:pulse") == 12.5
    assert again.offset_ms("pygame:dummy") == -3.0
    e = again.get("sounddevice:pulse")
    assert e["taps"] == 18 and e["dropped"] == 2 and e["input"] == "terminal" and "date" in e
    data = json.loads((tmp_path / "cfg" / "calibration.json").read_text())
    assert data["version"] == 1 and set(data["devices"]) == {"sounddevice:pulse", "pygame:dummy"}


def test_an_unreadable_store_is_one_line_and_a_new_calibration_replaces_it(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text("{not json")
    store = CalibrationStore(path)
    with pytest.raises(CalibrationError, match="unreadable: run `karuta calibrate` again"):
        store.load()
    store.save("x:y", CalibrationResult(1.0, 5, 0, 0.1))
    assert store.offset_ms("x:y") == 1.0
    # the damaged file is not lost: kept beside it (the next one as -2), said by the command
    assert store.kept_damaged == tmp_path / "calibration.json.damaged-1"
    assert store.kept_damaged.read_text() == "{not json"
    path.write_text('{"devices": {"a:b": {"offset_ms": "12"}}}')
    store.save("x:y", CalibrationResult(2.0, 5, 0, 0.1))
    assert (tmp_path / "calibration.json.damaged-2").read_text().startswith('{"devices"')
    store.save("x:z", CalibrationResult(3.0, 5, 0, 0.1))  # a sound file: nothing more kept
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".calibration.json.lock") == [
        "calibration.json", "calibration.json.damaged-1", "calibration.json.damaged-2"]


def test_click_track_layout_is_where_the_clicks_are():
    plan, voice, clicks = click_track(48000, count=8, interval_ms=500, lead_ms=1000)
    from audio.render import render

    audio = render(plan, voice)
    assert audio.shape[0] == plan.frames
    assert clicks == tuple(48000 + i * 24000 for i in range(8))
    loud = np.flatnonzero(np.abs(audio) > 0.05)
    onsets = [int(loud[0])] + [int(b) for a, b in zip(loud[:-1], loud[1:]) if b - a > 4800]
    assert [abs(o - c) <= 2 for o, c in zip(onsets, clicks)] == [True] * 8
    assert np.abs(audio[:clicks[0]]).max() == 0


def test_device_key_names_backend_and_device():
    class Fake:
        device_info = {"name": "pulse"}

    assert device_key(Fake()) == "sounddevice:pulse"
    from audio.output import NullOutput

    assert device_key(NullOutput()) == "null:default"


class Listener(threading.Thread):
    """A robot player: hears the sink's monitor through parec (5 ms chunks) and taps (tmux
    send-keys) as soon as a click's onset arrives."""

    def __init__(self, env: dict, tap):
        super().__init__(daemon=True)
        self.proc = subprocess.Popen(
            ["parec", "-d", "ci_sink.monitor", "--raw", "--format=s16le", "--rate=48000",
             "--channels=1", "--latency-msec=5"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)
        self.tap = tap
        self.heard = 0
        self.stop = threading.Event()
        self.waits_ms = []  # per click: the longest its ear or hand waited for a CPU since the last

    def _waited(self) -> dict:
        me = (os.getpid(), threading.get_native_id())
        got = {k: v for k, v in run_delays().items() if k == me}
        got.update(run_delays(self.proc.pid))
        return got

    def run(self):
        quiet = 0
        last = self._waited()
        while not self.stop.is_set():
            raw = self.proc.stdout.read(480)
            if not raw:
                return
            x = np.frombuffer(raw, np.int16)
            if np.abs(x).max() > 3000:
                if quiet > 48000 * 0.2:
                    self.tap()
                    self.heard += 1
                    now = self._waited()
                    self.waits_ms.append(1000 * max((now.get(k, 0.0) - w for k, w in last.items()),
                                                    default=0.0))
                    last = now
                quiet = 0
            else:
                quiet += x.shape[0]

    def close(self):
        self.stop.set()
        self.proc.terminate()
        self.proc.wait(timeout=5)


#: the robot's run: clicks at calibrate's shortest interval (15 ms clicks, 285 ms of quiet
#: between them: the robot taps after 200 ms of quiet); two may be dropped, as of 12 before
ROBOT_CLICKS, ROBOT_INTERVAL = 10, 0.3


def saved_taps(cfg) -> int | None:
    """The taps the saved calibration used (None: nothing saved)."""
    saved = CalibrationStore(cfg / "calibration.json").get("sounddevice:pulse")
    return None if saved is None else saved["taps"]


def _robot_run_problems(screen: str, robot, cfg, slack_ms: float = 0.0) -> list[str]:
    """What is wrong with one calibrate run made with the listening robot (empty: nothing).
    ``slack_ms``: the longest the machine kept the robot's ear (parec) or hand (its thread)
    waiting for a CPU between two clicks (measured): a robot that late taps that late."""
    if "EXIT=0" not in screen:
        return ["calibrate did not end with exit 0"]
    out = []
    if robot.heard != ROBOT_CLICKS:
        out.append(f"the robot heard {robot.heard} clicks, not {ROBOT_CLICKS}")
    saved = CalibrationStore(cfg / "calibration.json").get("sounddevice:pulse")
    if saved is None:
        return out + ["nothing saved"]
    # the robot hears the sink ~5-10 ms late (parec) and tmux adds ~2-5 ms: a steady, small
    # positive offset, spread by the robot's own lateness on a busy machine (beside a CPU hog:
    # ±5.8 ms), which is measured, not the app's
    if not (0 < saved["offset_ms"] < 60 + slack_ms and saved["spread_ms"] < 5 + slack_ms):
        out.append(f"offset/spread {saved} (the robot's threads waited up to {slack_ms:.0f} ms "
                   "for a CPU)")
    if saved["taps"] < ROBOT_CLICKS - 2:
        out.append(f"{saved['taps']} taps used, not >= {ROBOT_CLICKS - 2}")
    if f"sounddevice:pulse: offset {saved['offset_ms']:+.1f} ms" not in screen:
        out.append("the saved offset is not on the screen")
    # it waited for the timing to settle, counted down, and says how long that took
    if not ("get ready…" in screen and "\n1\n" in screen and "timing settled after" in screen):
        out.append("no settle / countdown lines")
    elif not screen.index("get ready: ") < screen.index("sounddevice:pulse: offset"):
        out.append("the countdown came after the result")
    if not ("audio: no underruns" in screen or "underrun" in screen):
        out.append("no line about underruns")
    if not (saved["clicks"] == ROBOT_CLICKS and len(saved["history"]) == 1):
        out.append(f"clicks/history {saved}")
    return out


@pytest.mark.realtime
def test_calibrate_in_tmux_with_a_listening_robot(pulse_server, tmux, tmp_path):
    require_tool("parec", "pulseaudio-utils")
    cfg = tmp_path / "cfg"
    env = {"PULSE_SERVER": os.environ["PULSE_SERVER"],
           "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"], "KARUTA_CONFIG_DIR": str(cfg),
           "TERM": "xterm"}
    # one run: the robot's own path (parec chunks, tmux send-keys) spreads ~1 ms, above
    # the 0.5 ms a run must reach to be kept at once (the repeats: test below).  When the
    # sound itself stalled (the machine starved the sound server: calibrate reports the
    # underruns or gaps, and leaves out the taps after a gap, as it must) and the run came out
    # short of what is checked, the measurement says nothing of calibrate: it is made once more
    stalled = None
    for attempt in (1, 2, 3):
        robot = Listener(pulse_server.env, lambda: tmux.keys("Space"))
        robot.start()
        try:
            tmux.start(karuta_argv("calibrate", "--device", "pulse", "--clicks",
                                   str(ROBOT_CLICKS), "--interval", str(ROBOT_INTERVAL),
                                   "--attempts", "1"), env, tee=True)
            tmux.wait_for("EXIT=", timeout=60)
        finally:
            robot.close()
        screen = tmux.screen()
        problems = _robot_run_problems(screen, robot, cfg, slack_ms=max(robot.waits_ms, default=0))
        machine_stalled = any(w in screen for w in ("the sound had a gap", "the sound had gaps",
                                                    "karuta: audio: "))
        # the robot itself late (a clean run under load 7 saw its taps spread ±8 ms with the
        # sound steady; a run at load ~25, 3 of its 10 taps dropped as outliers): calibrate
        # rightly says the run spread; the robot is timed once more (three runs in all)
        robot_jittered = "still spread" in screen and all(
            p.startswith(("offset/spread", f"{saved_taps(cfg)} taps used")) for p in problems)
        if problems and (machine_stalled or robot_jittered) and attempt < 3:
            stalled = (problems, screen)
            (cfg / "calibration.json").unlink(missing_ok=True)
            continue
        break
    assert not problems, (problems, screen,
                          f"(made twice: the first run's sound or robot stalled: {stalled})"
                          if stalled else "")
    r = run_inproc("calibrate", "--show", env={"KARUTA_CONFIG_DIR": str(cfg)})
    assert r.returncode == 0 and r.stdout.startswith("sounddevice:pulse: ")


class JitterFront:
    """Taps ``delay_ms`` after each click as the output plays it, with a given jitter per run
    (a robot player inside the process: the NullOutput's clock is exact)."""

    name = "robot"

    def __init__(self, out, clicks_frames, jitters):
        self.out = out
        self.clicks = clicks_frames
        self.jitters = list(jitters)
        self.run = -1
        self.taps = []
        self.messages = []

    def start_run(self):
        import random

        self.run += 1
        rng = random.Random(self.run)
        j = self.jitters[min(self.run, len(self.jitters) - 1)]
        self.pending = [c + round((4.0 + rng.uniform(-j, j)) * 48) for c in self.clicks]

    def poll(self, timeout):
        import time

        from reader.input.taps import TapEvent

        time.sleep(timeout)
        heard = self.out.frame_now()
        out = []
        if heard is None or self.pending is None:
            return out
        cursor = self.out._cursor
        while self.pending and cursor.plan_frame_at(int(heard)) >= self.pending[0]:
            f = self.pending[0]
            # stamp it at the moment plan frame f was heard.  Not made yet (None): the ear's
            # clock ran past what the feeder had made (a busy machine held the feeder up; an
            # underflow the output counts): the click has not been heard, the robot waits
            s = cursor.stream_frame_at(f)
            if s is None:
                break
            self.pending.pop(0)
            t = self.out.timeline
            frames, times = t.pairs()
            k = max(0, int(np.searchsorted(frames, s, side="right")) - 1)
            ns = round((times[k] + (s - frames[k]) / 48000) * 1e9)
            out.append(TapEvent(ns, "key", char=" "))
        return out

    def tapped(self, n):
        pass

    def message(self, text):
        self.messages.append(text)


def test_a_run_spread_above_the_limit_is_repeated_and_the_steadiest_kept(monkeypatch):
    from audio.output import NullOutput
    from reader.drills import calibrate as cal

    out = NullOutput()
    _, _, clicks = click_track(48000, count=8, interval_ms=200, lead_ms=300)
    front = JitterFront(out, clicks, jitters=[3.0, 0.2])
    real_play = out.play

    def play(cursor):
        front.start_run()
        real_play(cursor)

    out.play = play
    monkeypatch.setattr(cal, "click_track",
                        lambda rate, count, interval_ms: click_track(rate, count, interval_ms, 300))
    said = []
    res = cal.run_calibration(out, front, count=8, interval_ms=200, echo=said.append,
                              attempts=3, max_spread_ms=0.5)
    # a second run, no third: the second was steady.  (A third only where the output counted
    # the machine's stall as a gap in the sound, and calibrate said it made the run again)
    gaps = [s for s in said if "the sound had a gap" in s]
    assert front.run == 1 or (front.run == 2 and gaps and out.underruns), (said, out.underruns)
    assert any("is above ±0.50 ms: once more (2 of 3)" in s for s in said), said
    assert res.spread_ms <= 0.5 and res.clicks == 8 and res.taps == 8
    assert abs(res.offset_ms - 4.0) < 0.3


class BeatFront:
    """A player tapping by rhythm: hears the first click, then taps ``delay_ms`` after each
    click on the beat it keeps from that one (it does not follow a gap in the sound).  Stamps
    are exact (the NullOutput's clock is ``perf_counter``)."""

    name = "robot"

    def __init__(self, out, clicks_frames, interval_ms, delay_ms=4.0):
        self.out, self.clicks = out, clicks_frames
        self.interval, self.delay = interval_ms / 1000, delay_ms / 1000
        self.due = None
        self.messages = []

    def poll(self, timeout):
        import time

        from reader.input.taps import TapEvent

        time.sleep(timeout)
        cursor = self.out._cursor
        heard = self.out.frame_now()
        if cursor is None or heard is None:
            return []
        if self.due is None:
            first = cursor.stream_frame_at(self.clicks[0])
            if first is None or heard < first:
                return []
            frames, times = self.out.timeline.pairs()
            k = max(0, int(np.searchsorted(frames, first, side="right")) - 1)
            t0 = times[k] + (first - frames[k]) / 48000
            self.due = [t0 + i * self.interval + self.delay for i in range(len(self.clicks))]
        now = time.perf_counter()
        out = []
        while self.due and self.due[0] <= now:
            out.append(TapEvent(round(self.due.pop(0) * 1e9), "key", char=" "))
        if not self.due and cursor.plan_frame_at(int(heard)) < self.clicks[0]:
            self.due = None  # a new run: its first click is still to come
        return out

    def tapped(self, n):
        pass

    def message(self, text):
        self.messages.append(text)


def test_taps_after_a_gap_in_the_sound_are_not_used(monkeypatch):
    """The sound stalls 80 ms during the clicks (seen on a PulseAudio null sink under load: the
    stream stalls, then plays on later).  A player tapping by rhythm taps the old beat, 80 ms
    early, from there on; a calibration that used those taps found about -76 ms with a tiny
    spread (the old karuta calibrate, seen twice: "-77.5 ms").  The taps from the gap on are
    left out; a run with too few clicks before its gap is made again."""
    from audio.output import NullOutput
    from reader.drills import calibrate as cal

    out = NullOutput()
    lead = 300
    _, _, clicks = click_track(48000, count=12, interval_ms=200, lead_ms=lead)
    # the first run stalls after click 3 (too few before it: once more), the second after 10
    Stall(out, ms=80, at=[clicks[2] + 4800, clicks[9] + 4800])
    front = BeatFront(out, clicks, interval_ms=200)
    monkeypatch.setattr(cal, "click_track",
                        lambda rate, count, interval_ms: click_track(rate, count, interval_ms, lead))
    said = []
    res = cal.run_calibration(out, front, count=12, interval_ms=200, echo=said.append,
                              attempts=3, max_spread_ms=0.5)
    assert any("the sound had a gap before click 4: once more (2 of 3)" in s for s in said), said
    if res.moved_at == 11:
        assert res.taps == 10, res
    else:  # (this machine stalled the sound itself before click 11 -- a real gap, seen, its
        # taps left out too, as a busy laptop's: a hog run at load 20 had one before click 7)
        assert 4 <= res.moved_at < 11 and res.taps == res.moved_at - 1, res
    assert abs(res.offset_ms - 4.0) < 0.3, res
    assert f"the sound had a gap before click {res.moved_at}" in res.describe()


def test_the_sound_steady_throughout_uses_every_click():
    """No gap: ``timing_moved`` finds nothing on a steady line, and finds a jump where one
    is (by the click after it)."""
    from audio.output.timeline import Timeline
    from reader.drills.calibrate import timing_moved

    tl = Timeline(48000)
    for k in range(400):
        tl.record(k * 480, 100.0 + k * 0.01 + (0.05 if k >= 250 else 0.0))
    clicks = [4800 + i * 14400 for i in range(12)]  # every 0.3 s from 0.1 s
    assert timing_moved(tl, clicks[:8], 48000) is None
    # the jump at frame 120000 (2.5 s) lies between click 8 (2.3 s) and click 9 (2.6 s)
    assert timing_moved(tl, clicks, 48000) == 9


def test_history_per_device_shows_a_drift(tmp_path):
    from reader.drills.calibrate import describe_history

    store = CalibrationStore(tmp_path / "c.json")
    for off in (3.0, 3.2, 5.9):
        store.save("sounddevice:x", CalibrationResult(off, 20, 0, 0.2, clicks=20))
    e = store.get("sounddevice:x")
    assert [h["offset_ms"] for h in e["history"]] == [3.0, 3.2, 5.9]
    assert describe_history(e) == ("history: 3 calibrations, offsets +3.0 to +5.9 ms "
                                   "(range 2.9 ms; last +3.0, +3.2, +5.9)")
    # a file written before the history was kept: its entry starts the history
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"version": 1, "devices": {"d": {"offset_ms": 1.5, "taps": 9,
                                                              "spread_ms": 0.4}}}))
    s2 = CalibrationStore(old)
    s2.save("d", CalibrationResult(2.0, 10, 0, 0.3))
    assert [h["offset_ms"] for h in s2.get("d")["history"]] == [1.5, 2.0]


def test_show_with_nothing_saved(tmp_path):
    r = run_inproc("calibrate", "--show", env={"KARUTA_CONFIG_DIR": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.startswith("no calibrations saved yet")


def test_two_calibrations_at_once_keep_both_devices(tmp_path):
    """A second ``calibrate`` saving while the first is saving (the test holds the file's
    lock and saves device a meanwhile): the second waits, reads a, and adds b."""
    import sys
    import time

    from reader.base.files import locked

    path = tmp_path / "calibration.json"
    code = ("import sys; from reader.drills.calibrate import CalibrationStore, CalibrationResult; "
            f"CalibrationStore(sys.argv[1]).save('b:dev', CalibrationResult(2.0, 5, 0, 0.1))")
    with locked(path):
        p = subprocess.Popen([sys.executable, "-c", code, str(path)])
        time.sleep(2.0)  # long enough to have read and written, were it not waiting
        assert p.poll() is None, "the second save did not wait"
        CalibrationStore(path)._save("a:dev", CalibrationResult(1.0, 5, 0, 0.1),
                                     input="terminal", when=None)
    assert p.wait(timeout=60) == 0
    assert CalibrationStore(path).load().keys() == {"a:dev", "b:dev"}
