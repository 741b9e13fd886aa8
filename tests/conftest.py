"""Shared pytest configuration (keep minimal: fixtures live in helper modules)."""
import contextlib
import os

# numpy's OpenBLAS on one thread in the test processes too, as `karuta` runs it (its threads
# spin between the small matrix products the tests run in-process: alignments, filterbanks;
# on 2 cores with three workers they took ~20 % of the CPU of the modules that align).  Set
# before numpy is first imported; the processes the tests start inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from tmux_driver import Tmux

#: pytester: tests/test_fastmark.py runs pytest inside a test
pytest_plugins = ("pytester",)


def _hypothesis_on_a_busy_machine() -> None:
    """hypothesis's defaults hold each example to 200 ms of wall time and fail a test whose
    examples are slow to generate: real-time figures that a busy machine does not keep (a CPU
    hog beside the suite).  What the properties check is behaviour: no deadline, no too-slow
    check (a test's own ``@settings`` still sets its examples)."""
    from hypothesis import HealthCheck, settings

    settings.register_profile("karuta", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("karuta")


_hypothesis_on_a_busy_machine()


def pytest_configure(config):
    import fastmark
    import procguard

    # every process a test starts is ended, pass or fail (tests/procguard.py)
    if not config.pluginmanager.has_plugin("procguard"):
        config.pluginmanager.register(procguard, "procguard")
    # the ``fast`` marker, set at collection and checked as the tests run (tests/fastmark.py)
    if not config.pluginmanager.has_plugin("fastmark"):
        config.pluginmanager.register(fastmark, "fastmark")
    config.addinivalue_line(
        "markers", "realtime: plays in real time through a (null) sound server; slower")
    config.addinivalue_line(
        "markers", "entry_point: runs karuta through the installed command, a process a call "
        "(where a module's other tests call it in-process: cli_run.run_inproc)")
    _default_signals()


#: How the xdist workers share the tests (``pytest_xdist_make_scheduler`` below; the scheduler
#: sees only test ids, so the groups are by module):
#:
#: - The modules that measure real-time sound to the millisecond (PulseAudio's null sink as
#:   the clock, the taps mapping, calibrate, the X stamping of presses) are one unit: they run
#:   one at a time on one worker and never beside each other.  Clean runs with these side by
#:   side saw gaps in the sound (calibrate, the null sink's clock, the taps mapping).  The
#:   other real-time tests (whole commands in tmux or a window, the voice recorder, SDL's
#:   own clock, Chromium laying out pages), whose checks allow for a busy machine, run
#:   anywhere: all of them in one unit would make that worker's share alone longer than the
#:   rest.  (test_record.py, test_tournament_pages.py and the SDL tests, now
#:   test_output_sdl.py, were in the unit: each passed at load 15-24 beside the others.)
#: - A module with a module-scoped fixture is one unit (the fixture is built once, not once
#:   per worker); collection fails if such a module is not listed here.
#: - Every other test is a unit of its own (as ``--dist load``).
#: - The units are handed out longest first, so that no worker is left with a long unit at
#:   the end, and the ones that mostly wait (real-time sound, a window, a terminal: little
#:   CPU for their length) spread among the ones that compute (``hand_out_order``, from the
#:   wall and CPU seconds measured in tests/data/slow_tests.txt): longest first alone handed
#:   the waiting ones out together at the start, with the cores idle, and the computing ones
#:   after, with three workers on two cores.
#:
#: (Not pytest-xdist's ``--dist loadgroup``: it marks a group by rewriting ``item._nodeid``,
#: which pytest 9.2 no longer reads, so its groups are silently ignored.)
EXCLUSIVE = "realtime-timing"
_EXCLUSIVE_MODULES = {"test_taps.py", "test_calibrate.py", "test_output.py",
                      "test_window_taps.py"}
_MODULE_FIXTURE_MODULES = {"test_tournament_pages.py", "test_voice_acoustics.py",
                           "test_practice_bots.py", "test_practice_golden.py", "test_torifuda.py",
                           "test_web_clocksync.py", "test_align_hmm.py"}


def xdist_unit(nodeid: str) -> str:
    """The scheduling unit of a test id (tests of one unit run in order on one worker)."""
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    if module in _EXCLUSIVE_MODULES:
        return EXCLUSIVE
    if module in _MODULE_FIXTURE_MODULES:
        return module
    return nodeid


#: wall and CPU seconds a test not listed in tests/data/slow_tests.txt is expected to take
#: (the ~2,800 unlisted tests averaged 0.03 s in the run the file was made from)
_UNLISTED_S = 0.03
#: a unit that spends less CPU than this share of its wall time mostly waits
WAITING_CPU_SHARE = 0.4


#: the measured costs (written by tests/slow_tests.py)
SLOW_TESTS = os.path.join(os.path.dirname(__file__), "data", "slow_tests.txt")


def _test_costs() -> dict[str, tuple[float, float]]:
    """Measured (wall, CPU) seconds of the slow tests (tests/data/slow_tests.txt:
    ``wall cpu node-id``)."""
    from pathlib import Path

    costs = {}
    for line in Path(SLOW_TESTS).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            wall, cpu, nodeid = line.split(None, 2)
            costs[nodeid.strip()] = (float(wall), float(cpu))
    return costs


def hand_out_order(units: dict[str, list[str]], costs: dict[str, tuple[float, float]],
                   first: str | None = None) -> list[str]:
    """The units (name → its test ids) in the order to hand them to the workers.

    Each unit's wall and CPU seconds are its tests' sums (``costs``; an unlisted test is
    ``_UNLISTED_S`` of each).  The units that mostly wait (CPU below ``WAITING_CPU_SHARE`` of
    their wall time) and the ones that compute are each taken longest first (ties in
    collection order), and merged so that the waiting units' share of the wall time handed
    out so far stays at their share of the whole: the longest unit of all goes first if it
    waits, and no stretch of the run is all waiting (cores idle) or all computing.

    ``first`` (the millisecond-timing unit, ``EXCLUSIVE``) is handed out before all and left
    out of the balance: it is the longest, and what it measures needs a core free, so beside
    it the order goes on with one waiting and one computing unit, not two computing ones.
    """
    def cost(unit):
        wall = cpu = 0.0
        for t in units[unit]:
            w, c = costs.get(t, (_UNLISTED_S, _UNLISTED_S))
            wall, cpu = wall + w, cpu + c
        return wall, cpu

    c = {u: cost(u) for u in units if u != first}
    by_length = sorted(c, key=lambda u: -c[u][0])
    waiting = [u for u in by_length if c[u][1] < WAITING_CPU_SHARE * c[u][0]]
    is_waiting = set(waiting)
    computing = [u for u in by_length if u not in is_waiting]
    total = sum(w for w, _ in c.values())
    share = sum(c[u][0] for u in waiting) / total if total else 0.0
    order: list[str] = [first] if first in units else []
    handed = handed_waiting = 0.0
    w = k = 0
    while w < len(waiting) or k < len(computing):
        if k == len(computing) or (w < len(waiting) and handed_waiting <= share * handed):
            unit, w = waiting[w], w + 1
            handed_waiting += c[unit][0]
        else:
            unit, k = computing[k], k + 1
        handed += c[unit][0]
        order.append(unit)
    return order


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        """pytest-xdist's load-by-scope, with ``xdist_unit`` as the scope and the units handed
        out in ``hand_out_order`` rather than in collection order."""

        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # the first assignment: the queue is complete
                self._ordered = True
                order = hand_out_order({u: list(t) for u, t in self.workqueue.items()},
                                       _test_costs(), first=EXCLUSIVE)
                queue = dict(self.workqueue)
                self.workqueue.clear()
                self.workqueue.update((u, queue[u]) for u in order)
            super()._assign_work_unit(node)

    return UnitScheduling(config, log)


#: the nice value of a worker while it runs a test outside the millisecond-timing unit: when
#: both cores are busy with other workers' synthesis and alignment, what the timing tests
#: measure still gets the CPU on time (the kernel's worker that hands a pty's bytes to the
#: stamping process runs at nice 0: at equal weight, a clean run saw one in ten taps stamped
#: 5-15 ms late beside two computing workers).  Children (the app, servers) inherit it.
OTHER_TESTS_NICE = 5


def niceness_for(nodeid: str) -> int:
    """The nice value a worker runs ``nodeid`` at: 0 in the timing unit, else ``OTHER_TESTS_NICE``."""
    return 0 if xdist_unit(nodeid) == EXCLUSIVE else OTHER_TESTS_NICE


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Each test at ``niceness_for`` its id, in xdist workers (beside other workers) only.  A
    worker goes back to 0 only where it may (root, CAP_SYS_NICE); the timing unit is handed
    out first (``hand_out_order``), so its worker has not been niced before it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    want = niceness_for(item.nodeid)
    now = os.getpriority(os.PRIO_PROCESS, 0)
    if want != now:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, want)


