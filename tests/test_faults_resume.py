"""--resume under changed surroundings (issue 12, item 8): it reads with the session's voice,
not whatever the default became since; --voice given now wins; a damaged option in the
session names the file.  Real ALSA file capture (no clock: fast), real subprocesses for what
reads; the refusals (before any sound device is opened) run the command in this process, on
one half-read session read for the module."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_run import karuta_argv, run_inproc

from audio_fixtures import ASOUNDRC, REPO

FAST = ["--speed", "4", "--take", "0.2", "--ma", "0.2", "--yoin", "0.2"]


def _env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=48000, wav=home / "capture.wav"))
    e = {k: v for k, v in os.environ.items() if k not in ("PULSE_SERVER",)}
    e.update(HOME=str(home), XDG_RUNTIME_DIR=str(home), KARUTA_DATA_DIR=str(tmp_path / "data"),
             KARUTA_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(REPO))
    return e


@pytest.fixture
def env(tmp_path):
    return _env(tmp_path)


@pytest.fixture(scope="session")
def tone_session(tmp_path_factory) -> str:
    """The text of a half-read session read with ``--voice tone``, read once (per xdist worker:
    session scope, so this module's tests may still be shared out) — each test writes its own
    copy."""
    tmp = tmp_path_factory.mktemp("tone-session")
    return half_read_session(_env(tmp), tmp, ["--voice", "tone"]).read_text()


def karuta(env, *args):
    return subprocess.run([*karuta_argv(), *args], capture_output=True,
                          text=True, env=env, cwd=REPO, stdin=subprocess.DEVNULL, timeout=180)


def half_read_session(env, tmp_path, voice_args):
    sess = tmp_path / "s.json"
    r = karuta(env, "read", "--live", "--auto", "--memorize", "0", "--session", str(sess),
               "--cards", "2", "--seed", "4", *FAST, *voice_args)
    assert r.returncode == 0, r.stderr
    data = json.loads(sess.read_text())
    data["position"], data["finished"], data["log"] = 1, False, data["log"][:1]
    sess.write_text(json.dumps(data, ensure_ascii=False))
    return sess


def test_resume_uses_the_sessions_voice_not_todays_default(env, tmp_path):
    # the session was read with the default voice of that day (tone, chosen with voice use)
    assert karuta(env, "voice", "use", "tone").returncode == 0
    sess = half_read_session(env, tmp_path, [])
    saved = json.loads(sess.read_text())
    assert saved["voice_spec"] is None and saved["voice"] == "tone"
    # since then the default changed to a pack that is gone
    (tmp_path / "config" / "voice.toml").write_text('default = "gone"\n')
    r = karuta(env, "read", "--resume", "--session", str(sess))
    assert r.returncode == 0, r.stderr
    after = json.loads(sess.read_text())
    assert after["finished"] and after["voice"] == "tone"


def test_resume_takes_voice_given_now(env, tmp_path, tone_session):
    sess = tmp_path / "s.json"
    sess.write_text(tone_session)
    r = run_inproc("read", "--resume", "--session", str(sess), "--voice", "no-such-pack", env=env)
    assert r.returncode == 1 and "no-such-pack" in r.stderr and r.stderr.count("\n") == 1


def assert_damage_is_named(env, tmp_path, tone_session, damage):
    """A half-read session changed by ``damage(data)``: ``--resume`` says one line naming the
    file, exits 1 and leaves the file as it is."""
    sess = tmp_path / "s.json"
    data = json.loads(tone_session)
    damage(data)
    sess.write_text(json.dumps(data))
    before = sess.read_bytes()
    r = run_inproc("read", "--resume", "--session", str(sess), env=env)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert str(sess) in r.stderr and "left as it is" in r.stderr
    assert sess.read_bytes() == before


@pytest.mark.parametrize("field,value", [("rules", "kyogi!"), ("ma_ms", 10 ** 12),
                                         ("speed", "fast")])
def test_damaged_option_in_a_session_names_the_file(env, tmp_path, tone_session, field, value):
    assert_damage_is_named(env, tmp_path, tone_session, lambda data: data["reading"].update({field: value}))


@pytest.mark.parametrize("keys", [{"next": ["nosuchkey"], "back": ["x"]}, {"next": "b"},
                                  {"next": ["p"], "back": ["x"]}])
def test_damaged_saved_keys_name_the_file(env, tmp_path, tone_session, keys):
    assert_damage_is_named(env, tmp_path, tone_session, lambda data: data.update(keys=keys))
