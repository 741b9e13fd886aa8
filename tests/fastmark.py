"""The ``fast`` marker: the tests a developer runs between edits (``scripts/test --fast``,
``pytest -m fast``): every test that starts no process, server or window and plays nothing in
real time.  Each test is marked at collection, not by hand: it is **not** fast when

- it is marked ``process`` (by hand: the way out when the rules below miss one), ``realtime``
  (plays in real time through a sound server) or ``entry_point`` (runs the installed command);
- it uses a fixture that starts a server, a window or a terminal (``PROCESS_FIXTURES``:
  PulseAudio, Xvfb, tmux, pytester's runs), itself or through another fixture;
- its own code, or a function, class or fixture of its module that it uses (followed through
  the module), names a helper that starts a process (``PROCESS_NAMES``: ``subprocess``,
  ``run_karuta``, ``require_tool``, the app's audio and tap-stamping processes, a synthesis
  pool, ...);
- it took 0.5 s or more of wall or CPU time when last measured (listed in
  tests/data/slow_tests.txt: in-process synthesis, alignment, whole simulated matches).  All
  of those together are ~3 CPU minutes, and the inner loop has 60 s on 2 cores: the ~1,500
  others took 51 CPU seconds in all, collection included (``scripts/test --fast``, measured
  with ``/usr/bin/time``), ~26 s of 2 idle cores.

Every other test is ``fast``.  And the marker is checked as the tests run, in every run: a
test marked ``fast`` that starts a process anyway (``subprocess``, ``os.fork``/``posix_spawn``/
``exec``/``system``, a ``multiprocessing`` child: Python's audit events) fails, naming what it
started, so a rule that missed a test is found by the next run of the suite, not by a
developer whose inner loop got slow.  Registered by tests/conftest.py.
"""
from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

#: fixtures that start a process, a server or a window (directly or through fixtures they use:
#: pytest gives a test the closure of its fixtures)
PROCESS_FIXTURES = frozenset({"pulse_server", "xvfb", "xvfb2", "tmux", "pytester", "testdir"})

#: names whose use starts a process: Python's own, the tests' helpers that start one, and the
#: app's parts that start their own (the audio process, the tap-stamping process, synthesis
#: workers, the network sound process)
PROCESS_NAMES = frozenset({
    "subprocess", "Popen", "check_output", "os.fork", "os.system", "os.posix_spawn",
    "os.execv", "os.execvp", "pty.fork", "pty.spawn", "multiprocessing", "ProcessPoolExecutor",
    "run_karuta", "karuta_argv", "run_python", "start_app", "Tmux", "x_server", "small_disk",
    "require_tool",  # (a test that needs a program installed runs it)
    "AudioProcessOutput", "AudioProcess", "TerminalTaps", "XTaps", "NetSound",
    "TimelineOutput", "SoundProcess", "Browser", "PulseServer", "Ear",  # (testbed's, the web's)
})

#: markers that make a test not fast
SLOW_MARKERS = ("process", "realtime", "entry_point")

#: the audit events of a process being started
_SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn",
                           "os.exec", "os.system", "os.spawn", "multiprocessing.spawn"})

_started: list[str] = []  # what this process started, in order (argv or event)


#: where a process started from is not the test's doing: ``ctypes.util.find_library`` runs
#: ``ldconfig -p`` once a worker, for a moment, when a library (PortAudio) is first loaded
_NOT_THE_TESTS = ("ctypes/util.py",)


def _audit(event: str, args) -> None:
    if event in _SPAWN_EVENTS:
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename.endswith(_NOT_THE_TESTS):
                return
            f = f.f_back
        if event == "subprocess.Popen":
            argv = args[1]
            what = " ".join(map(str, argv)) if isinstance(argv, (list, tuple)) else str(argv)
        else:
            what = event
        _started.append(what[:160])


def _wrap_multiprocessing_spawn() -> None:
    """multiprocessing's spawn and forkserver start their children with
    ``_posixsubprocess.fork_exec`` (no audit event of its own in 3.11): say so."""
    from multiprocessing import util

    real = util.spawnv_passfds
    if getattr(real, "_audited", False):
        return

    @functools.wraps(real)
    def spawnv_passfds(path, args, passfds):
        sys.audit("multiprocessing.spawn", path, args)
        return real(path, args, passfds)

    spawnv_passfds._audited = True
    util.spawnv_passfds = spawnv_passfds