def _uses_a_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d and d[-1].scope == "module" for d in defs)


def pytest_collection_modifyitems(config, items):
    unlisted = sorted({i.path.name for i in items if _uses_a_module_fixture(i)}
                      - _MODULE_FIXTURE_MODULES)
    if unlisted:
        raise pytest.UsageError(f"{', '.join(unlisted)}: a module-scoped fixture; add the module "
                                "to _MODULE_FIXTURE_MODULES in tests/conftest.py (one xdist unit)")


def _default_signals():
    """Tests send SIGINT/SIGHUP to the app and expect it to stop as a user's Ctrl-C or a closed
    terminal would.  A suite started in the background (``cmd &`` without job control, nohup)
    inherits those signals *ignored*, and so would every app it starts (an ignored signal stays
    ignored across exec, and the app rightly keeps it so): start from the ordinary state."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def _entry_point_mark(request):
    """``cli_run.run_marked`` runs karuta as a process in tests marked ``entry_point``."""
    import cli_run

    cli_run.THROUGH_THE_ENTRY_POINT[0] = request.node.get_closest_marker("entry_point") is not None
    yield
    cli_run.THROUGH_THE_ENTRY_POINT[0] = False


#: where ``timing_figures`` writes what the tests measured (scripts/bench_timing.py sets it)
FIGURES = "KARUTA_TIMING_FIGURES"


@pytest.fixture
def timing_figures(request):
    """A dict for the real-time figures a test measures but does not hold to a quiet
    machine's target (a sample rate, a median error in ms): a busy machine cannot keep those,
    so they are a benchmark's (scripts/bench_timing.py runs the tests with ``FIGURES`` set,
    gets each test's figures as a line of JSON, and prints them against their targets).  The
    test still asserts the behaviour, with margins a busy machine keeps."""
    got: dict = {}
    yield got
    path = os.environ.get(FIGURES)
    if path and got:
        import json

        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": request.node.nodeid, **got}) + "\n")


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory):
    """A ``KARUTA_CACHE_DIR`` the test process's tests share (one per xdist worker), for tests
    that use the synthesized voice but do not test its cache: a clip synthesized once (seconds
    each) is read from disk by the next test that needs it, as a user's second run would.
    Tests of the cache itself, and of what a first run shows, keep their own."""
    return tmp_path_factory.mktemp("synth-cache")


@pytest.fixture
def pack_dirs(tmp_path, monkeypatch, synth_cache):
    """Data and config folders of the test's own, the shared synthesized-clip cache: where
    the voice-pack tests import and install packs (test_pack, test_pack_repeat)."""
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KARUTA_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KARUTA_CACHE_DIR", str(synth_cache))
    return tmp_path


@pytest.fixture
def tmux(tmp_path):
    """A private tmux server to run a terminal program in (tests/tmux_driver.py)."""
    from audio_fixtures import require_tool

    require_tool("tmux")
    t = Tmux(tmp_path)
    yield t
    t.kill()


@pytest.fixture
def xvfb():
    """A real X server (Xvfb, 1280x800) on a display number it picks itself; yields ":N"."""
    with x_server() as display:
        yield display


@pytest.fixture
def xvfb2():
    """A second X server beside ``xvfb`` (two machines' windows: online play)."""
    with x_server() as display:
        yield display


@contextlib.contextmanager
def x_server():
    """Xvfb (1280x800) on a display number it picks itself, for the ``with`` block: ":N"
    (``testbed.xserver``, as the benchmarks start theirs)."""
    from audio_fixtures import require_tool
    from testbed.apps import Unavailable, stop_process
    from testbed.xserver import start_xvfb

    require_tool("Xvfb", "xvfb")
    require_tool("xdotool")
    require_tool("import", "imagemagick")
    try:
        proc, display = start_xvfb("1280x800")
    except Unavailable as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield display
    finally:
        stop_process(proc)
