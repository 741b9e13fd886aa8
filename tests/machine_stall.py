"""How long a busy machine kept a test's threads from running: the stall a real-time test
measures instead of assuming it.

Linux counts, for every thread, the time it spent runnable but waiting for a CPU (the second
field of ``/proc/PID/task/TID/schedstat``, in ns: the scheduler's run delay).  On a quiet
machine a thread waits a few ms a second; beside a CPU hog on 2 cores, hundreds.  A test
that bounds a wall-clock time (a wait that returns, a stop that is prompt) adds what its
threads waited to the bound, and says so in its failure message: a late return that the
machine's queue explains is the machine's, a late return beyond it is the app's.

    with Waited() as w:            # this process's threads (and ``pids``', and with
                                   # children=True its descendants')
        ...
    w.s                            # the longest any one of them waited inside the block
"""
from __future__ import annotations

import os


def run_delays(pid: int | None = None) -> dict[tuple[int, int], float]:
    """(pid, tid) -> seconds that thread has waited for a CPU since it started (empty where
    the kernel keeps no schedstat, or the process is gone)."""
    pid = os.getpid() if pid is None else pid
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                fields = f.read().split()
            out[(pid, int(tid))] = int(fields[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return out


def _children() -> list[int]:
    """This process's descendants now (children, theirs, ...)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    raw = f.read()
                parent[int(name)] = int(raw[raw.rindex(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    mine, found = {os.getpid()}, True
    while found:
        new = {p for p, pp in parent.items() if pp in mine and p not in mine}
        found = bool(new)
        mine |= new
    mine.discard(os.getpid())
    return sorted(mine)


descendants = _children


class Waited:
    """The run delay inside a ``with`` block of this process's threads and ``pids``' (threads
    that start inside the block count from 0: their whole wait is inside it)."""

    def __init__(self, *pids: int, children: bool = False):
        self.pids = (None, *pids)
        self.children = children  # this process's descendants too (an audio process)
        self.s = 0.0  # the longest wait of one thread
        self.total = 0.0  # all threads' waits together

    def _now(self) -> dict[tuple[int, int], float]:
        out = {}
        for p in (*self.pids, *(_children() if self.children else ())):
            out.update(run_delays(p))
        return out

    def __enter__(self) -> "Waited":
        self._before = self._now()
        return self

    def __exit__(self, *exc) -> None:
        self.update()

    def update(self) -> float:
        """Bring ``s`` and ``total`` up to now (inside the block too); returns ``s``."""
        after = self._now()
        waits = [w - self._before.get(k, 0.0) for k, w in after.items()]
        self.s = max(waits, default=0.0)
        self.total = sum(waits)
        return self.s

    def __str__(self) -> str:
        return (f"the machine kept a thread of the test waiting {self.s * 1000:.0f} ms for a CPU "
                f"({self.total * 1000:.0f} ms over all its threads)")
