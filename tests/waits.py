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


def wait_stable(get, hold: float = 1.5, timeout: float = 30.0, what: str = "value",
                every: float = 0.05):
    """The value of ``get()`` once it has not changed for ``hold`` s (e.g. a reading that
    stops "at the next silence": when that is depends on the machine's speed); fails the
    test after ``timeout`` s."""
    end = time.monotonic() + timeout
    last, since = get(), time.monotonic()
    while time.monotonic() < end:
        time.sleep(every)
        v = get()
        if v != last:
            last, since = v, time.monotonic()
        elif time.monotonic() - since >= hold:
            return v
    pytest.fail(f"{what} kept changing for {timeout:g} s (last {last!r})", pytrace=False)
