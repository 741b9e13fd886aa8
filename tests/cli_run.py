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
