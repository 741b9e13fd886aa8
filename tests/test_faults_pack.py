"""Voice packs under faults (issue 12, items 2, 6, 8): an installed pack is never replaced
without --replace, a damaged clip is found by ``voice check`` (exit 1), an import stopped by
SIGTERM or killed leaves no ``NAME.importing-PID`` folder behind.

Real audio files (soundfile), real signals.  The commands run in this process
(``cli_run.run_marked``) but where a process is what is tested (a signal, a decoder's noise on
the terminal) and in the tests marked ``entry_point``: the installed command, as a user's
shell runs it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import karuta_argv, run_marked
import soundfile as sf

from audio_fixtures import REPO

RATE = 48000


def reading(seconds=2.0, freq=330.0):
    t = np.arange(int(seconds * RATE)) / RATE
    env = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.05)
    return (0.3 * env * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def make_source(folder: Path, reader: str, poems=(1, 2, 3), freq=300.0) -> Path:
    folder.mkdir(parents=True)
    for n in poems:
        for half in (1, 2):
            sf.write(folder / f"{reader}_{n:03d}_{half}.wav",
                     reading(freq=freq + 40 * n + 10 * half), RATE)
    return folder


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, KARUTA_DATA_DIR=str(tmp_path / "data"),
                KARUTA_CONFIG_DIR=str(tmp_path / "config"), KARUTA_CACHE_DIR=str(tmp_path / "cache"),
                PYTHONPATH=str(REPO))


def karuta(env, *args, timeout=180):
    return run_marked(*args, env=env, cwd=REPO, timeout=timeout)


def one_line(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_add_never_replaces_another_sources_pack_without_replace(env, tmp_path):
    a = make_source(tmp_path / "club" / "yamada", "yamada")
    b = make_source(tmp_path / "home" / "yamada", "yamada", poems=(4, 5), freq=500.0)
    r = karuta(env, "voice", "add", str(a), "--no-align")
    assert r.returncode == 0, r.stderr
    installed = tmp_path / "data" / "voices" / "yamada"
    before = tree(installed)
    # another folder whose reader has the same name: refused, the installed pack untouched
    r = karuta(env, "voice", "add", str(b), "--no-align")
    one_line(r, "'yamada' is already installed", "--name", "--replace")
    assert tree(installed) == before
    # the same folder again is a re-import (documented), and --name gives a free name
    r = karuta(env, "voice", "add", str(a), "--no-align")
    assert r.returncode == 0, r.stderr
    r = karuta(env, "voice", "add", str(b), "--no-align", "--name", "yamada2")
    assert r.returncode == 0 and (tmp_path / "data" / "voices" / "yamada2").is_dir()
    # --replace does replace
    r = karuta(env, "voice", "add", str(b), "--no-align", "--replace")
    assert r.returncode == 0, r.stderr
    assert "4 kami" not in karuta(env, "voice", "check", "yamada").stdout.split("missing")[0]
    assert not list((tmp_path / "data" / "voices").glob("*.importing-*"))


def test_check_finds_truncated_and_replaced_clips_and_exits_1(env, tmp_path):
    src = make_source(tmp_path / "src" / "mori", "mori")
    assert karuta(env, "voice", "add", str(src), "--no-align").returncode == 0
    clips = tmp_path / "data" / "voices" / "mori" / "clips"
    # truncate one clip, replace another by a different recording of the same format
    t = clips / "1_kami.flac"
    t.write_bytes(t.read_bytes()[: t.stat().st_size // 2])
    other = clips / "2_shimo.flac"
    x, _ = sf.read(str(other), dtype="float32")
    sf.write(str(other), x[::-1].copy(), RATE, subtype="PCM_24")
    r = karuta(env, "voice", "check", "mori")
    one_line(r, "'mori' has", "problem")
    rows = r.stdout.splitlines()
    assert any(row.split()[:3] == ["1", "kami", "damaged"] and "1_kami.flac" in row for row in rows), r.stdout
    assert any(row.split()[:3] == ["2", "shimo", "damaged"] and "2_shimo.flac" in row for row in rows), r.stdout
    assert "4 of 202 clips usable" in r.stdout


@pytest.mark.entry_point
def test_damaged_default_voice_setting_is_said_not_replaced(env, tmp_path):
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "voice.toml").write_text('default = ["yamada"\n')
    r = karuta(env, "plan", "--cards", "1")
    one_line(r, "voice.toml", "karuta voice use")
    assert (cfg / "voice.toml").read_text() == 'default = ["yamada"\n'


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_import_stopped_by_a_signal_leaves_nothing_behind(env, tmp_path, how):
    src = make_source(tmp_path / "src" / "big", "big", poems=tuple(range(1, 41)))
    voices = tmp_path / "data" / "voices"
    p = subprocess.Popen([*karuta_argv(), "voice", "add", str(src)],
                         env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(voices.glob("big.importing-*/clips/*.flac")):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the import never started writing"
        time.sleep(0.02)
    p.send_signal(getattr(signal, how))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert err.strip() == "karuta: interrupted", err
    assert not list(voices.glob("*.importing-*")), "the half-written import was left behind"
    assert not (voices / "big").exists()


def test_a_killed_imports_leftover_is_removed_by_the_next_import(env, tmp_path):
    voices = tmp_path / "data" / "voices"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a PID that is gone
    left = voices / f"old.importing-{dead.pid}"
    (left / "clips").mkdir(parents=True)
    (left / "clips" / "1_kami.flac").write_bytes(b"x" * 1000)
    src = make_source(tmp_path / "src" / "new", "new", poems=(1,))
    r = karuta(env, "voice", "add", str(src), "--no-align")
    assert r.returncode == 0, r.stderr
    assert not left.exists()
    assert "old" not in karuta(env, "voice", "list").stdout


@pytest.mark.entry_point  # the decoder writes to the process's stderr itself
def test_damaged_mp3_import_prints_no_decoder_noise(env, tmp_path):
    """Before: libmpg123's "Note: Illegal Audio-MPEG-Header ..." lines reached the screen."""
    from audio_fixtures import require_tool

    ffmpeg = require_tool("ffmpeg")
    src = tmp_path / "src" / "yam"
    src.mkdir(parents=True)
    good = src / "yam_001_1.mp3"
    subprocess.run([ffmpeg, "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=300:d=2",
                    "-ar", "48000", str(good)], check=True)
    raw = good.read_bytes()
    (src / "yam_001_2.mp3").write_bytes(raw)
    (src / "yam_002_1.mp3").write_bytes(raw[: len(raw) // 2])
    (src / "yam_002_2.mp3").write_bytes(raw[:3000] + bytes(range(256)) * 20 + raw[-10000:])
    (src / "yam_003_1.mp3").write_bytes(bytes(range(64)))
    r = karuta(env, "voice", "add", str(src), "--no-align")
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    assert "3 kami" in r.stdout and "unreadable" in r.stdout


@pytest.mark.parametrize("value", [pytest.param("1e308", marks=pytest.mark.entry_point),
                                   "nan", "inf", "-1e9", "40.5"])
def test_absurd_manifest_gain_is_refused_in_one_line(env, tmp_path, value):
    """Issue 33: ``gain_db = 1e308`` was reported and the pack installed (exit 0).  A gain
    past +-40 dB is refused: one line naming the field and the bounds, nothing installed, and
    a pack already installed under the name is left as it was."""
    src = make_source(tmp_path / "src" / "ab", "ab", poems=(1,))
    assert karuta(env, "voice", "add", str(src), "--no-align").returncode == 0
    pack = tmp_path / "data" / "voices" / "ab"
    before = {p.name: p.read_bytes() for p in pack.rglob("*") if p.is_file()}
    (src / "voice.toml").write_text(f'[clips."1"]\ngain_db = {value}\n')
    r = karuta(env, "voice", "add", str(src), "--no-align")
    one_line(r, "voice.toml", 'clips."1".gain_db', "out of range", "-40 to +40 dB",
             "nothing was imported")
    assert {p.name: p.read_bytes() for p in pack.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in pack.parent.iterdir()) == ["ab"]
    one_line(karuta(env, "voice", "check", str(src)), "gain_db", "out of range")


def test_a_gain_within_bounds_is_used(env, tmp_path):
    src = make_source(tmp_path / "src" / "ab", "ab", poems=(1,))
    (src / "voice.toml").write_text('[clips."1.kami"]\ngain_db = -40\n')
    r = karuta(env, "voice", "add", str(src), "--no-align")
    assert r.returncode == 0 and "out of range" not in r.stdout, (r.stdout, r.stderr)
    x, _ = sf.read(str(tmp_path / "data" / "voices" / "ab" / "clips" / "1_kami.flac"))
    assert np.isfinite(x).all() and np.abs(x).max() <= 1.0


@pytest.mark.parametrize("where", ["voice.toml", "pack.json"])
def test_an_installed_pack_edited_to_an_absurd_gain_is_not_read(env, tmp_path, where):
    """The installed pack's own voice.toml (edited by hand) or its index (a clip's stored
    gain lifting its peak past full scale): voice check and a reading that loads the pack
    say so in one line and change nothing."""
    import json

    src = make_source(tmp_path / "src" / "ab", "ab", poems=(1,))
    assert karuta(env, "voice", "add", str(src), "--no-align").returncode == 0
    pack = tmp_path / "data" / "voices" / "ab"
    if where == "voice.toml":
        toml = pack / "voice.toml"
        toml.write_text(toml.read_text() + '\n[clips."1.shimo"]\ngain_db = 1e308\n')
        words = ("voice.toml", "out of range", "the pack was not used")
    else:
        meta = json.loads((pack / "pack.json").read_text())
        meta["clips"]["1.kami"]["gain"] = meta["clips"]["1.kami"]["gain"] * 1000
        (pack / "pack.json").write_text(json.dumps(meta))
        words = ("pack.json is damaged", "clip 1.kami", "past full scale")
    before = {p.name: p.read_bytes() for p in pack.rglob("*") if p.is_file()}
    one_line(karuta(env, "voice", "check", "ab"), *words)
    one_line(karuta(env, "render", "--voice", "ab", "--poems", "1", "--no-joka",
                    "--out", str(tmp_path / "o.wav")), *words)
    assert not (tmp_path / "o.wav").exists()
    assert {p.name: p.read_bytes() for p in pack.rglob("*") if p.is_file()} == before
