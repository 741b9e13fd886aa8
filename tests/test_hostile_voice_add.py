"""Two ``voice add`` under one name at once (two terminals, an unlucky double Enter): the
second is one line while the first imports, and the pack the first installs is not silently
replaced by the other folder's (the name's lock, held here by the test)."""
from __future__ import annotations

import numpy as np
import soundfile as sf
from cli_run import one_line_error, run_inproc


def _source(folder, hz):
    folder.mkdir()
    t = np.arange(int(24000 * 1.2)) / 24000
    for n in ("001_1", "001_2"):
        sf.write(folder / f"r_{n}.flac", 0.3 * np.sin(2 * np.pi * hz * t) * np.minimum(1, t * 10),
                 24000)


def test_a_second_import_under_the_same_name_waits_for_nobody(tmp_path):
    from reader.base.files import hold

    _source(tmp_path / "src", 220)
    data = tmp_path / "data"
    res = run_inproc("voice", "add", tmp_path / "src", "--name", "same", "--no-align",
                     data_dir=data)
    assert res.returncode == 0, res.stderr
    pack = data / "voices" / "same"
    before = (pack / "pack.json").read_bytes()
    _source(tmp_path / "other", 330)
    held = hold(pack, "the voice pack")  # as the first import holds it while it works
    try:
        res = run_inproc("voice", "add", tmp_path / "other", "--name", "same", "--no-align",
                         "--replace", data_dir=data)
    finally:
        held.release()
    one_line_error(res, "in use by another karuta")
    assert (pack / "pack.json").read_bytes() == before
    assert sorted(p.name for p in (data / "voices").iterdir()) == ["same"]
