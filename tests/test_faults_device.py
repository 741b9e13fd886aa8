"""Fault injection: the sound server dies in the middle of a reading (issue 12, item 1).

Each test starts its OWN PulseAudio daemon with a null sink (``audio_fixtures.PulseServer``:
the shared session one must survive), runs the installed ``karuta`` through
``sys.executable -m reader.cli`` against it, and kills the daemon with SIGKILL while cards
are being read.  Promised: the reading stops at the last card heard, the position saved is
that card, one line ``karuta: ...`` on stderr (no PortAudio noise), exit status 1; in club
mode the session waits and reopens the device when the server is back.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import karuta_argv

from audio_fixtures import REPO, PulseServer
from waits import wait_until

FAST = ["--voice", "tone", "--speed", "4", "--no-joka", "--take", "0.3", "--ma", "0.2",
        "--yoin", "0.2", "--seed", "3"]


@pytest.fixture
def own_pulse():
    srv = PulseServer()
    try:
        yield srv
    finally:
        srv.close()


def _start(srv: PulseServer, tmp_path: Path, *args: str) -> subprocess.Popen:
    env = dict(srv.env, KARUTA_DATA_DIR=str(tmp_path / "data"),
               KARUTA_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(REPO))
    env.setdefault("KARUTA_CACHE_DIR", str(tmp_path / "cache"))
    return subprocess.Popen([*karuta_argv(), *args], cwd=REPO, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _playing(srv: PulseServer) -> bool:
    """Whether a client's stream is playing on the server (the app opened its device)."""
    r = subprocess.run(["pactl", "list", "short", "sink-inputs"], env=srv.env,
                       capture_output=True, text=True)
    return r.returncode == 0 and bool(r.stdout.strip())


def _kill_server(srv: PulseServer) -> None:
    srv.kill()  # (SIGKILL, and its keepalive gone)


def _restart_server(srv: PulseServer) -> None:
    srv.restart()  # a new daemon on the same socket (the client's PULSE_SERVER stays valid)


def _session(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _assert_one_line(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert lines[0].startswith("karuta: "), lines
    assert "Traceback" not in err and "Expression" not in err and "ALSA lib" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_plain_read_stops_with_one_line_and_exit_1(own_pulse, tmp_path):
    """Before: two PortAudio lines and exit 0, as if the reading had ended."""
    proc = _start(own_pulse, tmp_path, "read", "--auto", "--cards", "8", *FAST)
    try:
        # wait until the first card is on the screen (heard), then pull the plug
        lines: list[str] = []
        wait_until(lambda: lines.append(proc.stdout.readline()) or "[1/8]" in lines[-1], 60,
                  "card 1")
        _kill_server(own_pulse)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    _assert_one_line(err, "sound device", "stopped during the reading", "cards were heard",
                     "--seed 3")
    assert "read 8 of 8" not in out


def test_club_reading_stops_saves_reopens_and_quit_while_lost_is_one_line(own_pulse, tmp_path):
    """Before: the screen and the saved session ran on through cards nobody heard.  The plug
    is pulled twice: the reading stops at the last card heard, saved, waits (the process does
    not exit) and reads on when the server is back (``--auto`` retries by itself); ``q`` while
    the device is gone is one line, exit 1, naming the card ``--resume`` continues at.  (What
    the session does while lost — nothing moves on, ``next`` retries, a retry while still
    gone — is tested on a fake device in milliseconds: tests/test_club.py.)"""
    sess = tmp_path / "s.json"
    proc = _start(own_pulse, tmp_path, "read", "--live", "--auto", "--memorize", "0",
                  "--session", str(sess), "--cards", "12", *FAST)
    try:
        wait_until(lambda: (_session(sess) or {}).get("position", 0) >= 1, 90, "a card read")
        _kill_server(own_pulse)
        at_kill = _session(sess)["position"]
        out_line = wait_until(lambda: (lambda ln: ln if "stopped at card" in ln else None)(
            proc.stdout.readline()), 30, "the lost-device message")
        assert "(saved)" in out_line
        s = _session(sess)
        assert s["position"] <= at_kill + 1, (at_kill, s["position"])
        assert len(s["log"]) == s["position"]
        stalled = s["position"]
        assert proc.poll() is None, "club mode must wait, not exit"
        # the server comes back: --auto retries by itself and reads on from that card
        _restart_server(own_pulse)
        wait_until(lambda: (_session(sess) or {}).get("position", 0) > stalled, 60,
                  "the reading to continue after the device came back")
        # pulled again; the reader quits while it is gone
        _kill_server(own_pulse)
        wait_until(lambda: "stopped at card" in proc.stdout.readline(), 30, "the message again")
        proc.stdin.write("q")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    saved = _session(sess)
    _assert_one_line(err, "sound device", f"card {saved['position'] + 1}/12", "--resume")
    log = saved["log"]
    assert len(log) == saved["position"] > stalled
    assert [e["card"] for e in log] == list(range(1, len(log) + 1)), \
        "no card skipped or counted twice across the losses"


def test_match_keep_read_says_the_device_went_away_and_keeps_the_log(own_pulse, tmp_path):
    """Before: ``match keep --read`` silently stopped reading."""
    deal = tmp_path / "deal.json"
    deal.write_text(json.dumps({"rules": "kyogi", "A": list(range(1, 26)),
                                "B": list(range(26, 51))}))
    log = tmp_path / "m.jsonl"
    proc = _start(own_pulse, tmp_path, "match", "keep", "--rules", "kyogi", "--deal", str(deal),
                  "--log", str(log), "--read", "--voice", "tone")
    try:
        # the reading has begun (the app's stream is on the server: the jo-ka is being read)
        wait_until(lambda: _playing(own_pulse), 60, "the reading to start")
        proc.stdin.write("1 a\n")
        proc.stdin.flush()
        wait_until(lambda: log.exists() and len(log.read_text().splitlines()) >= 2, 30,
                   "read 1 in the log")
        _kill_server(own_pulse)
        time.sleep(1.0)
        entered = [1, 27]
        try:
            proc.stdin.write("27 b\n")
            proc.stdin.flush()
        except BrokenPipeError:  # (it noticed the loss and ended within the second: seen
            entered = [1]        # beside a CPU hog) -- then 27 was never entered
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    _assert_one_line(err, "sound device", "--resume", str(log))
    reads = [json.loads(x)["read"] for x in log.read_text().splitlines()[1:]]
    assert reads == entered, "every entered read is in the log"


def test_pygame_backend_stops_on_sigterm(tmp_path):
    """Before: the pygame backend ignored SIGTERM (only kill -9 stopped it)."""
    import signal

    env = dict(os.environ, SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1",
               KARUTA_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([*karuta_argv(), "read", "--backend", "pygame",
                             "--auto", "--cards", "5", "--voice", "tone"], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: "序歌" in proc.stdout.readline(), 60, "the reading to start")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and err.strip() == "karuta: interrupted", (proc.returncode, err)
