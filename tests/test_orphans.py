"""A reading killed outright (``kill -9``, the OOM killer) leaves nothing running behind it
(issue 34): its synthesis workers, and the multiprocessing resource tracker that lives while
they hold its pipe, end within seconds.  They had stayed with parent 1 for over 5 minutes.

A real ``karuta render`` on an empty synthesis cache (so its pool is busy), killed once its
workers are up; the processes are found in /proc by their parent."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_run import karuta_argv, karuta_env


def children(pid: int) -> dict[int, str]:
    """pid -> command line of each live (not zombie) process whose parent is ``pid``."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out[int(d.name)] = cmd
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.skipif(not hasattr(os, "pidfd_open") and not Path("/proc").is_dir(),
                    reason="Linux only")
def test_a_killed_reading_leaves_no_worker_or_tracker_behind(tmp_path):
    env = karuta_env(data_dir=tmp_path / "data",
                     env={"KARUTA_CACHE_DIR": str(tmp_path / "cache"),
                          "KARUTA_CONFIG_DIR": str(tmp_path / "config")})
    proc = subprocess.Popen(karuta_argv("render", "--poems", "1-20", "--seed", "1",
                                        "--out", str(tmp_path / "r.wav")),
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    kids: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            kids = children(proc.pid)
            workers = [p for p, c in kids.items() if "multiprocessing" in c and "spawn_main" in c]
            tracker = [p for p, c in kids.items() if "resource_tracker" in c]
            if len(workers) >= 2 and tracker:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the render's pool never came up: {kids} (exit {proc.returncode}, "
                        f"{proc.stderr.read().decode()[-500:] if proc.poll() is not None else ''})")
        time.sleep(0.5)  # the workers past their start, synthesizing
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        t0 = time.monotonic()
        left = set(kids)
        while left and time.monotonic() - t0 < 5.0:
            left = {p for p in left if alive(p)}
            time.sleep(0.05)
        assert not left, {p: kids[p] for p in left}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in kids:  # what a failed run left (nothing once the test passes)
            if alive(p):
                os.kill(p, signal.SIGKILL)
