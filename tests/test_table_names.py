"""The table helpers' names (``karuta table``) meet the tournament's bound, through the one check
(``reader.base.limits.check_name``): at most ``NAME_MAX`` characters, no control or format
character — one line, exit 1, and the save as it was (or none made).  In process."""
from __future__ import annotations

import pytest

from cli_run import one_line_error, run_inproc
from reader.base.limits import NAME_MAX

LONG = "山" * (NAME_MAX + 1)


def karuta(tmp_path, *args):
    return run_inproc(*map(str, args), data_dir=tmp_path / "data", cwd=tmp_path)


@pytest.mark.parametrize("system, extra", [("cards", ""), ("genkan", ":3")])
def test_a_new_table_with_a_name_too_long_is_not_made(tmp_path, system, extra):
    r = karuta(tmp_path, "table", system, "new", "t.json", "--player", "Aoi" + extra,
               "--player", LONG + extra)
    one_line_error(r, f"{NAME_MAX + 1} characters long", f"at most {NAME_MAX}")
    assert not (tmp_path / "t.json").exists()
    r = karuta(tmp_path, "table", system, "new", "t.json", "--player", "Aoi" + extra,
               "--player", "山" * NAME_MAX + extra)  # the longest name fits
    assert r.returncode == 0, r.stderr
    assert "山" * NAME_MAX in (tmp_path / "t.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("system, line", [
    ("cards", f"npc {LONG}"), ("cards", "player a\x1bb"), ("cards", "npc a\u202eb"),
    ("genkan", f"player {LONG} 3"), ("genkan", "player a\x07b 3"),
    ("genkan", f"contest Aoi,{LONG} 男 7"),
])
def test_a_name_added_at_the_table_is_checked_and_nothing_changes(tmp_path, system, line):
    assert karuta(tmp_path, "table", system, "new", "t.json", "--player",
                  "Aoi" + (":3" if system == "genkan" else "")).returncode == 0
    before = (tmp_path / "t.json").read_bytes()
    r = karuta(tmp_path, "table", system, "do", "t.json", line)
    one_line_error(r, "name")
    assert "characters long" in r.stderr or "control character" in r.stderr
    assert (tmp_path / "t.json").read_bytes() == before
