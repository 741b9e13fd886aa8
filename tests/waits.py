"""One way for tests to wait for something the app does: poll a condition, never a fixed sleep
(a busy machine is slower, not wrong)."""
from __future__ import annotations

import time

import pytest


def wait_until(pred, timeout: float = 30.0, what: str = "condition", every: float = 0.02):
    """``pred()``'s first truthy value, polled every ``every`` s; fails the test (one line,
    naming ``what``) after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}", pytrace=False)

