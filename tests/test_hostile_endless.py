"""A device that never ends given where karuta reads a file whole (``/dev/zero`` as a log, a
save, a session, a players' sheet): one line saying it is too large, read no further than
64 MiB -- not a process eating the machine's memory until a MemoryError traceback.  Each case
runs under a 1.5 GB address-space limit (prlimit) so that a regression fails, not swaps."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from cli_run import karuta_argv, karuta_env, one_line_error

CASES = [["match", "replay", "/dev/zero"],
         ["table", "genkan", "show", "/dev/zero"],
         ["practice", "--bot-vs-bot", "1,2", "--log", "/dev/zero", "--resume"],
         ["read", "--show-log", "--session", "/dev/zero"],
         ["tournament", "new", "-f", "{tmp}/t.sqlite", "--players", "/dev/zero"]]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(a[:2]) for a in CASES])
def test_an_endless_device_is_one_line(tmp_path, argv):
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    res = subprocess.run(["prlimit", "--as=1500000000", *karuta_argv(
        *[a.replace("{tmp}", str(tmp_path)) for a in argv])], capture_output=True, text=True,
        env=karuta_env(data_dir=tmp_path / "data"), stdin=subprocess.DEVNULL, timeout=120)
    one_line_error(res, "/dev/zero", "too large")
    assert not (tmp_path / "t.sqlite").exists()
