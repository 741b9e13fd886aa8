"""A page pasted into an option or a prompt (a careless user, a stuck key): the one line that
refuses it quotes the start of the word and says its length, instead of echoing 5000
characters back (``reader.base.limits.bounded``, ``shown``)."""
from __future__ import annotations

import pytest
from cli_run import one_line_error, run_inproc

X = "x" * 5000

CASES = [
    ["practice", "--bot-vs-bot", X],
    ["kimariji", "--read", X],
    ["poems", "--color", X],
    ["read", "--live", "--next-keys", X],
    ["match", "replay", X],
    ["table", "genkan", "new", "{tmp}/z.json", "--player", "a:3", "--set", f"{X}=1"],
    ["table", "genkan", "do", "{tmp}/g.json", X],
    ["table", "genkan", "do", "{tmp}/g.json", f"sheet a {X}"],
]


def _table(tmp_path):
    res = run_inproc("table", "genkan", "new", tmp_path / "g.json", "--player", "a:3",
                     "--seed", "1", data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(a[:3])[:30] for a in CASES])
def test_a_pasted_page_is_quoted_short(tmp_path, argv):
    _table(tmp_path)
    before = (tmp_path / "g.json").read_bytes()
    res = run_inproc(*[a.replace("{tmp}", str(tmp_path)) for a in argv],
                     data_dir=tmp_path / "data", home=tmp_path / "home")
    line = one_line_error(res, "characters)")
    assert len(line) < 400, line[:100]
    assert (tmp_path / "g.json").read_bytes() == before


def test_the_results_desk_quotes_a_pasted_page_short(tmp_path):
    (tmp_path / "p.csv").write_text("name\n" + "".join(f"P{i}\n" for i in range(4)))
    t = tmp_path / "t.sqlite"
    for argv in (["new", "--players", tmp_path / "p.csv", "--seed", "1"], ["pair"]):
        assert run_inproc("tournament", *argv, "-f", t, data_dir=tmp_path / "d").returncode == 0
    res = run_inproc("tournament", "desk", "-f", t, input=f"{X}\n1 {X} 2\nq\n",
                     data_dir=tmp_path / "d")
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("karuta: ")]
    assert len(lines) == 2 and all("(5000 characters)" in ln and len(ln) < 400 for ln in lines), \
        [ln[:100] for ln in lines]
