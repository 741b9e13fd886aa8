"""Every process a test starts is ended, pass or fail, and none outlives the test run.

How a process is known to be a test's: every process started while a test runs carries two
variables in its environment, inherited by everything *it* starts in turn (the app, its audio
process and X stamping process, synthesis workers, Xvfb, PulseAudio, a tmux server and the
programs in its panes, even ones that detach into a session of their own):

    KARUTA_TEST_RUN    one value for the whole run (``scripts/test`` sets it; a bare pytest
                       gets one from this plugin), shared by the xdist workers
    KARUTA_TEST_OWNER  ``<worker>-<pid>/<n>``: the n-th test of that test process;
                       ``<worker>-<pid>/session``
                       for servers several tests share (``session_owned()``)

The test process sets KARUTA_TEST_OWNER before each test, and ``subprocess.Popen`` is wrapped
so that an explicit ``env=`` gets both variables too (a test that builds its environment from
scratch still marks its processes).  A process's initial environment is readable in
``/proc/PID/environ``, so the marks are found however the process was started.

After each test that started a process (fixture ``_every_process_ended``, autouse, torn down
after the test's own fixtures), the processes carrying that test's mark are ended — given
0.5 s to finish, then SIGTERM, then SIGKILL — and reported: a ``LeftBehind`` warning naming the
test and each process, a line in ``$KARUTA_TEST_PROCS_LOG`` when that is set (``scripts/test``
prints them), and with ``KARUTA_TEST_STRICT_PROCS=1`` the test errors.  Exempt: the test
process's own ``multiprocessing`` children (a synthesis pool or the resource tracker that a
test made in-process lives as long as the worker; the run check below covers them).

After pytest, ``python tests/procguard.py --after-run RUN`` (``scripts/test`` runs it) lists
the processes tests left (from the log) and every process still carrying the run's mark, ends
those and exits 1: the run fails when a test left anything running after it ended, or when
anything the run started is still running.

Linux only (``/proc``); only processes of this run are ever signalled.
"""
from __future__ import annotations

import argparse
import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

RUN = "KARUTA_TEST_RUN"
OWNER = "KARUTA_TEST_OWNER"
LOG = "KARUTA_TEST_PROCS_LOG"
STRICT = "KARUTA_TEST_STRICT_PROCS"

#: seconds a process may take to end by itself once its test is over, then after SIGTERM
GRACE_S, TERM_S, KILL_S = 0.5, 3.0, 2.0
#: another grace, in seconds, for a run whose tests leave on purpose processes that never end
#: by themselves (tests/test_procguard.py's inner runs: the grace would only be waited out)
GRACE = "KARUTA_TEST_PROCS_GRACE_S"


class LeftBehind(UserWarning):
    """A test left processes running; they have been ended."""


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    owner: str
    cmdline: str

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.cmdline[:200]}"


# ---- reading /proc ----------------------------------------------------------------------------

def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # gone, or not ours to read
        return None


#: how long a live process whose environment reads empty is looked at again: while it runs
#: execve the kernel shows no environment for a moment (longer on a loaded machine: a clean run
#: missed a test's `setsid sleep` that way, caught only at the session's end)
EXEC_WINDOW_S = 0.05


def _env_of(pid: int) -> dict[bytes, bytes] | None:
    return _envs_of([pid]).get(pid)


def _envs_of(pids) -> dict[int, dict[bytes, bytes] | None]:
    """The two marks in each process's environment (None: it has none).  A live process whose
    environment reads empty is looked at again for up to ``EXEC_WINDOW_S``, all of them in
    the same window (one wait a scan, however many such processes there are)."""
    out: dict[int, dict[bytes, bytes] | None] = {}
    again, deadline = list(pids), None
    while again:
        left = []
        for pid in again:
            raw = _read(f"/proc/{pid}/environ")
            if raw:
                out[pid] = _marks(raw)
            elif _may_be_in_exec(pid):
                left.append(pid)
            else:
                out[pid] = None
        again = left
        deadline = deadline or time.monotonic() + EXEC_WINDOW_S
        if again and time.monotonic() >= deadline:
            out.update((pid, None) for pid in again)
            break
        if again:
            time.sleep(0.002)
    return out


def _may_be_in_exec(pid: int) -> bool:
    """Whether an empty environment may be a moment of execve: not for a zombie (it has
    ended), init or a kernel thread (they never had one)."""
    ps = _ppid_state(pid)
    return not (ps is None or ps[1] in ("Z", "X") or pid == 1 or 2 in (pid, ps[0]))


def _marks(raw: bytes) -> dict[bytes, bytes]:
    out = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep and k in (b"KARUTA_TEST_RUN", b"KARUTA_TEST_OWNER"):
            out[k] = v
    return out


