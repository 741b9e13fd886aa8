"""``karuta voice record``: the clip order and resume logic, take analysis, and the whole
command end to end in tmux (a real tty) recording from a PulseAudio null sink's monitor while
the test plays tones into the sink with ``pacat``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from audio_fixtures import REPO, pulse_server, require_tool  # noqa: F401
from cli_run import run_inproc
from tmux_driver import karuta_argv
from reader.base.errors import KarutaError, SelectionError
from reader.voices.recorder import Clip, RecordSession, clip_order, parse_poems

RATE = 48000
TONE_S = 1.1  # the tones the end-to-end test plays into the sink, s


# ---------------------------------------------------------------------------- order and resume
def test_clip_order_default_is_joka_then_the_100():
    order = clip_order()
    assert len(order) == 202
    assert order[:4] == [Clip("joka", "kami"), Clip("joka", "shimo"), Clip("1", "kami"), Clip("1", "shimo")]
    assert order[-1] == Clip("100", "shimo")
    assert [c.filename for c in order[:3]] == ["000_1.flac", "000_2.flac", "001_1.flac"]
    assert order[2].kanji.startswith("秋の田の") and order[2].reading.startswith("あきのたの")
    assert order[0].label == "序歌 上の句" and order[3].label == "1 下の句"


def test_parse_poems():
    assert parse_poems(None) == (True, tuple(range(1, 101)))
    assert parse_poems("3,1") == (False, (1, 3))
    assert parse_poems("joka, 5-6") == (True, (5, 6))
    assert parse_poems("序歌") == (True, ())
    assert [c.key for c in clip_order(*reversed(parse_poems("joka,2")))] == ["joka", "joka", "2", "2"]
    for bad in ("101", "nonsense", " , "):
        with pytest.raises(SelectionError):
            parse_poems(bad)


def _take(path: Path, seconds=0.2):
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, np.full(int(seconds * RATE), 0.1, np.float32), RATE, format="FLAC")


def test_session_starts_at_first_missing_and_walks(tmp_path):
    folder = tmp_path / "st"
    clips = clip_order((1, 2, 3), joka=True)
    for name in ("000_1.flac", "000_2.flac", "001_1.flac", "002_2.flac"):
        _take(folder / name)
    s = RecordSession("me", clips, folder)
    assert s.current == Clip("1", "shimo")  # the first clip with no take
    assert s.states[Clip("1", "kami")] == "saved" and s.states[Clip("1", "shimo")] == "missing"
    assert s.counts() == (4, 8)
    assert s.back() and s.current == Clip("1", "kami")  # everything stays reachable
    while s.next():
        pass
    assert s.current == Clip("3", "shimo") and not s.next()
    s.index = 0
    assert not s.back() and s.current == Clip("joka", "kami")

    only = RecordSession("me", clips, folder, only_missing=True)
    assert only.clips == [Clip("1", "shimo"), Clip("2", "kami"), Clip("3", "kami"), Clip("3", "shimo")]
    assert only.current == Clip("1", "shimo")
    only.save(Clip("1", "shimo"), np.full(RATE, 0.2, np.float32), ["too short"])
    assert only.states[Clip("1", "shimo")] == "recorded" and only.takes[Clip("1", "shimo")] == 1
    assert (folder / "001_2.flac").is_file() and not list(folder.glob("*.tmp"))
    x, rate = sf.read(folder / "001_2.flac")
    assert rate == RATE and x.ndim == 1 and len(x) == RATE
    # the next session continues after it
    again = RecordSession("me", clips, folder, only_missing=True)
    assert again.current == Clip("2", "kami") and len(again.clips) == 3
    # all done: an --only-missing walk is empty; a full walk starts at the beginning
    for c in clips:
        _take(folder / c.filename)
    assert RecordSession("me", clips, folder, only_missing=True).done
    full = RecordSession("me", clips, folder)
    assert not full.done and full.current == clips[0]


def test_a_retake_keeps_every_earlier_take_beside_it(tmp_path):
    """Three takes of one clip: the newest is the take, the two before are NNN_H.take1/2.flac
    (oldest first), which the pack import does not read as clips."""
    from audio.pack.scan import scan_source

    folder = tmp_path / "mine"
    s = RecordSession("mine", clip_order((1,), joka=False), folder)
    c = s.current
    takes = [np.full(4800, v, np.float32) for v in (0.1, 0.2, 0.3)]
    for x in takes:
        s.save(c, x)
    assert s.earlier[c] == folder / "001_1.take2.flac"

    def level(name):
        return float(np.mean(sf.read(folder / name, dtype="float32")[0]))

    assert level("001_1.flac") == pytest.approx(0.3, abs=1e-3)
    assert level("001_1.take1.flac") == pytest.approx(0.1, abs=1e-3)
    assert level("001_1.take2.flac") == pytest.approx(0.2, abs=1e-3)
    src = scan_source(folder)
    assert set(src.files) == {("1", "kami")} and not src.problems, src.problems
    # a take that cannot be saved leaves the one in place and no extra copy
    (folder / "001_1.flac.tmp").mkdir()  # save_take's temporary name is taken
    with pytest.raises(KarutaError):
        s.save(c, np.full(4800, 0.4, np.float32))
    assert level("001_1.flac") == pytest.approx(0.3, abs=1e-3)
    assert not (folder / "001_1.take3.flac").exists()


def test_session_names_and_foreign_packs(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
    for bad in ("", "a/b", "synth", "tone", "../x", "has space"):
        with pytest.raises(KarutaError):
            RecordSession(bad, clip_order((1,)))
    s = RecordSession("mine", clip_order((1,)))
    assert s.folder == tmp_path / "data" / "recordings" / "mine"
    s.check_pack_owner()  # no pack yet: fine
    pack = tmp_path / "data" / "voices" / "mine"
    pack.mkdir(parents=True)
    (pack / "pack.json").write_text(json.dumps({"clips": {}, "imported_from": "/somewhere/else"}))
    with pytest.raises(KarutaError, match="imported from /somewhere/else"):
        s.check_pack_owner()


# ---------------------------------------------------------------------------- takes
def _tone(seconds, freq=300.0, amp=0.3, lead=0.5, tail=0.5):
    t = np.arange(int(seconds * RATE)) / RATE
    y = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.concatenate([np.zeros(int(lead * RATE), np.float32), y,
                           np.zeros(int(tail * RATE), np.float32)])


def test_analyse_trims_and_warns():
    from audio.record import analyse

    rng = np.random.default_rng(1)
    x = _tone(1.5) + rng.normal(0, 1e-4, int(2.5 * RATE)).astype(np.float32)
    t = analyse(x)
    assert t.warnings == [] and t.usable
    assert abs(t.start - int(0.5 * RATE)) < RATE * 0.005
    assert t.seconds == pytest.approx(1.5, abs=0.01)
    loud = analyse(np.clip(_tone(1.5, amp=1.5), -1, 1))
    assert "too loud" in loud.warnings and loud.clipped > 100 and loud.usable
    quiet = analyse(rng.normal(0, 1e-4, RATE * 2).astype(np.float32))
    assert quiet.warnings == ["nothing heard"] and not quiet.usable
    assert analyse(np.zeros(RATE, np.float32)).warnings == ["nothing heard"]
    assert analyse(np.zeros(0, np.float32)).warnings == ["nothing heard"]
    assert "too short" in analyse(_tone(0.4)).warnings


class _LateStream:
    """An input stream whose blocks arrive ``latency`` s after they were captured (the
    device's input latency): ``advance`` moves its clock and calls the callback with what was
    captured by then, each block with its capture time, as PortAudio does."""

    def __init__(self, callback, latency=0.1, block=480):
        self.callback, self.latency, self.block = callback, latency, block
        self.time, self.captured = 100.0, 100.0  # stream clock; capture time of the next block
        self.signal = lambda t: np.zeros_like(t)  # what the microphone hears at time t

    def advance(self, seconds):
        from types import SimpleNamespace

        self.time += seconds
        while self.captured + self.block / RATE <= self.time - self.latency:
            t = self.captured + np.arange(self.block) / RATE
            self.callback(self.signal(t).astype(np.float32)[:, None], self.block,
                          SimpleNamespace(inputBufferAdcTime=self.captured),
                          SimpleNamespace(input_overflow=False))
            self.captured += self.block / RATE

    def abort(self):
        pass

    def close(self):
        pass


def test_a_take_holds_what_was_heard_between_the_two_keys():
    """The device delivers sound ``latency`` after hearing it: a take started by a key leaves
    out what was heard before the key (still on its way: the end of a playback), and a take
    stopped by a key keeps what was heard up to it (a clean CI run once lost a tone's last
    39 ms) — and nothing after."""
    import threading

    from audio.record import Microphone, analyse

    streams = []
    mic = Microphone(open_stream=lambda cb: streams.append(_LateStream(cb)) or streams[0])
    dev = streams[0]
    # heard: a playback's end until 100.5, silence, a 1.2 s tone from 101.0 to 102.2, silence
    dev.signal = lambda t: np.where((t < 100.5) | ((t >= 101.0) & (t < 102.2)), 0.3, 0.0) \
        * np.sin(2 * np.pi * 440 * t)
    dev.advance(0.52)
    mic.pump()
    mic.start_take()  # the key at 100.52: the playback's last 20 ms are still on their way
    dev.advance(102.2 - dev.time)  # the key that stops it right at the tone's end
    rest = threading.Timer(0.05, dev.advance, (0.3,))  # the rest arrives a moment later
    rest.start()
    x = mic.stop_take()
    rest.join()
    assert len(x) == pytest.approx((102.2 - 100.52) * RATE, abs=2)
    take = analyse(x)
    assert take.warnings == [] and take.seconds == pytest.approx(1.2, abs=0.005)
    assert take.start == pytest.approx((101.0 - 100.52) * RATE, abs=RATE * 0.005)
    # a silent take started right after a playback hears nothing of it
    end = dev.time
    dev.signal = lambda t: np.where(t < end, 0.3, 0.0) * np.sin(2 * np.pi * 440 * t)
    dev.advance(0.05)
    mic.pump()
    mic.start_take()
    dev.advance(1.0)
    assert analyse(mic.stop_take()).warnings == ["nothing heard"]
    mic.close()


def test_the_terminal_does_not_save_a_take_with_nothing_heard_and_keeps_a_too_loud_one(tmp_path):
    """``run_terminal`` (the recorder's screen) on a microphone whose device is driven by the
    test: a take of silence is said and not saved; a clipped take is saved, warned, and the
    retake suggested.  (The real microphone and tty: the tmux test below.)"""
    import io
    import threading

    from audio.record import Microphone
    from reader.voices.recorder import run_terminal
    from waits import wait_until

    streams = []
    mic = Microphone(open_stream=lambda cb: streams.append(_LateStream(cb)) or streams[0])
    dev = streams[0]
    session = RecordSession("mine", clip_order((1,), joka=False), tmp_path / "mine")
    out = io.StringIO()
    r, w = os.pipe()
    done = []

    def take(signal, seconds):
        dev.signal = signal
        os.write(w, b" ")  # start
        wait_until(lambda: mic.recording, 10, "the take to start")
        dev.advance(seconds)
        os.write(w, b" ")  # stop: what was heard up to the key arrives a moment later
        for _ in range(20):
            time.sleep(0.02)
            dev.advance(0.02)
        wait_until(lambda: not mic.recording, 10, "the take to stop")

    def player():
        try:
            wait_until(lambda: "[1/2] 1 上の句" in out.getvalue(), 10, "the first clip")
            take(lambda t: np.zeros_like(t), 1.5)
            wait_until(lambda: "nothing heard" in out.getvalue(), 10, "nothing heard")
            take(lambda t: np.where(t < dev.time - 0.3, 1.0, 0.0) * np.sign(np.sin(2 * np.pi * 440 * t)), 1.8)
            wait_until(lambda: "take 1 saved" in out.getvalue(), 10, "the take saved")
        finally:
            os.write(w, b"q")
            done.append(True)

    th = threading.Thread(target=player, daemon=True)
    th.start()
    with os.fdopen(r, "rb", buffering=0) as keys:
        run_terminal(session, mic, stop_after=0, stdin=keys, stdout=out, full_screen=False)
    th.join(10)
    os.close(w)
    mic.close()
    text = out.getvalue()
    assert done and "1 上の句: nothing heard (" in text and "not saved, press r to retry" in text
    saved = text[text.index("take 1 saved"):]
    assert "⚠ too loud: move back or lower the gain, r to retake" in saved.splitlines()[0]
    assert session.states[Clip("1", "kami")] == "recorded"
    assert session.warnings[Clip("1", "kami")][0] == "too loud"
    y, _ = sf.read(tmp_path / "mine" / "001_1.flac")
    assert np.abs(y).max() > 0.99  # kept as it was heard


def test_meter_bar():
    from audio.record import db, meter_bar

    assert meter_bar(-90, 10) == "·" * 10 and meter_bar(0, 10) == "█" * 10
    assert meter_bar(-30, 10) == "█" * 5 + "·" * 5
    assert db(1.0) == 0.0 and db(0.0) == -90.0


# ---------------------------------------------------------------------------- end to end

def _play(server, path: Path):
    """Play a WAV into the null sink (the recorder hears it on the sink's monitor)."""
    subprocess.run([require_tool("pacat", "pulseaudio-utils"), "-d", server.sink, "--file-format=wav",
                    str(path)], env=server.env, check=True, timeout=20)


def _heard_past_the_end(tmux, margin_s: float = 0.4, timeout: float = 30.0) -> None:
    """Wait until the take on screen has grown ``margin_s`` past what it held when the sound
    had been played: a take stopped by key then holds all of it, however far the capture
    runs behind the sink (0.14 s of the tone was cut at load 18 when the key came at once)."""
    rec = re.compile(r"● REC\s+([0-9.]+) s")
    first = None
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = rec.findall(tmux.screen())
        if found:
            now = float(found[-1])
            first = now if first is None else first
            if now >= first + margin_s:
                return
        time.sleep(0.05)
    pytest.fail(f"the take did not grow {margin_s} s:\n{tmux.screen()[-2000:]}", pytrace=False)


def _write_tone(path: Path, freq: float, seconds: float, lead: float, amp=0.3):
    sf.write(path, _tone(seconds, freq, amp, lead=lead, tail=0.1), RATE, subtype="PCM_16")
    return path


def _freq(x) -> float:
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spec) * RATE / len(x))


@pytest.mark.realtime
def test_record_in_tmux_end_to_end(pulse_server, tmux, tmp_path):
    subprocess.run(["pactl", "set-default-source", f"{pulse_server.sink}.monitor"],
                   env=pulse_server.env, check=True)
    data = tmp_path / "data"
    env = {"KARUTA_DATA_DIR": str(data), "KARUTA_CONFIG_DIR": str(tmp_path / "cfg"),
           "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"],
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"], "HOME": pulse_server.env["HOME"]}
    # tones just over the pack's 1 s minimum, after 0.3 s of silence (trimmed off)
    tones = {f: _write_tone(tmp_path / f"t{f}.wav", f, seconds=TONE_S, lead=0.3)
             for f in (300, 500, 700, 900, 1100)}
    stage = data / "recordings" / "mine"

    # (takes stop by themselves after 3 s of silence: the one stopped by key below waits
    # 0.4 s past the tone first -- at load 20, 1 s of silence passed before the key came)
    tmux.start(karuta_argv("voice", "record", "mine", "--poems", "1-2", "--no-align",
                           "--stop-after", "3"), env)
    s = tmux.wait_for("clip 1/4")
    assert "秋の田の かりほの庵の 苫をあらみ" in s and "あきのたの" in s and "level |" in s

    # 1 上の句: a take that stops by itself after the trailing silence, then a retake
    tmux.keys("Space")
    tmux.wait_for("● REC")
    _play(pulse_server, tones[300])
    tmux.wait_for("1 上の句: take 1 saved")
    tmux.keys("r")
    tmux.wait_for("again")
    _play(pulse_server, tones[500])
    s = tmux.wait_for("1 上の句: take 2 saved")
    assert "takes 1/4" in s
    # the first take is kept beside it, and the line says how to get it back
    assert "the earlier take: 001_1.take1.flac (rename to 001_1.flac to restore)" in \
        "".join(s.splitlines()), s
    y, _ = sf.read(stage / "001_1.take1.flac")
    assert _freq(y) == pytest.approx(300, abs=5)
    tmux.keys("p")  # play it back on the default output (the null sink)
    s = tmux.wait_for("playing 1 上の句")
    assert "cannot play" not in s
    x, rate = sf.read(stage / "001_1.flac")
    assert rate == RATE and x.ndim == 1
    assert _freq(x) == pytest.approx(500, abs=5)  # the retake replaced the first take

    # → 1 下の句: a take started and stopped by key (a take with nothing heard is not saved,
    # a too loud one is warned and kept: the session and ``analyse``, tested above)
    tmux.keys("Right")
    tmux.wait_for("わが衣手は")
    tmux.keys("Enter")
    tmux.wait_for("● REC")
    _play(pulse_server, tones[700])
    _heard_past_the_end(tmux)  # (on a busy machine the capture runs behind the sink)
    tmux.keys("Enter")
    s = tmux.wait_for("1 下の句: take 1 saved")
    assert "dBFS, stopped)" in "".join(s.splitlines()), s  # (by the key, not by the silence)

    # n → 2 上の句; back and forth keeps the takes
    tmux.keys("n")
    tmux.wait_for("春過ぎて")
    tmux.keys("Space")
    tmux.wait_for("● REC")
    _play(pulse_server, tones[900])
    tmux.wait_for("2 上の句: take 1 saved")
    tmux.keys("b")
    tmux.wait_for("clip 2/4")
    tmux.keys("q")
    s = tmux.wait_for("EXIT=", timeout=30)
    assert "EXIT=0" in s
    assert "4 takes saved this session; 3 of 4 clips have a take" in s
    assert "voice 'mine': 3 of 202 clips" in s
    assert "next: 2 下の句; continue with: karuta voice record mine --only-missing" in s

    # the pack: trimmed 48 kHz mono clips of what was played, the retakes kept
    pack = data / "voices" / "mine"
    meta = json.loads((pack / "pack.json").read_text())
    assert sorted(meta["clips"]) == ["1.kami", "1.shimo", "2.kami"]
    for key, freq in (("1.kami", 500), ("1.shimo", 700), ("2.kami", 900)):
        y, rate = sf.read(pack / meta["clips"][key]["file"], dtype="float32")
        assert rate == RATE and y.ndim == 1
        assert _freq(y) == pytest.approx(freq, abs=5), key
        # the 0.3 s of silence before the tone is gone: sound from the first 10 ms on and the
        # clip as long as the tone within 20 ms
        assert np.sqrt(np.mean(y[:480] ** 2)) > 0.1, key
        assert len(y) / RATE == pytest.approx(TONE_S, abs=0.02), key
    res = run_inproc("voice", "check", "mine", env=env)  # (a pure command: in-process)
    # missing and damaged clips are problems: voice check says so with exit 1 (issue 12)
    assert res.returncode == 1 and res.stderr.startswith("karuta: voice 'mine' has "), res.stderr
    assert "voice 'mine': 3 of 202 clips usable" in res.stdout
    for word in ("silent", "clipped", "too short", "unreadable"):
        assert word not in res.stdout, res.stdout

    # again with --only-missing: starts at 2 下の句, the only clip left; n past it ends
    tmux.start(karuta_argv("voice", "record", "mine", "--poems", "1-2", "--only-missing",
                           "--no-align", "--stop-after", "0.5"), env)
    s = tmux.wait_for("clip 1/1")
    assert "2 下の句" in s and "衣ほすてふ 天の香具山" in s
    tmux.keys("Space")
    tmux.wait_for("● REC")
    _play(pulse_server, tones[1100])
    tmux.wait_for("2 下の句: take 1 saved")
    tmux.keys("n")
    s = tmux.wait_for("EXIT=", timeout=30)
    assert "EXIT=0" in s and "4 of 4 clips have a take" in s and "still to record" not in s
    meta = json.loads((pack / "pack.json").read_text())
    assert sorted(meta["clips"]) == ["1.kami", "1.shimo", "2.kami", "2.shimo"]
    y, _ = sf.read(pack / meta["clips"]["2.shimo"]["file"], dtype="float32")
    assert _freq(y) == pytest.approx(1100, abs=5)


def test_no_microphone_is_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PULSE_SERVER", "PULSE_SOURCE")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(tmp_path / "none"), PYTHONPATH=str(REPO),
               KARUTA_DATA_DIR=str(tmp_path / "data"), PULSE_SERVER=f"unix:{tmp_path}/no-such-socket")
    res = subprocess.run(karuta_argv("voice", "record", "mine"), env=env, cwd=REPO,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stderr.startswith("karuta: no microphone found: ") and res.stderr.count("\n") == 1
    assert not (tmp_path / "data").exists()  # nothing created


def test_bad_options_are_one_line(tmp_path):
    # (in-process: refused before a microphone is opened; the entry point's one-line refusal:
    # test_no_microphone_is_one_line)
    env = {"KARUTA_DATA_DIR": str(tmp_path / "data")}
    for argv, text in ((["--poems", "101", "mine"], "no poem 101"),
                       (["--stop-after", "-1", "mine"], "--stop-after"),
                       (["--poems", "1", "a/b"], "bad voice name")):
        argv = ["voice", "record", *argv]
        res = run_inproc(*argv, env=env)
        assert res.returncode == 1, (argv, res.stderr)
        assert res.stderr.count("\n") == 1 and text in res.stderr, res.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.realtime
def test_takes_left_by_a_killed_session_become_the_pack(pulse_server, tmp_path):
    """Takes on disk that never made it into the pack (the recorder was killed) are built
    into it by the next run, which starts at the first clip with no take."""
    data = tmp_path / "data"
    stage = data / "recordings" / "kept"
    stage.mkdir(parents=True)
    sf.write(stage / "001_1.flac", _tone(1.2, 440, lead=0, tail=0), RATE, subtype="PCM_24")
    env = {**os.environ, "PYTHONPATH": str(REPO), "KARUTA_DATA_DIR": str(data),
           "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"],
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"]}
    # stdin at its end: the session opens the microphone, shows 1 下の句 and quits at once
    res = subprocess.run(karuta_argv("voice", "record", "kept", "--poems", "1", "--no-align"),
                         env=env, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "[2/2] 1 下の句" in res.stdout  # plain output on a pipe: one line per event
    assert "0 takes saved this session; 1 of 2 clips have a take" in res.stdout
    assert "voice 'kept': 1 of 202 clips" in res.stdout
    meta = json.loads((data / "voices" / "kept" / "pack.json").read_text())
    assert list(meta["clips"]) == ["1.kami"]
    assert meta["imported_from"] == str(stage.resolve())
