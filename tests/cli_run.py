"""The one way tests run ``karuta``: the entry point installed in the environment under test
(the ``karuta`` script beside this Python), never a ``karuta`` found on PATH, with the
caller's display and audio settings scrubbed so a developer's desktop cannot leak in.

    run_karuta("poems", "--json")                          # CompletedProcess, text
    run_karuta("read", ..., env=pulse.env)                 # what the test needs, added back
    karuta_argv("read", "--live")                          # for tmux / Popen
"""
from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: variables that would let the caller's display or sound system leak into a test
SCRUBBED = ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER", "AUDIODEV",
            "PULSE_SERVER", "PULSE_SINK", "ALSA_CONFIG_PATH", "KARUTA_TIMING_DEBUG")


def karuta_argv(*args: str) -> list[str]:
    """``karuta ARGS`` as installed in this environment (``pip install -e .``)."""
    exe = Path(sysconfig.get_path("scripts")) / "karuta"
    if not exe.exists():
        pytest.fail(f"no karuta entry point at {exe}: install the project into this environment "
                    "(scripts/setup --test)", pytrace=False)
    return [str(exe), *args]


def karuta_env(env: dict | None = None, *, home: Path | None = None,
               data_dir: Path | None = None) -> dict[str, str]:
    """The environment for a karuta subprocess: this one less ``SCRUBBED``, plus ``env``."""
    full = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    full.update(PYGAME_HIDE_SUPPORT_PROMPT="1", PYTHONUNBUFFERED="1")
    if home is not None:
        full["HOME"] = str(home)
    if data_dir is not None:
        full["KARUTA_DATA_DIR"] = str(data_dir)
    full.update(env or {})
    return full


def run_karuta(*args: str, env: dict | None = None, home: Path | None = None,
               data_dir: Path | None = None, input: str | None = None, timeout: float = 120,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(karuta_argv(*args), capture_output=True, text=True, cwd=cwd or REPO,
                          env=karuta_env(env, home=home, data_dir=data_dir), input=input,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          timeout=timeout)


def one_line_error(res: subprocess.CompletedProcess, *words: str) -> str:
    """Assert the promise for bad input: exit 1, one line ``karuta: ...``, no traceback."""
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: "), res.stderr
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def run_inproc(*args: str, env: dict | None = None, home: Path | None = None,
               data_dir: Path | None = None, input: str | None = None,
               cwd: Path | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """``run_karuta`` in this process: ``reader.cli.main(ARGS)`` with the same environment
    (``karuta_env``), working folder and stdin, its stdout and stderr caught, its exit status
    returned.  For pure commands (files in, files and text out: no sound, no window, no
    signal, no terminal): a case then takes milliseconds instead of a Python start and the
    app's imports.  An exception other than SystemExit escaping ``main`` is a traceback a user
    would see: it propagates.  Each module that uses it keeps some cases through the real
    entry point (``run_karuta``).  (``timeout``: accepted for ``run_karuta``'s signature.)"""
    import contextlib
    import io
    import signal
    import sys

    import audio.quiet
    from reader.cli import main

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    saved_stdin = sys.stdin
    out, err = io.StringIO(), io.StringIO()
    rc = 0
    try:
        os.environ.clear()
        os.environ.update(karuta_env(env, home=home, data_dir=data_dir))
        os.chdir(cwd or REPO)
        sys.stdin = io.StringIO(input or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in args])
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        audio.quiet.ENABLED = False
        for s, h in saved_signals.items():
            signal.signal(s, h)
    return subprocess.CompletedProcess(["karuta", *map(str, args)], rc, out.getvalue(),
                                       err.getvalue())


#: whether the running test is marked ``entry_point`` (set for each test by tests/conftest.py)
THROUGH_THE_ENTRY_POINT = [False]


def run_marked(*args: str, **kw) -> subprocess.CompletedProcess:
    """``run_karuta`` (a process) in a test marked ``entry_point``, else ``run_inproc``: a
    module of pure-command tests calls this, and marks the few that go through the installed
    command as a user's shell does."""
    return (run_karuta if THROUGH_THE_ENTRY_POINT[0] else run_inproc)(*args, **kw)
