"""Ending the small helper processes karuta starts (the terminal and X stampers, the audio
process): they end when their stdin closes; one that lingers is killed."""
from __future__ import annotations

import subprocess


def end_helper(proc: subprocess.Popen, timeout: float = 1.0) -> None:
    """Close ``proc``'s stdin (its signal to end), wait up to ``timeout`` s, then kill it."""
    try:
        proc.stdin.close()
    except OSError:  # a broken pipe: it is gone already
        pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def end_with_parent() -> None:
    """In a child process started by ``multiprocessing`` (a synthesis worker): end this
    process as soon as its parent ends, however the parent ended (``kill -9`` too).

    A pool's worker waits on a queue whose writing end it holds itself, so a dead parent
    never reads as an end of file, and the worker (and the resource tracker whose pipe it
    keeps open) would stay with parent 1 for good.  A daemon thread waits on the parent's
    pidfd (``os.pidfd_open``: readable when that process ends; no polling) and ends this
    process with ``os._exit``.  Without pidfds (kernel < 5.3) it polls ``os.getppid()`` twice a
    second.  ``PR_SET_PDEATHSIG`` is not used: it fires when the parent *thread* that started
    the worker ends, and a pool starts workers from whichever thread submits first."""
    import multiprocessing
    import os
    import threading

    parent = multiprocessing.parent_process()
    ppid = parent.pid if parent is not None and parent.pid else os.getppid()
    if os.getppid() != ppid:  # gone already, before this line ran
        os._exit(0)

    def watch():
        import select
        import time

        try:
            fd = os.pidfd_open(ppid)
        except (AttributeError, OSError):
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        else:
            while os.getppid() == ppid:
                time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
