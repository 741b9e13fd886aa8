"""``karuta voice list | add | check | use``: what a user types and sees.

Through click's CliRunner on the group itself, and through the installed ``karuta`` command
once the group is registered in ``reader.cli`` (skipped until then).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from reader.cli_voice import voice

RATE = 48000


def reading(seconds=2.0, freq=330.0):
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.fixture
def env(tmp_path, monkeypatch):
    e = {"KARUTA_DATA_DIR": str(tmp_path / "data"), "KARUTA_CONFIG_DIR": str(tmp_path / "config"),
         "KARUTA_CACHE_DIR": str(tmp_path / "cache")}
    for k, v in e.items():
        monkeypatch.setenv(k, v)
    return e


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "recordings" / "yamada"
    src.mkdir(parents=True)
    for n in (0, 1, 2):
        for half in (1, 2):
            sf.write(src / f"yamada_{n:03d}_{half}.wav", reading(freq=300 + 50 * n + 10 * half), RATE)
    (src / "yamada_003_1.mp3").write_bytes(b"not audio at all" * 64)
    return src


def run(*args):
    res = CliRunner().invoke(voice, list(args))
    return res.exit_code, res.output, res.exception


def test_add_list_check_use(env, source):
    code, out, exc = run("add", str(source), "--no-align")
    assert code == 0, (out, exc)
    assert "added voice 'yamada': 6 of 202 clips (wasuramoti layout)" in out
    assert "3 kami" in out and "unreadable" in out
    code, out, _ = run("list")
    assert code == 0
    lines = out.splitlines()
    assert any(l.split()[:2] == ["*", "synth"] for l in lines)
    assert any("yamada" in l and "6/202" in l for l in lines)
    code, out, _ = run("check", "yamada")
    assert code == 0
    assert out.splitlines()[0].split() == ["clip", "problem", "detail"]
    assert "3 kami" in out and "unreadable" in out and "missing" in out
    assert out.splitlines()[-1].startswith("voice 'yamada': 6 of 202 clips usable")
    code, out, _ = run("use", "yamada")
    assert code == 0 and "default voice: yamada" in out
    code, out, _ = run("list")
    assert any(l.split()[:2] == ["*", "yamada"] for l in out.splitlines())
    code, out, _ = run("check")  # the default voice
    assert code == 0 and "yamada" in out.splitlines()[-1]
    code, out, _ = run("use", "tone")
    assert code == 0


def test_check_a_source_folder_without_installing(env, source, tmp_path):
    code, out, exc = run("check", str(source))
    assert code == 0, (out, exc)
    assert "3 kami" in out
    assert not (tmp_path / "data" / "voices" / "yamada").exists()


def test_errors_are_one_line(env, tmp_path):
    from reader.errors import KarutaError

    code, _, exc = run("use", "nobody")
    assert code == 1 and isinstance(exc, KarutaError) and "unknown voice 'nobody'" in str(exc)
    code, _, exc = run("check")
    assert code == 1 and isinstance(exc, KarutaError) and "\n" not in str(exc)
    (tmp_path / "nothing").mkdir()
    code, _, exc = run("add", str(tmp_path / "nothing"))
    assert code == 1 and isinstance(exc, KarutaError) and "no clips found" in str(exc)


def test_karuta_voice_subprocess(env, source):
    full = dict(os.environ, **env)
    karuta = [sys.executable, "-m", "reader.cli"]
    r = subprocess.run([*karuta, "voice", "add", str(source), "--no-align"], capture_output=True, text=True, env=full)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*karuta, "voice", "check", "yamada"], capture_output=True, text=True, env=full)
    assert r.returncode == 0 and "unreadable" in r.stdout
    r = subprocess.run([*karuta, "voice", "use", "nobody"], capture_output=True, text=True, env=full)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("karuta: unknown voice")
