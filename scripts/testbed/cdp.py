"""A small client of Chromium's DevTools protocol over its pipe: Debian's ``chromium``,
headless, started in a process group of its own and ended with all of it.  The tournament
pages' tests (tests/test_tournament_pages.py) and the web drill's (tests/test_web*.py) drive
their pages with it; no other dependency.

    b = Browser(tmp / "profile")                 # extra flags and environment: see __init__
    b.load(url, 390, 844); b.js("document.title"); b.screenshot(url, png, 390, 844)
    b.touch(x, y, at=epoch_seconds)              # a touch (touch emulation on) at an instant
    b.close()
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from testbed.apps import end_app, need, start_app

# (no crash reporter: its handler would detach from the browser's process group and could
# outlive the browser for a moment, a process left behind)
#: (``--renderer-process-limit=1 --disable-site-isolation-trials``: the fresh tab each page
#: gets, and each file:// page, no longer starts a renderer process of its own; Chromium's CPU
#: for this module 18.0 -> 13.2 s, the pages and what is checked on them the same)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--disable-crash-reporter", "--disable-breakpad",
         "--renderer-process-limit=1", "--disable-site-isolation-trials"]


class Browser:
    """A headless Chromium driven over its DevTools pipe (``--remote-debugging-pipe``: JSON
    messages ending in NUL on fds 3 and 4): open a page in a fresh tab, read its DOM and text,
    take a screenshot, print it to PDF.  Started in a process group of its own, and ended
    with all of it (``close``)."""

    def __init__(self, profile: Path, flags: list[str] = (), env: dict | None = None):
        """``flags``: more command-line flags (after ``FLAGS``); ``env``: the browser's
        environment (default: this one)."""
        import shlex

        exe = need("chromium")
        to_r, self._to = os.pipe()
        self._from, from_w = os.pipe()
        cmd = " ".join([exe, *FLAGS, *map(shlex.quote, flags), "--remote-debugging-pipe",
                        f"--user-data-dir={profile}", "about:blank", f"3<&{to_r}",
                        f"4>&{from_w}"])
        self.proc = start_app(["bash", "-c", "exec " + cmd], pass_fds=(to_r, from_w),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.session = None
        self.target = None

    def call(self, method: str, session: bool = True, timeout: float = 30, **params) -> dict:
        import select

        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    assert "error" not in reply, reply
                    return reply["result"]
            left = end - time.monotonic()
            assert left > 0, f"no reply to {method}"
            ready, _, _ = select.select([self._from], [], [], left)
            if ready:
                chunk = os.read(self._from, 65536)
                assert chunk, "chromium closed its pipe"
                self._buf += chunk

    def open(self, url: str) -> None:
        """``url`` in a fresh tab (the last one closed: no state carries over)."""
        if self.target is not None:
            self.call("Target.closeTarget", session=False, targetId=self.target)
        self.target = self.call("Target.createTarget", session=False, url=url)["targetId"]
        self.session = self.call("Target.attachToTarget", session=False, targetId=self.target,
                                 flatten=True)["sessionId"]

    def js(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression,
                         returnByValue=True)["result"].get("value")

    def load(self, url: str, width: int = 1280, height: int = 800, timeout: float = 30,
             touch: bool = False) -> None:
        """``url`` loaded (its load event passed) in a fresh tab of ``width`` x ``height``;
        ``touch``: a touch screen (touch emulation on, a mobile viewport)."""
        self.open("about:blank")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=touch)
        if touch:
            self.call("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=5)
        self.call("Page.navigate", url=url)
        want = json.dumps(url)
        deadline = time.monotonic() + timeout
        while not self.js(f"location.href === {want} && document.readyState === 'complete'"):
            assert time.monotonic() < deadline, f"{url} did not load"
            time.sleep(0.05)

    def dom(self, path: Path) -> str:
        """The page's DOM as the browser built it (what ``chromium --dump-dom`` prints)."""
        self.load(path.resolve().as_uri())
        return self.js("document.documentElement.outerHTML")

    def screenshot(self, url: str, png: Path, width: int, height: int) -> Path:
        import base64

        self.load(url, width, height)
        png.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return png

    def screenshot_now(self, png: Path) -> Path:
        """The page as it is now (not loaded again)."""
        import base64

        png.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return png

    def pdf(self, path: Path) -> bytes:
        """The page printed (no header or footer; the paper size the page asks for)."""
        import base64

        self.load(path.resolve().as_uri())
        return base64.b64decode(self.call("Page.printToPDF", displayHeaderFooter=False,
                                          preferCSSPageSize=True, timeout=60)["data"])

    def close(self) -> None:
        for fd in (self._to, self._from):
            os.close(fd)
        end_app(self.proc)

    def touch(self, x: float, y: float, at: float | None = None) -> None:
        """A touch at (``x``, ``y``) CSS px, pressed and released, stamped ``at`` (seconds
        since the epoch: the page's ``timeOrigin + timeStamp``; None: when Chromium takes it).
        Touch emulation must be on (``load(..., touch=True)``)."""
        point = [{"x": x, "y": y, "id": 1}]
        stamp = {} if at is None else {"timestamp": at}
        self.call("Input.dispatchTouchEvent", type="touchStart", touchPoints=point, **stamp)
        self.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[],
                  **({} if at is None else {"timestamp": at + 0.03}))

