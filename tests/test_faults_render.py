"""Rendering under faults (issue 12, items 4 and 8): no partial file whatever signal stops a
render, a WAV that would pass 4 GiB is RF64 (or refused), files get the usual permissions,
and --plan-out cannot overwrite the audio.

Signals, a kill and the umask need ``karuta`` as a process; the refusals run in this process
(``cli_run.run_marked``; one through the installed command, marked ``entry_point``)."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest
from cli_run import karuta_argv, run_marked
import soundfile as sf

from audio_fixtures import REPO
from reader.base.errors import OutputError


def karuta(tmp_path, *args, **kw):
    env = dict(os.environ, KARUTA_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO))
    return subprocess.run([*karuta_argv(), *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300, **kw)


def refused(tmp_path, *args):
    return run_marked(*args, env={"KARUTA_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)


def test_a_wav_past_4_gib_is_written_as_rf64(tmp_path):
    from audio.render import write_audio

    out = write_audio(np.zeros(4800, np.float32), 48000, tmp_path / "long.wav",
                      frames=3_000_000_000)  # 6 GB of 16-bit samples promised
    assert out.read_bytes()[:4] == b"RF64"
    x, rate = sf.read(str(out), dtype="float32")
    assert rate == 48000 and x.shape[0] == 4800
    small = write_audio(np.zeros(4800, np.float32), 48000, tmp_path / "short.wav", frames=4800)
    assert small.read_bytes()[:4] == b"RIFF"


def test_a_wav_that_grows_past_the_limit_is_refused_and_removed(tmp_path, monkeypatch):
    import audio.render as render

    monkeypatch.setattr(render, "WAV_LIMIT", 10_000)  # bytes; the real one is 4 GiB

    def blocks():
        for _ in range(10):
            yield np.zeros(1000, np.float32)

    with pytest.raises(OutputError, match="longer than a WAV file can hold.*flac"):
        render.write_audio(blocks(), 48000, tmp_path / "x.wav")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_no_partial_file_whatever_signal_stops_a_render(tmp_path, sig):
    """A long render (FLAC of mostly silence: seconds of encoding) stopped part-way."""
    env = dict(os.environ, KARUTA_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO))
    p = subprocess.Popen([*karuta_argv(), "render", "--voice", "tone",
                          "--take", "60", "--ma", "60", "--yoin", "60", "--seed", "1",
                          "--out", "long.flac"], cwd=tmp_path, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(f.name.endswith(".part") and f.stat().st_size > 0 for f in tmp_path.iterdir()):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert err == "karuta: interrupted\n", err  # one line, no empty line before it
    assert sorted(f.name for f in tmp_path.iterdir() if f.name != "data") == [], \
        "a partial file was left"


def test_rendered_files_have_the_usual_permissions(tmp_path):
    r = karuta(tmp_path, "render", "--voice", "tone", "--cards", "1", "--out", "r.wav",
               "--plan-out", "plan.json", preexec_fn=lambda: os.umask(0o022))
    assert r.returncode == 0, r.stderr
    for name in ("r.wav", "plan.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


@pytest.mark.entry_point
def test_plan_out_may_not_be_the_audio_file(tmp_path):
    (tmp_path / "r.wav").write_bytes(b"the user's earlier render")
    for plan in ("r.wav", "./r.wav", str(tmp_path / "r.wav")):
        r = refused(tmp_path, "render", "--voice", "tone", "--cards", "1", "--out", "r.wav",
                    "--plan-out", plan)
        assert r.returncode == 1 and r.stderr.startswith("karuta: --out and --plan-out are the same file")
        assert r.stderr.count("\n") == 1
    assert (tmp_path / "r.wav").read_bytes() == b"the user's earlier render"


def test_huge_pauses_are_refused_before_any_audio(tmp_path):
    for opt, value in (("--ma", "1e9"), ("--take", "1e5"), ("--yoin", "61"), ("--gap", "nan")):
        r = refused(tmp_path, "render", "--voice", "tone", "--out", "r.wav", opt, value)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert "60 s" in r.stderr or "finite" in r.stderr or "far too large" in r.stderr
    assert not (tmp_path / "r.wav").exists()


def test_a_render_killed_with_sigkill_is_cleaned_up_by_the_next(tmp_path):
    """SIGKILL cannot be caught: its .part stays until the next render of the same file."""
    env = dict(os.environ, KARUTA_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "reader.cli", "render", "--voice", "tone",
                          "--take", "60", "--ma", "60", "--seed", "1", "--out", "long.flac"],
                         cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not [f for f in tmp_path.iterdir() if f.name.endswith(".part")]:
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    p.kill()
    p.wait()
    assert [f for f in tmp_path.iterdir() if f.name.endswith(".part")], "SIGKILL leaves it"
    r = karuta(tmp_path, "render", "--voice", "tone", "--cards", "1", "--out", "long.flac")
    assert r.returncode == 0, r.stderr
    assert sorted(f.name for f in tmp_path.iterdir() if f.name != "data") == ["long.flac"]
