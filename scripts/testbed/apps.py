"""Processes a test or a benchmark starts, and how each is ended.

An app under test is started with ``start_app`` (its own process group) and ended with
``end_app`` — in a ``finally`` or a ``with`` — so it is gone whether the test passed or
failed, and so is anything it started.  Once a test failed while finding the window (the X
connection reset) and its ``karuta practice`` ran on for hours.  ``stop_apps`` ends
``karuta`` processes as a user's Ctrl-C does (each saves and says its last line);
``stop_process`` ends a helper server (a sound or X server, a recorder).  ``WebApp`` is a
``karuta ... --web`` under test: its output read as it comes, the page's address.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path


class Unavailable(RuntimeError):
    """What a test or benchmark needs could not be had (a tool missing, a server that did
    not start); the message says which and what to do."""


def need(name: str, package: str | None = None) -> str:
    """The path of system tool ``name``; ``Unavailable`` naming its Debian package if it is
    missing."""
    path = shutil.which(name)
    if not path:
        raise Unavailable(f"system tool {name!r} is missing: install the Debian package "
                          f"{package or name!r} (scripts/setup --test installs it)")
    return path


def stop_process(proc: subprocess.Popen | None, timeout: float = 5) -> None:
    """Terminate a helper process (a server the test started), killing it if it lingers."""
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_app(argv: list[str], **kw) -> subprocess.Popen:
    """Start an app under test in a process group of its own (text output, stderr folded
    into stdout, no stdin unless given); end it with ``end_app``."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.STDOUT)
    kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("text", True)
    return subprocess.Popen(argv, start_new_session=True, **kw)


def end_app(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """End ``proc`` and its process group: SIGTERM, then SIGKILL after ``timeout`` s.  Safe
    to call twice, and on a process that has already exited (its children may not have)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break  # (the group is gone)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            try:  # what is left of the group (a child the app started)
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            break
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def stop_apps(procs, wait_s: float = 10.0) -> None:
    """Stop ``karuta`` processes as a user's Ctrl-C does (SIGINT: each saves and says its last
    line), each given ``wait_s`` to end; one that has not is killed."""
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(wait_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def reads(path: Path) -> list[dict]:
    """The reads a practice log holds (``--log``: its header line left out); none if it is not
    written yet."""
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines()[1:] if x.strip()]


class WebApp:
    """``karuta ARGS --web`` as a process (``start_app``; ``end`` ends it): its output lines
    as they come (``lines``, ``wait_for``), and the page's address it printed -- ``url`` as
    printed (on 127.0.0.1), ``page`` the same on ``karuta.test`` (the tests' browsers map that
    name to 127.0.0.1: an insecure origin, as a LAN address is for a phone), ``port``,
    ``code``."""

    def __init__(self, argv: list[str], env: dict, timeout: float = 60):
        self.proc = start_app(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = self.wait_for(r"open on the phone or tablet \(same Wi-Fi\): (\S+)",
                                 timeout).group(1)
        self.port = int(re.search(r":(\d+)/", self.url).group(1))
        self.code = self.url.rsplit("#", 1)[1]
        self.page = self.url.replace("127.0.0.1", "karuta.test")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        """The first line matching ``pattern`` (``AssertionError`` with the output so far if
        none comes within ``timeout`` s, or the process ends without one)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for ln in list(self.lines):
                m = re.search(pattern, ln)
                if m:
                    return m
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no line like {pattern!r} from karuta:\n" + "\n".join(self.lines))

    def get(self, path: str) -> tuple[int, str]:
        """A GET of ``path`` as written (no normalising of ``..``), as from the page's host."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.putrequest("GET", path, skip_host=True)
        c.putheader("Host", f"karuta.test:{self.port}")
        c.endheaders()
        r = c.getresponse()
        body = r.read().decode(errors="replace")
        c.close()
        return r.status, body

    def end(self, wait: float = 0.0) -> int | None:
        """End the process (after ``wait`` s for it to end by itself); its exit status if it
        had ended by itself."""
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        rc = self.proc.poll()
        end_app(self.proc)
        return rc
