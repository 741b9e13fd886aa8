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


FIFO_CASES = [["match", "replay", "{fifo}"],
              ["practice", "--bot-vs-bot", "1,2", "--log", "{fifo}", "--resume"],
              ["match", "keep", "--log", "{fifo}", "--resume"],
              ["table", "genkan", "show", "{fifo}"],
              ["read", "--show-log", "--session", "{fifo}"],
              ["tournament", "new", "-f", "{tmp}/t.sqlite", "--players", "{fifo}"]]


def test_a_named_pipe_nothing_writes_to_is_one_line_not_a_wait(tmp_path):
    """A named pipe given where karuta reads a file (a mistyped path in a folder of pipes,
    ``mkfifo``): opening it to read would wait for a writer for ever.  It reads as empty at
    once: one line, the pipe left as it was."""
    import os
    import stat
    import threading

    from cli_run import run_inproc

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for argv in FIFO_CASES:
        argv = [a.replace("{fifo}", str(fifo)).replace("{tmp}", str(tmp_path)) for a in argv]
        waited = threading.Event()
        done = threading.Event()

        def watchdog():  # a read that waits for a writer is released (one comes and goes)
            if not done.wait(20):
                waited.set()
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

        dog = threading.Thread(target=watchdog, daemon=True)
        dog.start()
        res = run_inproc(*argv, data_dir=tmp_path / "data")
        done.set()
        dog.join()
        assert not waited.is_set(), f"karuta {' '.join(argv)} waited for a writer on a pipe"
        one_line_error(res, str(fifo))
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (tmp_path / "t.sqlite").exists()