# ---- what a test's code names -----------------------------------------------------------------

def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


def names_used(node: ast.AST) -> set[str]:
    """Every name and dotted name (``os.fork``, and each attribute alone: ``fork``) ``node``
    uses."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Name, ast.Attribute)):
            d = _dotted(n)
            if d:
                out.add(d)
            if isinstance(n, ast.Attribute):
                out.add(n.attr)
    return out


@functools.lru_cache(maxsize=None)
def _module_uses(path: str, mtime_ns: int) -> dict[str, frozenset[str]]:
    """For each top-level function and class of a module (methods of a class count as the
    class; a test method as ``Class.name``): the names it uses."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    out: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = frozenset(names_used(node))
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out[f"{node.name}.{sub.name}"] = frozenset(names_used(sub))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):  # NAME = helper(...)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = frozenset(names_used(node.value)) if node.value else frozenset()
    return out


def process_names_reached(uses: dict[str, frozenset[str]], start: str) -> set[str]:
    """The ``PROCESS_NAMES`` that ``start`` (a key of ``uses``) names, itself or through the
    module's functions, classes and globals it names (followed to the end)."""
    seen, todo, found = {start}, [start], set()
    while todo:
        names = uses.get(todo.pop(), frozenset())
        found |= names & PROCESS_NAMES
        for n in names:
            if n in uses and n not in seen:
                seen.add(n)
                todo.append(n)
    return found


#: the measured costs of the slow tests (wall and CPU seconds of 0.5 s or more)
SLOW_TESTS = Path(__file__).resolve().parent / "data" / "slow_tests.txt"


@functools.lru_cache(maxsize=None)
def measured_slow() -> dict[str, float]:
    """node id -> the larger of its measured wall and CPU seconds (tests/data/slow_tests.txt)."""
    out = {}
    for line in SLOW_TESTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            wall, cpu, nodeid = line.split(None, 2)
            out[nodeid.strip()] = max(float(wall), float(cpu))
    return out


def why_not_fast(item) -> str | None:
    """Why ``item`` is not a fast test (None: it is)."""
    for m in SLOW_MARKERS:
        if item.get_closest_marker(m) is not None:
            return f"marked {m}"
    fixtures = PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    if fixtures:
        return f"uses the fixture {sorted(fixtures)[0]}"
    fn = getattr(item, "function", None)
    path = getattr(item, "path", None)
    if fn is None or path is None or path.suffix != ".py":
        return None
    uses = _module_uses(str(path), path.stat().st_mtime_ns)
    cls = getattr(item, "cls", None)
    key = f"{cls.__name__}.{fn.__name__}" if cls is not None else fn.__name__
    reached = process_names_reached(uses, key)
    if cls is not None:  # its class's fixtures and helpers
        reached |= process_names_reached(uses, cls.__name__)
    for name in getattr(item, "fixturenames", ()):  # the module's own fixtures it uses
        if name in uses:
            reached |= process_names_reached(uses, name)
    if reached:
        return f"names {sorted(reached)[0]}"
    took = measured_slow().get(item.nodeid)
    if took is not None:
        return f"took {took:.1f} s (tests/data/slow_tests.txt)"
    return None


# ---- the plugin -------------------------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fast: starts no process, server or window and plays nothing in real time "
        "(set at collection: tests/fastmark.py); `scripts/test --fast` runs these")
    config.addinivalue_line(
        "markers", "process: starts a process, server or window (by hand, where "
        "tests/fastmark.py's rules miss it)")
    _wrap_multiprocessing_spawn()
    if not getattr(sys, "_karuta_fastmark_hook", False):
        sys.addaudithook(_audit)  # (a hook cannot be removed: one for the process)
        sys._karuta_fastmark_hook = True


def pytest_collection_modifyitems(config, items):
    for item in items:
        if why_not_fast(item) is None:
            item.add_marker(pytest.mark.fast)


_at_setup = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_at_setup] = len(_started)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or item.get_closest_marker("fast") is None:
        return
    started = _started[item.stash.get(_at_setup, len(_started)):]
    if started and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is marked fast (starts no process) but started "
            f"{len(started)} process(es), the first: {started[0]!r}.  Add the helper that "
            "started it to PROCESS_NAMES or its fixture to PROCESS_FIXTURES in "
            "tests/fastmark.py, or mark the test @pytest.mark.process")
