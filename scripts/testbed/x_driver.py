"""One way for tests and benchmarks to find and look at an app's window in an X server
(Xvfb): the window of a process, once it is mapped, and a screenshot as an array.

SDL may map a window, unmap it and map it again while it starts (a video-mode change), so a
window id found by one ``xdotool search`` can be gone by the next: ``window_of`` returns the id
of a window that is *visible* when it answers, and waits until one is.  A window is the
process's by its ``_NET_WM_PID``; once a club window test in a full run waited 60 s for one
while the app read on (no window of that pid at all: the property missing?), so after a few
seconds a visible top-level window of the test's own X server (each test has one) is taken
too, and a timeout lists what the display shows.

An app is started with ``testbed.apps.start_app``; once a test failed while finding the
window (the X connection reset) and its ``karuta practice`` ran on for hours: the connection
is now retried, and the app ended whatever happens.
"""
from __future__ import annotations

import os
import subprocess
import time

import numpy as np

from testbed.apps import end_app


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


def window_or_stacks(proc, display, timeout: float = 60.0) -> str:
    """``window_of``; an app whose window has not shown ``timeout − 5`` s on is looked at
    first: each thread's state and kernel wait channel and each open file (``/proc``), then
    SIGABRT, which ``PYTHONFAULTHANDLER`` turns into each thread's Python stack on its output
    (both quoted by the failure).  Once in ~5 clean runs the host's window was never found
    while its process ran on (cause not found; not seen in 6 runs under load 15-25)."""
    import signal
    import threading

    found = threading.Event()
    seen: list[str] = []

    def look():
        if found.wait(timeout - 5.0) or proc.poll() is not None:
            return
        base = f"/proc/{proc.pid}"
        try:
            for tid in sorted(os.listdir(f"{base}/task")):
                def read(name, tid=tid):
                    with open(f"{base}/task/{tid}/{name}") as f:
                        return f.read().strip()
                seen.append(f"thread {tid} {read('comm')}: {read('stat').split()[2]} "
                            f"{read('wchan')}")
            seen.append("files: " + " ".join(sorted(
                os.readlink(f"{base}/fd/{fd}") for fd in os.listdir(f"{base}/fd"))))
        except OSError as e:  # (it ended meanwhile)
            seen.append(f"/proc: {e}")
        env = {**os.environ, "DISPLAY": display}
        for cmd in (["xwininfo", "-root", "-tree"], ["xlsclients", "-l"]):
            try:  # every window, with or without a class, name or pid; every client
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=10)
                seen.append(" ".join(cmd) + ": " + " | ".join(
                    x.strip() for x in (r.stdout + r.stderr).splitlines() if x.strip()))
            except (OSError, subprocess.TimeoutExpired) as e:
                seen.append(f"{cmd[0]}: {e}")
        proc.send_signal(signal.SIGABRT)

    threading.Thread(target=look, daemon=True).start()
    try:
        return window_of(proc, display, timeout)
    except AssertionError as e:
        raise AssertionError(f"{e}; the app then: {'; '.join(seen)}") from None
    finally:
        found.set()
