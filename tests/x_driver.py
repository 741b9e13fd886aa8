"""One way for tests to find and look at an app's window in an X server (Xvfb): the window
of a process, once it is mapped, and a screenshot as an array.

SDL may map a window, unmap it and map it again while it starts (a video-mode change), so a
window id found by one ``xdotool search`` can be gone by the next: ``window_of`` returns the id
of a window that is *visible* when it answers, and waits until one is.  A window is the
process's by its ``_NET_WM_PID``; once a club window test in a full run waited 60 s for one
while the app read on (no window of that pid at all: the property missing?), so after a few
seconds a visible top-level window of the test's own X server (each test has one) is taken
too, and a timeout lists what the display shows.

An app a test starts is started with ``start_app`` (its own process group) and ended with
``end_app`` — in a ``finally`` or a ``with`` — so it is gone whether the test passed or
failed, and so is anything it started.  Once a test failed while finding the window (the X
connection reset) and its ``karuta practice`` ran on for hours: the connection is now retried,
and the app ended whatever happens.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

import numpy as np


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


def window_of(proc: subprocess.Popen, display: str, timeout: float = 60.0) -> str:
    """The id of a visible window of ``proc`` on ``display``; fails with the process's
    output if it exits first, or after ``timeout`` seconds (a loaded machine can take a
    while to open a window)."""
    env = {**os.environ, "DISPLAY": display}
    find = ["xdotool", "search", "--onlyvisible", "--pid", str(proc.pid)]
    start = time.monotonic()
    end = start + timeout
    while True:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"the app exited ({proc.returncode}) before its window "
                                 f"showed: {out}{err}")
        found = subprocess.run(find, env=env, capture_output=True, text=True).stdout.split()
        if found:
            return found[-1]
        if time.monotonic() - start > 5.0:
            others = _top_level_windows(display)
            if others:
                return others[-1]
        if time.monotonic() > end:
            hidden = subprocess.run(find[:2] + find[3:], env=env, capture_output=True,
                                    text=True).stdout.split()
            end_app(proc)
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"no visible window of the app within {timeout:.0f} s "
                                 f"({len(hidden)} unmapped; the display shows "
                                 f"{_describe(display)}); its output: {out!r}")
        time.sleep(0.05)


def _top_level_windows(display: str) -> list[str]:
    """Visible windows with a WM_CLASS on ``display``, the root window left out (on a test's
    own X server these are the app's)."""
    env = {**os.environ, "DISPLAY": display}
    ids = subprocess.run(["xdotool", "search", "--onlyvisible", "--classname", ".*"], env=env,
                         capture_output=True, text=True).stdout.split()
    root = _root_window(display)
    if root is None:
        return []  # (the X server would not answer just now: the caller asks again)
    return [w for w in ids if int(w) != root]


def _root_window(display: str, tries: int = 5) -> int | None:
    """The root window's id, asked on a fresh X connection; a connection that is refused or
    reset (a loaded X server starting a window) is tried again a few times."""
    from Xlib import display as xdisplay
    from Xlib import error as xerror

    for i in range(tries):
        try:
            d = xdisplay.Display(display)
            try:
                return d.screen().root.id
            finally:
                d.close()
        except (OSError, xerror.DisplayError, xerror.ConnectionClosedError):
            time.sleep(0.1 * (i + 1))
    return None


def _describe(display: str) -> str:
    env = {**os.environ, "DISPLAY": display}
    ids = subprocess.run(["xdotool", "search", "--classname", ".*"], env=env,
                         capture_output=True, text=True).stdout.split()
    parts = []
    for w in ids:
        pid = subprocess.run(["xdotool", "getwindowpid", w], env=env, capture_output=True,
                             text=True).stdout.strip() or "-"
        name = subprocess.run(["xdotool", "getwindowname", w], env=env, capture_output=True,
                              text=True).stdout.strip()
        parts.append(f"{w} pid {pid} {name!r}")
    return "; ".join(parts) or "no windows"


def screenshot(display: str) -> np.ndarray:
    """The whole screen as an (h, w, 3) uint8 array."""
    ppm = subprocess.run(["import", "-display", display, "-window", "root", "-depth", "8",
                          "ppm:-"], capture_output=True, check=True, timeout=30).stdout
    parts = ppm.split(maxsplit=4)
    assert parts[0] == b"P6" and parts[3] == b"255", parts[:4]
    w, h = int(parts[1]), int(parts[2])
    return np.frombuffer(parts[4][: w * h * 3], dtype=np.uint8).reshape(h, w, 3)


def colours(img: np.ndarray) -> int:
    """How many different colours an (h, w, 3) uint8 picture holds (antialiased text has many,
    a flat fill one).  Each pixel packed into one integer: ``np.unique(..., axis=0)`` on the
    rows took seconds a screen."""
    px = img.reshape(-1, 3).astype(np.uint32)
    return len(np.unique((px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2]))


def screenshot_when(display: str, ready, timeout: float = 30.0,
                    what: str = "the expected picture") -> np.ndarray:
    """A screenshot once ``ready(img)`` holds (a window paints over several frames, later on
    a busy machine): polls, returns the first image that passes, fails after ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        try:
            img = screenshot(display)
        except subprocess.CalledProcessError:  # (the X server busy: ask again)
            img = None
        if img is not None and ready(img):
            return img
        if time.monotonic() > end:
            raise AssertionError(f"the screen never showed {what} within {timeout:.0f} s")
        time.sleep(0.2)
