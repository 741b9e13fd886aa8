"""``karuta voice list | add | check | use``: what a user types and sees.

Through click's CliRunner on the group itself, and through the installed ``karuta`` command
once the group is registered in ``reader.cli`` (skipped until then).
"""
from __future__ import annotations

from cli_run import one_line_error, run_inproc, run_karuta  # noqa: F401

import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from reader.cli.voice import voice

RATE = 48000


def reading(seconds=2.0, freq=330.0):
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.fixture
def env(tmp_path, monkeypatch, synth_cache):
    e = {"KARUTA_DATA_DIR": str(tmp_path / "data"), "KARUTA_CONFIG_DIR": str(tmp_path / "config"),
         "KARUTA_CACHE_DIR": str(synth_cache)}
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
    assert code == 1  # it lists problems: not a pass (issue 12)
    assert out.splitlines()[0].split() == ["clip", "problem", "detail"]
    assert "3 kami" in out and "unreadable" in out and "missing" in out
    assert out.splitlines()[-1].startswith("voice 'yamada': 6 of 202 clips usable")
    code, out, _ = run("use", "yamada")
    assert code == 0 and "default voice: yamada" in out
    code, out, _ = run("list")
    assert any(l.split()[:2] == ["*", "yamada"] for l in out.splitlines())
    code, out, _ = run("check")  # the default voice
    assert code == 1 and "yamada" in out.splitlines()[-1]
    code, out, _ = run("use", "tone")
    assert code == 0


def test_check_a_source_folder_without_installing(env, source, tmp_path, synth_cache):
    from testbed.synth_clips import made_ahead

    made_ahead(synth_cache, ["joka", "1", "2"])  # what the check aligns the clips with
    code, out, exc = run("check", str(source))
    assert code == 1, (out, exc)  # an unreadable clip
    assert "3 kami" in out
    assert not (tmp_path / "data" / "voices" / "yamada").exists()


def test_errors_are_one_line(env, tmp_path):
    from reader.base.errors import KarutaError

    code, _, exc = run("use", "nobody")
    assert code == 1 and isinstance(exc, KarutaError) and "unknown voice 'nobody'" in str(exc)
    code, _, exc = run("check")
    assert code == 1 and isinstance(exc, KarutaError) and "\n" not in str(exc)
    (tmp_path / "nothing").mkdir()
    code, _, exc = run("add", str(tmp_path / "nothing"))
    assert code == 1 and isinstance(exc, KarutaError) and "no clips found" in str(exc)


def test_karuta_voice_subprocess(env, source):
    r = run_karuta("voice", "add", str(source), "--no-align", env=env)
    assert r.returncode == 0, r.stderr
    r = run_karuta("voice", "check", "yamada", env=env)
    assert r.returncode == 1 and "unreadable" in r.stdout
    # 3 kami unreadable, 3 shimo missing; the 97 poems it never had make it partial, not broken
    assert r.stderr.startswith("karuta: voice 'yamada' has 2 problems (listed above"), r.stderr
    assert "partial" in r.stdout and "3 of 100 poems and the jo-ka; the synthesized voice reads the others (4-100)" in r.stdout
    r = run_karuta("voice", "use", "nobody", env=env)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("karuta: unknown voice")


def test_render_with_a_folder_whose_name_is_taken(env, source, tmp_path):
    """Issue 21: a folder used with --voice just works, even when an installed pack from
    another folder has its reader's name; the installed pack is left as it was."""
    code, out, exc = run("add", str(source), "--no-align")
    assert code == 0, (out, exc)
    installed = tmp_path / "data" / "voices" / "yamada" / "pack.json"
    before = installed.read_bytes()
    other = tmp_path / "elsewhere" / "yamada"
    other.mkdir(parents=True)
    for n in (1, 2):
        for half in (1, 2):
            sf.write(other / f"yamada_{n:03d}_{half}.wav", reading(freq=500 + 40 * n + 10 * half), RATE)
    wav = tmp_path / "out.wav"
    for _ in range(2):  # the second time reuses the private import (in-process: a pure
        # command, files in and out; the entry point: test_karuta_voice_subprocess)
        r = run_inproc("render", "--voice", str(other), "--poems", "1,2", "--no-joka", "--seed", "1",
                       "--ma", "0.5", "--take", "0.5", "--out", str(wav), env=env)
        assert r.returncode == 0, r.stderr
        assert "--replace" not in r.stderr and "already installed" not in r.stderr
    y, rate = sf.read(wav)
    assert len(y) > 4 * rate
    assert installed.read_bytes() == before  # the other folder's pack untouched
    names = sorted(p.name for p in (tmp_path / "data" / "voices").iterdir())
    assert len(names) == 2 and names[0] == "yamada" and names[1].startswith("yamada-")


def test_check_says_which_files_look_swapped(env, tmp_path):
    """Issue 34: 003 holds poem 4's 上の句 and 004 poem 3's: ``voice check`` says so by name
    (not only "low confidence 0.00")."""
    from audio.pack import import_pack
    from audio.voice import SpeechItem, ToneVoice

    ref = ToneVoice(mora_ms=100)
    src = tmp_path / "recordings" / "swapped"
    src.mkdir(parents=True)
    for n, said in ((2, 2), (3, 4), (4, 3)):
        sf.write(src / f"{n:03d}_1.wav", ref.samples(SpeechItem(str(said), "kami")), RATE)
    import_pack(src, reference=ref)
    _, out, _ = run("check", "swapped")  # a partial pack: its missing clips are listed too
    assert "003 (上の句) sounds like poem 4" in out and "004 (上の句) sounds like poem 3" in out
    assert "002 (上の句) sounds like" not in out
