"""SIGTERM and SIGHUP stop karuta the way Ctrl-C does, so cleanup code runs.

Python's default for SIGTERM/SIGHUP ends the process at once: ``finally`` blocks do not run, so
a render stopped by ``kill`` or a closed terminal left its ``.part`` file behind, and a pygame
window ignored SIGTERM.  ``signals_interrupt()`` (a context manager, main thread only; a no-op
elsewhere) makes them raise ``Terminated``, a ``KeyboardInterrupt``: every path that already
cleans up after Ctrl-C cleans up after them too, and ``reader.cli.main`` ends it as
``karuta: interrupted`` with exit status 130.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived."""


def _raise(signum, frame):
    raise Terminated(signal.Signals(signum).name)


@contextmanager
def signals_interrupt(signals=(signal.SIGTERM, signal.SIGHUP)):
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}
    try:
        for s in signals:
            old[s] = signal.signal(s, _raise)
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def install() -> None:
    """For the whole process (the ``karuta`` command): SIGTERM/SIGHUP raise ``Terminated``."""
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(s) in (signal.SIG_DFL, None):
                signal.signal(s, _raise)
