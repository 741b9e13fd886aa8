"""One file given to two options of one command (a hostile or careless user): the second
write would replace the first (a CSV under the plot, a plan under the drill's log), or the
session would be started over the plan.  Promised: one line naming both options, exit 1,
nothing written (``reader.base.statefiles.check_distinct``)."""
from __future__ import annotations

import os

import pytest
from cli_run import one_line_error, run_inproc

CASES = {
    "stats --plot/--out": (["stats", "--export", "csv", "--out", "{f}", "--plot", "{g}"],
                           "--out", "--plot"),
    "drill speed --log/--plan-out": (["drill", "speed", "--voice", "tone", "--cards", "1",
                                      "--seed", "1", "--log", "{f}", "--plan-out", "{g}"],
                                     "--log", "--plan-out"),
    "read --session/--plan-out": (["read", "--live", "--voice", "tone", "--session", "{f}",
                                   "--plan-out", "{g}"], "--session", "--plan-out"),
    "render --out/--plan-out": (["render", "--voice", "tone", "--cards", "1",
                                 "--out", "{f}", "--plan-out", "{g}"], "--out", "--plan-out"),
}


@pytest.mark.parametrize("how", ["same name", "a link to it"])
@pytest.mark.parametrize("case", list(CASES))
def test_one_file_for_two_outputs_is_refused_and_nothing_is_written(tmp_path, case, how):
    argv, opt_a, opt_b = CASES[case]
    f = tmp_path / "same.png"
    g = f
    if how == "a link to it":
        g = tmp_path / "link.png"
        os.symlink(f.name, g)
    res = run_inproc(*[a.format(f=f, g=g) for a in argv], home=tmp_path / "home",
                     data_dir=tmp_path / "data")
    one_line_error(res, opt_a, opt_b, "same file")
    assert not f.exists(), "something was written to the file given twice"
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.json"))
