"""Processes a test or a benchmark starts, and how each is ended.

An app under test is started with ``start_app`` (its own process group) and ended with
``end_app`` — in a ``finally`` or a ``with`` — so it is gone whether the test passed or
failed, and so is anything it started.  Once a test failed while finding the window (the X
connection reset) and its ``karuta practice`` ran on for hours.  ``stop_apps`` ends
``karuta`` processes as a user's Ctrl-C does (each saves and says its last line);
``stop_process`` ends a helper server (a sound or X server, a recorder).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
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