def _ppid_state(pid: int) -> tuple[int, str] | None:
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    fields = raw[raw.rindex(b")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), fields[0].decode()


def _alive(pid: int) -> bool:
    ps = _ppid_state(pid)
    return ps is not None and ps[1] not in ("Z", "X")


def marked(run: str, owner: str | None = None) -> list[Proc]:
    """Live processes carrying this run's mark (and, given ``owner``, that owner's)."""
    found = []
    if not os.path.isdir("/proc"):  # not Linux: nothing to look at (the guard does nothing)
        return found
    envs = _envs_of(int(name) for name in os.listdir("/proc") if name.isdigit())
    for pid, env in envs.items():
        if not env or env.get(b"KARUTA_TEST_RUN") != run.encode():
            continue
        own = env.get(b"KARUTA_TEST_OWNER", b"").decode()
        if owner is not None and own != owner:
            continue
        ps = _ppid_state(pid)
        if ps is None or ps[1] in ("Z", "X"):
            continue
        cmd = (_read(f"/proc/{pid}/cmdline") or b"").replace(b"\0", b" ").decode(errors="replace")
        found.append(Proc(pid, ps[0], own, cmd.strip()))
    return found


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        ps = _ppid_state(pid)
        if ps is None:
            break
        pid = ps[0]
    return out


def end(procs: list[Proc], run: str) -> list[Proc]:
    """End ``procs``: a short grace, SIGTERM, then SIGKILL.  Returns those that needed a
    signal.  A pid is signalled only while it still carries this run's mark (never a
    process that reused the number)."""
    def still(p: Proc) -> bool:
        env = _env_of(p.pid)
        return bool(env) and env.get(b"KARUTA_TEST_RUN") == run.encode() and _alive(p.pid)

    def wait(ps: list[Proc], seconds: float) -> list[Proc]:
        deadline = time.monotonic() + seconds
        while True:
            ps = [p for p in ps if still(p)]
            if not ps or time.monotonic() >= deadline:
                return ps
            time.sleep(0.02)

    left = wait(procs, float(os.environ.get(GRACE, GRACE_S)))
    signalled = list(left)
    for sig, seconds in ((signal.SIGTERM, TERM_S), (signal.SIGKILL, KILL_S)):
        for p in left:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
        left = wait(left, seconds)
        if not left:
            break
    return signalled


# ---- the pytest side --------------------------------------------------------------------------

_worker = f'{os.environ.get("PYTEST_XDIST_WORKER", "main")}-{os.getpid()}'
_counter = itertools.count(1)
_spawns = [0]  # Popen calls in this process so far
_popen_init = subprocess.Popen.__init__


def session_tag() -> str:
    return f"{_worker}/session"


def _marked_popen_init(self, *args, **kwargs):
    """``subprocess.Popen`` that counts its calls and marks an explicit ``env=`` as its own
    environment would be marked (a different KARUTA_TEST_RUN in it is left alone: another run,
    as in this module's own tests)."""
    _spawns[0] += 1
    env = kwargs.get("env") if len(args) < 11 else args[10]
    run = os.environ.get(RUN)
    if env is not None and run and env.get(RUN, run) == run:
        env = {**env, RUN: run, OWNER: os.environ.get(OWNER, session_tag())}
        if len(args) >= 11:
            args = (*args[:10], env, *args[11:])
        else:
            kwargs["env"] = env
    _popen_init(self, *args, **kwargs)


@contextmanager
def session_owned():
    """Processes started inside belong to the worker's session (a server several tests
    share), not to the running test: they are not ended with it (the run check covers them)."""
    before = os.environ.get(OWNER)
    os.environ[OWNER] = session_tag()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(OWNER, None)
        else:
            os.environ[OWNER] = before


def pytest_configure(config):
    if not os.environ.get(RUN):
        os.environ[RUN] = f"pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.environ[OWNER] = session_tag()
    subprocess.Popen.__init__ = _marked_popen_init


def pytest_unconfigure(config):
    subprocess.Popen.__init__ = _popen_init


def _exempt(p: Proc) -> bool:
    """The test process itself and what runs it, and its own multiprocessing children (pools,
    the resource tracker)."""
    return p.pid in _ancestors() or (p.ppid == os.getpid() and "multiprocessing" in p.cmdline)


@pytest.fixture(autouse=True)
def _every_process_ended(request):
    """End whatever the test started that is still running, and say so (module docstring)."""
    owner = f"{_worker}/{next(_counter)}"
    spawned = _spawns[0]
    os.environ[OWNER] = owner
    try:
        yield
    finally:
        os.environ[OWNER] = session_tag()
    if _spawns[0] == spawned:
        return
    run = os.environ[RUN]
    found = [p for p in marked(run, owner) if not _exempt(p)]
    if not found:
        return
    left = end(found, run)
    if not left:
        return
    lines = [f"{request.node.nodeid}: left running, now ended: {p}" for p in left]
    if os.environ.get(LOG):
        with open(os.environ[LOG], "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    message = "\n".join(lines)
    if os.environ.get(STRICT) == "1":
        pytest.fail(message, pytrace=False)
    warnings.warn(LeftBehind(message))


# ---- the run check (scripts/test) -------------------------------------------------------------

def after_run(run: str, log: Path | None) -> int:
    """Fail when a test left a process running after it ended (the guard ended it: listed
    from the log), or when anything of the run is still running now that pytest has ended
    (then end it).  Every test ends what it starts, pass or fail."""
    rc = 0
    if log is not None and log.exists() and log.stat().st_size:
        lines = log.read_text(encoding="utf-8").splitlines()
        print(f"karuta tests: {len(lines)} process(es) left running by tests were ended "
              "after their test (each test must end what it starts):", file=sys.stderr)
        for line in lines:
            print("  " + line, file=sys.stderr)
        rc = 1
    mine = _ancestors()
    left = [p for p in marked(run) if p.pid not in mine]
    if not left:
        return rc
    print(f"karuta tests: {len(left)} process(es) started by this run were still running "
          "after pytest ended (now ended):", file=sys.stderr)
    for p in left:
        print(f"  {p} (started by {p.owner or 'the run'})", file=sys.stderr)
    end(left, run)
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--after-run", metavar="RUN", required=True,
                    help="the run's KARUTA_TEST_RUN value")
    ap.add_argument("--log", type=Path, help="the run's KARUTA_TEST_PROCS_LOG file")
    a = ap.parse_args(argv)
    return after_run(a.after_run, a.log)


if __name__ == "__main__":
    sys.exit(main())
