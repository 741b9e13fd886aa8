"""The default-voice setting edited by hand (notes, a key of a newer karuta) and then changed
with ``karuta voice use``: only its ``default`` line changes, the user's lines stay."""
from __future__ import annotations

from cli_run import run_inproc

MINE = ('# my notes: tone at the club, synth at home\ndefault = "synth"\nfuture_key = 3\n\n'
        '[later]\nwhat = "a newer karuta\'s table"\n')


def test_voice_use_keeps_the_users_lines(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    f = config / "voice.toml"
    f.write_text(MINE)
    env = {"KARUTA_CONFIG_DIR": str(config)}
    res = run_inproc("voice", "use", "tone", env=env, data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
    assert f.read_text() == MINE.replace('default = "synth"', 'default = "tone"')
    listed = run_inproc("voice", "list", env=env, data_dir=tmp_path / "data").stdout
    assert any(ln.startswith("*") and " tone " in ln for ln in listed.splitlines()), listed


def test_a_setting_without_a_default_line_gets_one_at_the_top_level(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    f = config / "voice.toml"
    f.write_text("# only notes\n[later]\na = 1\n")
    res = run_inproc("voice", "use", "tone", env={"KARUTA_CONFIG_DIR": str(config)},
                     data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
    assert f.read_text() == '# only notes\ndefault = "tone"\n[later]\na = 1\n'
