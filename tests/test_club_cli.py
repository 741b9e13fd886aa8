"""``karuta read --live`` / ``--window`` / ``--resume`` end to end, as a club runs them.

  - the terminal screen in tmux (a real tty; keys by ``send-keys``), audio in real time on a
    PulseAudio null sink (``--device pulse``): one session run three times (pedal keys, hold,
    next, repeat, step back, Ctrl-C; ``--resume``; ``kill -9`` mid-reading then ``--resume``
    continues at the right card, same order).  What each key does card by card, and the hold
    in goshiki, are tested on the pure session in milliseconds (tests/test_club.py);
  - the window under Xvfb (``-displayfd``) driven by xdotool, screenshots not blank;
  - the ALSA file capture (tests/audio_fixtures.ASOUNDRC): with ``--auto`` and a short
    ``--memorize`` the capture holds the chimes and then exactly the rendered reading;
  - goshiki runs on its own; one-line errors (no display, corrupt/missing session).
"""
from __future__ import annotations

from cli_run import one_line_error, run_inproc, run_karuta  # noqa: F401

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from audio_fixtures import ASOUNDRC, REPO, find_lead_in, pulse_server, read_wav_capture, require_tool  # noqa: F401
from tmux_driver import karuta_argv
from waits import wait_until
from testbed.x_driver import colours, screenshot_when, window_of

FAST = ["--voice", "tone", "--speed", "4", "--no-joka", "--ma", "0.1", "--take", "0.2",
        "--yoin", "0.1"]


def karuta(*args, env=None, timeout=120):
    return run_karuta(*args, env=env, timeout=timeout)


def plan_of(*args) -> dict:
    """The reading's plan (in this process: ``run_inproc``; what reads aloud goes through the
    installed command)."""
    res = run_inproc("plan", "--json", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def session(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@pytest.fixture
def capture_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    wav = home / "capture.wav"
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=wav))
    return home, wav


def pulse_env(tmp_path) -> dict:
    return {"PULSE_SERVER": os.environ["PULSE_SERVER"], "XDG_RUNTIME_DIR": os.environ["XDG_RUNTIME_DIR"],
            "KARUTA_DATA_DIR": str(tmp_path / "data"), "TERM": "xterm"}


#: the pedal's keys both club terminal tests set (``--resume`` alone must keep them)
PEDAL = ["--next-keys", "b,pagedown", "--back-keys", "x"]


@pytest.mark.realtime
def test_terminal_keys_sound_and_ctrl_c(pulse_server, tmux, tmp_path):
    """The club terminal end to end (what each key does, card by card: tests/test_club.py): a
    pedal's keys (``--next-keys b,pagedown --back-keys x``), hold, next (heard on the sink),
    repeat, back; Ctrl-C saves, and the log shows the cards read again.  (Kill -9 and
    ``--resume``: the next test; one test ran both, 22 s, the longest of the suite but one.)"""
    sess = tmp_path / "data" / "sessions" / "last.json"  # the default place (KARUTA_DATA_DIR)
    args = ["--seed", "8", "--cards", "5", *FAST]
    env = pulse_env(tmp_path)
    tmux.start([*karuta_argv(), "read", "--live", "--memorize", "0", "--device", "pulse",
                *PEDAL, *args], env)
    plan = plan_of(*args)  # while the app starts
    order = plan["order"]
    kami = {s["poem"]: s for s in plan["segments"] if s["kind"] == "kami"}
    s = tmux.wait_for("card 1/5", "waiting for take", "read 1 · left 4")
    assert kami[order[0]]["kimariji"] in s and "at read time" in s and f"[{order[0]:3d}]" in s
    assert "keys: b/PgDn next" in s and "x back a card" in s
    tmux.keys("p")
    tmux.wait_for("● held")
    tmux.keys("p")
    # an ear on the sink from before the key (parec takes a moment to start on a busy machine)
    with concurrent.futures.ThreadPoolExecutor(1) as ear:
        heard = ear.submit(pulse_server.listen, 3.0)
        time.sleep(0.5)
        tmux.keys("b")  # card 1's 下の句, 間, card 2's 上の句: 2.6 s of sound
        s = tmux.wait_for("card 2/5", "waiting for take", "read 2 · left 3")
        assert heard.result().any(), "card 2 was not heard on the sink"
    tmux.keys("r")
    tmux.wait_for("repeating 下の句")
    tmux.wait_for("card 2/5", "waiting for take")
    tmux.keys("x")
    tmux.wait_for("card 1/5", "waiting for take")
    assert session(sess)["position"] == 1
    tmux.keys("PageDown")
    tmux.wait_for("card 2/5", "waiting for take")
    tmux.keys("C-c")
    s = tmux.wait_for("EXIT=")
    assert "EXIT=0" in s and "stopped at card 3/5 (saved)" in s
    assert "karuta: audio" not in s  # the reader stopped the sound: no count read as an error
    data = session(sess)
    assert data["position"] == 2 and data["order"] == order and not data["finished"]
    assert [e["card"] for e in data["log"]] == [1, 2, 1, 2]
    for e in data["log"]:
        assert e["kimariji"] == kami[e["poem"]]["kimariji"]
        assert e["kimariji_sound"] == kami[e["poem"]]["kimariji_sound"]
    # the log of the last session, on request: cards 1 and 2 were read again
    res = run_inproc("read", "--show-log", env=env)
    assert res.returncode == 0 and len([ln for ln in res.stdout.splitlines() if "(again)" in ln]) == 2


