"""One karuta at a time on a match log, a practice log or a club session.

A log or session is held (its hidden ``.NAME.lock``, ``reader.base.files.hold``) for as long
as a command plays or reads from it.  A second command on the same file ends at once with one
line ``karuta: ... is in use by another karuta ...``, exit 1, and nothing written — not the log,
not a ``previous.json``.  The cases are made repeatable by holding the lock in the test (or by
a first ``match keep`` that waits at its prompt), never left to timing.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from cli_run import karuta_argv, karuta_env, one_line_error, run_inproc, run_karuta
from audio_fixtures import pulse_server  # noqa: F401 (fixture)

TONE = ("--voice", "tone")


def karuta(tmp_path, *args, input=None, run=run_karuta):
    """``karuta ARGS`` as a process (another karuta holds the file: the test, in this
    process); ``run=run_inproc`` for the files a test starts from and what follows once the
    file is free."""
    env = {"KARUTA_DATA_DIR": str(tmp_path / "data"),
           "KARUTA_CONFIG_DIR": str(tmp_path / "config"),
           "KARUTA_CACHE_DIR": str(tmp_path / "cache")}
    return run(*map(str, args), env=env, input=input, cwd=tmp_path)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def test_two_practices_resuming_one_log(tmp_path):
    """The second ``practice --resume`` on a log another karuta plays is refused, the log as
    it was; once the first is done the same command goes on with the match."""
    from reader.base.files import hold

    log = tmp_path / "m.jsonl"
    r = karuta(tmp_path, "practice", "--bot-vs-bot", "2,4", "--seed", "7", "--cards", "3",
               "--log", log, *TONE, run=run_inproc)
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:3]) + "\n")  # stopped after two reads
    before = _files(tmp_path)
    lock = hold(log, "the test's")
    try:
        argv = ("practice", "--resume", "--log", log, "--bot-vs-bot", "2,4", *TONE)
        one_line_error(karuta(tmp_path, *argv), "m.jsonl", "in use by another karuta")
        assert _files(tmp_path) == before, "the refused command wrote something"
        # a new practice on that name is refused as before (it exists), a second at once too
        one_line_error(karuta(tmp_path, "practice", "--log", log, "--bot-vs-bot", "1,1", *TONE),
                       "exists", "--resume")
    finally:
        lock.release()
    r = karuta(tmp_path, *argv, run=run_inproc)
    assert r.returncode == 0, r.stderr
    assert len(log.read_text().splitlines()) > 3, "the match went on once the log was free"


def test_two_match_keeps_on_one_log(tmp_path):
    """A real first ``match keep`` waiting at its prompt holds its log: a second one resuming
    it is one line and writes nothing; after the first quits, the second works."""
    log = tmp_path / "m.jsonl"
    env = karuta_env({"KARUTA_DATA_DIR": str(tmp_path / "data")})
    first = subprocess.Popen(karuta_argv("match", "keep", "--rules", "kyogi", "--seed", "3",
                                         "--log", str(log)),
                             env=env, cwd=tmp_path, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not log.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.1)
        assert log.exists() and first.poll() is None, first.communicate(timeout=5)
        before = _files(tmp_path)
        r = karuta(tmp_path, "match", "keep", "--resume", "--log", log, input="")
        one_line_error(r, "m.jsonl", "in use by another karuta")
        assert _files(tmp_path) == before
    finally:
        first.communicate(input="", timeout=60)
    r = karuta(tmp_path, "match", "keep", "--resume", "--log", log, input="")
    assert "in use" not in r.stderr, r.stderr


def test_a_club_session_in_use_is_neither_resumed_nor_started_over(pulse_server, tmp_path):
    """``read --resume`` and a new ``read --live`` on the session another club reading uses:
    one line each once the sound device is open; the session stays and no previous.json is
    made from it."""
    import json

    from reader.base.files import hold

    sess = tmp_path / "s.json"
    env = {"KARUTA_DATA_DIR": str(tmp_path / "data"),
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"],
           "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"]}
    r = run_karuta("plan", "--voice", "tone", "--cards", "2", "--seed", "3", "--json")
    order = json.loads(r.stdout)["order"]
    sess.write_text(json.dumps({
        "kind": "karuta-club-session", "version": 2, "seed": 3, "voice_spec": "tone",
        "reading": {"rules": "kyogi", "cards": 2}, "order": order, "position": 1, "log": []}))
    before = _files(tmp_path)
    lock = hold(sess, "the test's")
    try:
        for args in (("--resume",), ("--live", "--memorize", "0", "--cards", "2", *TONE)):
            r = run_karuta("read", *args, "--session", str(sess), "--device", "pulse", env=env,
                           cwd=tmp_path)
            one_line_error(r, "s.json", "in use by another karuta")
            assert _files(tmp_path) == before
    finally:
        lock.release()


def test_an_interrupted_practice_says_how_to_go_on(tmp_path):
    """Ctrl-C during a headless match: exit 130, the log holds every read before it (whole
    JSON lines) and the line says how to continue; the resumed match completes it."""
    import json
    import signal

    log = tmp_path / "m.jsonl"
    env = karuta_env({"KARUTA_DATA_DIR": str(tmp_path / "data")})
    p = subprocess.Popen(karuta_argv("practice", "--bot-vs-bot", "1,1", "--cards", "50",
                                     "--seed", "9", *TONE, "--log", str(log)),
                         env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + 60
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert f"continue with: karuta practice --resume --log {log} --bot-vs-bot 1,1" in err, err
    saved = [json.loads(x) for x in log.read_text().splitlines()]
    r = karuta(tmp_path, "practice", "--resume", "--log", log, "--bot-vs-bot", "1,1", *TONE,
               run=run_inproc)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x) for x in log.read_text().splitlines()][:len(saved)] == saved


def test_two_recorders_of_one_voice(pulse_server, tmp_path):
    """``voice record mine`` while another karuta records ``mine`` (the test holds the
    folder's lock): one line once the microphone is open, no take and no pack written."""
    import subprocess as sp

    from reader.base.files import hold

    sp.run(["pactl", "set-default-source", f"{pulse_server.sink}.monitor"],
           env=pulse_server.env, check=True)
    data = tmp_path / "data"
    stage = data / "recordings" / "mine"
    stage.mkdir(parents=True)
    env = {"KARUTA_DATA_DIR": str(data), "KARUTA_CONFIG_DIR": str(tmp_path / "cfg"),
           "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"],
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"], "HOME": pulse_server.env["HOME"]}
    lock = hold(stage, "the test's")
    try:
        r = run_karuta("voice", "record", "mine", "--poems", "1", env=env, cwd=tmp_path,
                       input="")
        one_line_error(r, "recordings folder", "in use by another karuta")
    finally:
        lock.release()
    assert not list(stage.glob("*.flac")) and not (data / "voices" / "mine").exists()


def test_two_speed_drills_on_one_new_log(pulse_server, tmp_path):
    """``drill speed --log taps.jsonl`` while another drill writes that log: one line once the
    sound device is open, nothing written."""
    from reader.base.files import hold

    log = tmp_path / "taps.jsonl"
    env = {"KARUTA_DATA_DIR": str(tmp_path / "data"),
           "PULSE_SERVER": pulse_server.env["PULSE_SERVER"],
           "XDG_RUNTIME_DIR": pulse_server.env["XDG_RUNTIME_DIR"]}
    before = _files(tmp_path)
    lock = hold(log, "the test's")
    try:
        r = run_karuta("drill", "speed", *TONE, "--cards", "1", "--device", "pulse",
                       "--log", str(log), env=env, cwd=tmp_path, input="")
        one_line_error(r, "taps.jsonl", "in use by another karuta")
    finally:
        lock.release()
    assert not log.exists() and _files(tmp_path) == before
