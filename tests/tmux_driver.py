"""Drive a terminal program the way a person does: a private tmux server, keys by send-keys.

The program's tty is the tmux pane, so it sees a real terminal (raw keys, full-screen
redraws).  ``screen()`` is what the pane shows (capture-pane, with 300 lines of history).
With ``start(..., tee=True)`` everything the program prints is also kept in a file, and
``screen()`` returns that instead: use it for line-by-line output that must be read in order
(stdout is then a pipe, so a program that draws a full screen on a tty prints lines instead).

The ``tmux`` fixture (tests/conftest.py) gives each test its own server, killed afterwards.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


from cli_run import karuta_argv  # noqa: E402,F401  (the one way to run karuta)


class Tmux:
    def __init__(self, tmp: Path):
        self.sock = f"karuta-test-{os.getpid()}-{id(self)}"
        self.tmp = tmp
        self.n = 0
        self.log: Path | None = None

    @property
    def target(self) -> str:
        return f"k{self.n}"

    def run(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=check)

    def start(self, argv: list[str], env: dict, *, tee: bool = False,
              width: int = 150, height: int = 45) -> None:
        """Run ``argv`` in a fresh window (an earlier one may still be showing its EXIT=)."""
        self.n += 1
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        prefix = (f"cd {shlex.quote(str(REPO))} && env {envs} PYTHONPATH={shlex.quote(str(REPO))} "
                  f"PYGAME_HIDE_SUPPORT_PROMPT=1 {shlex.join(argv)}")
        if tee:
            self.log = self.tmp / f"screen-{self.n}.txt"
            log = shlex.quote(str(self.log))
            cmd = f"{prefix} 2>&1 | tee {log}; echo EXIT=${{PIPESTATUS[0]}} >> {log}; sleep 60"
        else:
            self.log = None
            cmd = f"{prefix}; echo EXIT=$?; sleep 60"
        self.run("new-session", "-d", "-s", self.target, "-x", str(width), "-y", str(height),
                 "bash", "-c", cmd)

    def screen(self) -> str:
        if self.log is not None:
            return self.log.read_text(errors="replace") if self.log.exists() else ""
        return self.run("capture-pane", "-p", "-J", "-t", self.target, "-S", "-300", check=False).stdout

    def wait_for(self, *texts: str, timeout: float = 30.0) -> str:
        """The screen once it shows every one of ``texts`` (fails the test after ``timeout``)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            s = self.screen()
            if all(t in s for t in texts):
                return s
            time.sleep(0.02)
        pytest.fail(f"{texts!r} did not appear:\n{self.screen()[-3000:]}", pytrace=False)

    def wait_pos(self, text: str, after: int = 0, timeout: float = 30.0) -> int:
        """Where ``text`` ends in the output, looking only after position ``after`` (tee mode)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            k = self.screen().find(text, after)
            if k >= 0:
                return k + len(text)
            time.sleep(0.01)
        pytest.fail(f"{text!r} did not appear:\n{self.screen()[-3000:]}", pytrace=False)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.target, *keys)

    def app_pid(self) -> int:
        """The program's pid (the child of the window's shell)."""
        shell = int(self.run("list-panes", "-t", self.target, "-F", "#{pane_pid}").stdout.split()[0])
        out = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout
        return int(out.split()[0])

    def kill(self) -> None:
        self.run("kill-server", check=False)