@pytest.mark.realtime
def test_terminal_resume_keeps_the_keys_and_after_kill_9_reads_the_rest_in_order(
        pulse_server, tmux, tmp_path):
    """Ctrl-C saves; ``--resume`` alone keeps the pedal's keys (PageDown moves on);
    ``kill -9`` mid-上の句 of the resumed run, then ``--resume`` reads the rest in the same
    order to the end; a finished session resumes to nothing."""
    sess = tmp_path / "data" / "sessions" / "last.json"
    args = ["--seed", "8", "--cards", "4", *FAST]
    env = pulse_env(tmp_path)
    tmux.start([*karuta_argv(), "read", "--live", "--memorize", "0", "--device", "pulse",
                *PEDAL, *args], env)
    order = plan_of(*args)["order"]  # while the app starts
    tmux.wait_for("card 1/4", "waiting for take")
    tmux.keys("C-c")
    s = tmux.wait_for("EXIT=")
    assert "EXIT=0" in s and "stopped at card 2/4 (saved)" in s
    # --resume alone: the pedal's keys were saved with the session
    tmux.start([*karuta_argv(), "read", "--resume", "--device", "pulse"], env)
    s = tmux.wait_for("card 2/4", "waiting for take")
    assert f"[{order[1]:3d}]" in s and "keys: b/PgDn next" in s and "x back a card" in s
    tmux.keys("PageDown")
    tmux.wait_for("card 3/4")  # card 3's 上の句 is being read: cut it off
    os.kill(tmux.app_pid(), 9)
    tmux.wait_for("EXIT=137")
    data = session(sess)
    # killed during card 3's 上の句 (on a busy machine it may have been heard out: then 3 read)
    k = data["position"]
    assert k in (2, 3) and data["order"] == order
    assert [e["card"] for e in data["log"]] == [*range(1, k + 1)]
    # resume: same order, from the next card's 間 (card 3 again if it was cut off), to the end
    tmux.start([*karuta_argv(), "read", "--resume", "--device", "pulse"], env)
    s = tmux.wait_for(f"card {k + 1}/4", "waiting for take")
    assert f"[{order[k]:3d}]" in s and f"read {k + 1} · left {3 - k}" in s
    for c in range(k + 2, 5):
        tmux.keys("b")
        tmux.wait_for(f"card {c}/4", "waiting for take")
    tmux.keys("b")
    s = tmux.wait_for("EXIT=0", timeout=30)
    assert f"resuming at card {k + 1}/4" in s and "finished: 4 of 4 cards read" in s
    data = session(sess)
    assert data["finished"] and data["position"] == 4
    assert [e["poem"] for e in data["log"]] == order
    # (in this process: the installed command's runs above are the entry point's)
    res = run_inproc("read", "--resume", "--device", "pulse", env=env)
    assert res.returncode == 0 and "this session is finished" in res.stdout


# ---------------------------------------------------------------------------- ALSA capture
APPEND_ASOUNDRC = """\
pcm.!default {{
    type plug
    slave {{ pcm "karuta_capture"; format S16_LE; rate 48000; channels 1 }}
}}
pcm.karuta_capture {{
    type file
    slave.pcm "null"
    file "|cat >> {raw}"
    format "raw"
}}
"""


