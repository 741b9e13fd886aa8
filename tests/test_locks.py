"""A file's lock (``reader.base.files.locked`` / ``hold``) leaves nothing beside the user's file
and keeps its promise: two karuta processes never write one file at once (a real second
process; the same case without the lock loses an update, so the test can fail), a killed
holder frees it, and every spelling of the file names one lock."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from reader.base.errors import OutputError
from reader.base.files import hold, locked

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="elsewhere the lock is a .NAME.lock file")

#: a second karuta changing the counter in ``argv[1]``: says it is about to take the lock
#: (``argv[1].trying``), then reads, adds one and writes — under the lock unless ``argv[2]``
#: is "none"
SECOND = """
import contextlib, sys
from pathlib import Path
from reader.base.files import atomic_write_text, locked
path = Path(sys.argv[1])
Path(str(path) + ".trying").write_text("")
with locked(path, wait=20) if sys.argv[2] != "none" else contextlib.nullcontext():
    atomic_write_text(path, str(int(path.read_text()) + 1))
"""

HOLDER = """
import sys, time
from reader.base.files import hold
held = hold(sys.argv[1], "the log")  # (kept: a lock let go of is released)
print("held", flush=True)
time.sleep(60)
"""


def _python(code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("lock", ["locked", "none"])
def test_two_processes_never_write_one_file(tmp_path, lock):
    """This process reads the counter under the lock, lets a second process try to change it
    meanwhile, then writes what it read plus one: with the lock the second waits and adds its
    one after (2); without it, its change is written over (1: the update is lost)."""
    from reader.base.files import atomic_write_text

    path = tmp_path / "count.txt"
    path.write_text("0")
    with locked(path) if lock == "locked" else contextlib.nullcontext():
        seen = int(path.read_text())
        p = _python(SECOND, path, lock)
        try:
            trying = path.with_name("count.txt.trying")
            end = time.monotonic() + 30
            while not trying.exists() and p.poll() is None and time.monotonic() < end:
                time.sleep(0.01)
            assert trying.exists(), p.communicate()
            # the second process is at the lock: a second for it to get past, if it can
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=1.0)
            atomic_write_text(path, str(seen + 1))
        except BaseException:
            p.kill()
            raise
    assert p.wait(timeout=30) == 0, p.stderr.read()
    assert int(path.read_text()) == (2 if lock == "locked" else 1)
    trying.unlink()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["count.txt"]  # nothing beside it


def test_a_held_file_is_refused_until_its_holder_is_killed(tmp_path):
    log = tmp_path / "m.jsonl"
    p = _python(HOLDER, log)
    try:
        assert p.stdout.readline() == "held\n", p.stderr.read()
        with pytest.raises(OutputError, match="is in use by another karuta: finish or quit"):
            hold(log, "the log").release()
        with pytest.raises(OutputError, match=r"being changed by another karuta \(waited 0.1 s"):
            with locked(log, wait=0.1):
                pass
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    with locked(log, wait=5):  # the kernel freed it with the killed process
        pass
    assert not list(tmp_path.iterdir())  # no file was ever made for the lock


def test_every_spelling_of_a_file_names_one_lock(tmp_path):
    (tmp_path / "saves").mkdir()
    save = tmp_path / "saves" / "t.json"
    save.write_text("{}")
    (tmp_path / "link.json").symlink_to(save)
    (tmp_path / "folder").symlink_to(tmp_path / "saves")
    held = hold(save, "the table save")
    try:
        for other in (tmp_path / "link.json", tmp_path / "folder" / "t.json",
                      tmp_path / "saves" / ".." / "saves" / "t.json"):
            with pytest.raises(OutputError, match="in use"):
                hold(other, "the table save")
        with locked(tmp_path / "saves" / "u.json", wait=0):  # another file: its own lock
            pass
    finally:
        held.release()
    with locked(tmp_path / "link.json", wait=0):
        pass
    assert sorted(os.listdir(tmp_path / "saves")) == ["t.json"]
