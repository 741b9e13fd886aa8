"""A table save edited by hand between two commands: the one line says what is wrong with it
(where, and why), never "line None"; the save is left as it is."""
from __future__ import annotations

import pytest
from cli_run import one_line_error, run_inproc

SAVE = ('{"karuta_table": 1, "system": "genkan", "seed": %s, "settings": {}, "rules": 2, '
        '"actions": []}')


@pytest.mark.parametrize("seed,words", [("NaN", ["NaN"]), ("Infinity", ["Infinity"]),
                                        ("1,", ["line 1"]), ('1, "x": [[[', ["line 1"])])
@pytest.mark.parametrize("command", ["show", "do"])
def test_a_damaged_save_says_where_and_why(tmp_path, seed, words, command):
    save = tmp_path / "g.json"
    save.write_text(SAVE % seed)
    before = save.read_bytes()
    argv = ["table", "genkan", command, save] + (["u"] if command == "do" else [])
    line = one_line_error(run_inproc(*argv, data_dir=tmp_path / "data"), str(save), *words)
    assert "None" not in line, line
    assert save.read_bytes() == before