def _tone_level(x: np.ndarray, freq: float, rate: int = 48000) -> float:
    """How much of ``freq`` is in ``x`` (the magnitude of its one DFT bin, per sample)."""
    t = np.arange(x.shape[0]) / rate
    return float(abs(np.dot(x.astype(np.float64), np.exp(-2j * np.pi * freq * t)))) / max(1, x.shape[0])


def test_auto_club_plays_chimes_then_exactly_the_reading(tmp_path):
    """The real memorisation path (a 1.5 s timer with a signal at 0.6 s): the capture holds the
    two chimes, then sample for sample what ``karuta render`` writes.  (Each chime is its
    own stream: this ALSA ``file`` capture appends raw samples instead of rewriting a WAV.)"""
    home = tmp_path / "home"
    home.mkdir()
    raw = home / "capture.raw"
    (home / ".asoundrc").write_text(APPEND_ASOUNDRC.format(raw=raw))
    args = ["--seed", "5", "--cards", "2", *FAST]
    sess = tmp_path / "s.json"
    t0 = time.monotonic()
    res = karuta("read", "--live", "--auto", "--memorize", "0.025", "--signals", "0.01",
                 "--session", str(sess), *args, env={"HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 >= 1.5
    assert "finished: 2 of 2 cards read" in res.stdout
    ref_path = tmp_path / "ref.wav"
    assert run_inproc("render", "--out", str(ref_path), *args).returncode == 0
    import soundfile as sf

    ref, _ = sf.read(ref_path, dtype="int16")
    time.sleep(0.3)  # the last ``cat`` flushes
    got = np.fromfile(raw, dtype=np.int16)
    off = find_lead_in(got, ref)
    assert np.array_equal(got[off:off + len(ref)], ref)
    before = got[:off]
    loud = np.flatnonzero(np.abs(before) > 3000)
    assert loud.size and loud[-1] - loud[0] > 0.5 * 48000, "two chimes before the jo-ka/first card"
    # each chime by its pitch (the end chime alone is longer than 0.5 s): the signal's two
    # beeps at 1318.5 Hz, the end's falling bell down to 523.25 Hz; 900 Hz is in neither
    level = {f: _tone_level(before, f) for f in (1318.5, 523.25, 900.0)}
    assert level[1318.5] > 10 * level[900.0], ("the signal chime was not heard", level)
    assert level[523.25] > 10 * level[900.0], ("the end chime was not heard", level)
    assert session(sess)["finished"]


def test_goshiki_runs_on_its_own_and_saves_every_card(capture_home, tmp_path):
    home, _ = capture_home
    sess = tmp_path / "g.json"
    res = karuta("read", "--rules", "goshiki", "--color", "blue", "--cards", "3", "--live",
                 "--memorize", "0", "--voice", "tone", "--speed", "4", "--seed", "2",
                 "--session", str(sess), env={"HOME": str(home)}, timeout=60)
    assert res.returncode == 0, res.stderr
    order = plan_of("--rules", "goshiki", "--color", "blue", "--cards", "3", "--voice", "tone",
                    "--speed", "4", "--seed", "2")["order"]
    data = session(sess)
    assert data["finished"] and [e["poem"] for e in data["log"]] == order
    assert "finished: 3 of 3 cards read" in res.stdout
    # every command that plays ends with the audio's underrun line (a loaded machine may
    # starve the device: a run saw "karuta: audio: 1 underrun (gaps of silence in the sound)")
    assert re.fullmatch(r"audio: no underruns|karuta: audio: \d+ underruns? \(gaps of silence "
                        r"in the sound: .*\)", res.stdout.rstrip().splitlines()[-1])


# ---------------------------------------------------------------------------- one-line errors
# (refused before anything is opened: in this process, ``run_inproc``; the installed command's
# one-line errors: test_window_without_display_is_one_line and the realtime tests above)
def test_key_options_are_checked_with_one_line(tmp_path):
    env = {"KARUTA_DATA_DIR": str(tmp_path)}
    one_line_error(run_inproc("read", "--live", "--next-keys", "b", "--back-keys", "b,left",
                              "--voice", "tone", env=env), "'b' is in both")
    one_line_error(run_inproc("read", "--live", "--next-keys", "q", "--voice", "tone", env=env),
                   "already means quit")
    one_line_error(run_inproc("read", "--next-keys", "n", "--voice", "tone", env=env), "--live")
    assert not (tmp_path / "sessions").exists()


def test_corrupt_or_missing_session_is_one_line_and_kept(tmp_path):
    p = tmp_path / "s.json"
    one_line_error(run_inproc("read", "--resume", "--session", str(p)), "no saved session")
    p.write_text('{"kind": "karuta-club-session", "version": 1, "order": [1')
    one_line_error(run_inproc("read", "--resume", "--session", str(p)), "corrupt")
    assert p.read_text().endswith("[1")
    one_line_error(run_inproc("read", "--show-log", "--session", str(p)), "corrupt")


def test_window_without_display_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")}
    res = subprocess.run(karuta_argv("read", "--window", "--voice", "tone"),
                         capture_output=True, text=True, env=env, cwd=REPO,
                         stdin=subprocess.DEVNULL, timeout=60)
    one_line_error(res, "display")


def test_bad_memorize_and_signals(tmp_path):
    env = {"KARUTA_DATA_DIR": str(tmp_path)}
    one_line_error(run_inproc("read", "--live", "--memorize", "-1", "--voice", "tone", env=env),
                   "memorize")
    one_line_error(run_inproc("read", "--live", "--memorize", "5", "--signals", "7", "--voice",
                              "tone", env=env), "signals")


# ---------------------------------------------------------------------------- window
_colours = colours


@pytest.mark.realtime
def test_window_under_xvfb(pulse_server, xvfb, tmp_path):
    sess = tmp_path / "w.json"
    args = ["--seed", "3", "--cards", "3", *FAST]
    order = plan_of(*args)["order"]
    env = {**os.environ, "DISPLAY": xvfb, "PYTHONPATH": str(REPO), "PYGAME_HIDE_SUPPORT_PROMPT": "1",
           "KARUTA_DATA_DIR": str(tmp_path / "data")}
    env.pop("SDL_VIDEODRIVER", None)
    xenv = {**os.environ, "DISPLAY": xvfb}
    p = subprocess.Popen(karuta_argv("read", "--window", "--memorize", "0.05",
                          "--device", "pulse", "--session", str(sess), *args),
                         cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        wid = window_of(p, xvfb)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], env=xenv, check=False)
        screenshot_when(xvfb, lambda im: _colours(im) > 20, what="the memorisation screen")
        # s skips the rest of the 3 s timer: the reading starts; card 1 read -> saved
        subprocess.run(["xdotool", "key", "--window", wid, "s"], env=xenv, check=True)
        wait_until(lambda: (session(sess) or {}).get("position", 0) >= 1, 30, "card 1")
        screenshot_when(xvfb, lambda im: _colours(im) > 20, what="the reading screen")
        # resized (a projector, a tablet): the layout is shown as large as it fits, centred —
        # 960x540 shows the 1280x800 canvas at 0.675, 48 px from the left, so the big NEXT
        # button (canvas 824-1250 x 610-770) is at 604-892 x 412-520; a click near its bottom
        # edge (y 516: below where a layout stretched to the window would end it) advances
        subprocess.run(["xdotool", "windowsize", wid, "960", "540"], env=xenv, check=True)
        subprocess.run(["xdotool", "mousemove", "--window", wid, "750", "516", "click", "1"],
                       env=xenv, check=True)
        wait_until(lambda: session(sess)["position"] >= 2, 20, "card 2")
        subprocess.run(["xdotool", "key", "--window", wid, "b"], env=xenv, check=True)
        wait_until(lambda: len(session(sess)["log"]) >= 3, 20, "card 1 again")
        subprocess.run(["xdotool", "key", "--window", wid, "space"], env=xenv, check=True)
        wait_until(lambda: len(session(sess)["log"]) >= 4, 20, "card 2 again")
        subprocess.run(["xdotool", "key", "--window", wid, "q"], env=xenv, check=True)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out
    data = session(sess)
    assert [e["poem"] for e in data["log"]] == [order[0], order[1], order[0], order[1]]
    assert data["position"] == 2 and "stopped at card 3/3 (saved)" in out
