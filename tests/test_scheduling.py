"""The test scheduler of tests/conftest.py: which tests run together, and in what order the
units are handed to the xdist workers (the longest first, so no worker ends with a long tail,
with the units that mostly wait spread among the ones that compute)."""
import ast
from pathlib import Path

from conftest import (EXCLUSIVE, OTHER_TESTS_NICE, _test_costs, hand_out_order, niceness_for,
                      xdist_unit)

HERE = Path(__file__).parent


def test_units_are_handed_out_longest_first_ties_in_collection_order():
    units = {"a": ["t/a.py::x"], "b": ["t/b.py::x", "t/b.py::y"], "c": ["t/c.py::x"],
             "d": ["t/d.py::x"]}
    costs = {"t/a.py::x": (1.0, 1.0), "t/b.py::x": (0.5, 0.5), "t/b.py::y": (0.4, 0.4),
             "t/c.py::x": (30.0, 30.0)}
    # all compute: b 0.9 s; d unlisted (0.03 s) after the listed ones; a before b (1.0 > 0.9)
    assert hand_out_order(units, costs) == ["c", "a", "b", "d"]
    assert hand_out_order({"p": ["u"], "q": ["v"]}, {}) == ["p", "q"]  # ties keep their order


def test_units_that_wait_are_spread_among_the_ones_that_compute():
    """Longest first alone would hand out the four waiting units (a sound played in real
    time, little CPU) together and leave the cores idle; merged, every stretch of the order
    mixes them with computing units, each kind still longest first."""
    costs = {f"w{i}": (40.0 - i, 2.0) for i in range(4)}          # wait: 5 % CPU
    costs |= {f"c{i}": (30.0 - i, 29.0 - i) for i in range(8)}    # compute
    units = {name: [name] for name in costs}
    order = hand_out_order(units, costs)
    assert order[0] == "w0"  # the longest of all, and it waits
    assert [u for u in order if u[0] == "w"] == ["w0", "w1", "w2", "w3"]
    assert [u for u in order if u[0] == "c"] == [f"c{i}" for i in range(8)]
    # never two waiting units in a row: the waiting share is 154 / 366 of the wall time
    assert all(not (a[0] == b[0] == "w") for a, b in zip(order, order[1:])), order
    # the waiting units are handed out through the whole order, not bunched at one end
    places = [i for i, u in enumerate(order) if u[0] == "w"]
    assert places[-1] >= len(order) - 4, order


def test_the_timing_unit_is_one_unit_and_handed_out_first():
    """The modules that must not run beside each other are one unit; with the measured times
    it is the longest (ending with it would leave one worker alone) and handed out first."""
    costs = _test_costs()
    ids = {}
    for nodeid in costs:
        ids.setdefault(xdist_unit(nodeid), []).append(nodeid)
    assert xdist_unit("tests/test_taps.py::t") == xdist_unit("tests/test_output.py::t") == EXCLUSIVE
    assert xdist_unit("tests/test_cli.py::a") != xdist_unit("tests/test_cli.py::b")
    assert hand_out_order(ids, costs)[0] == EXCLUSIVE
    assert hand_out_order(ids, costs, first=EXCLUSIVE)[0] == EXCLUSIVE


def test_beside_the_timing_unit_one_unit_waits_and_one_computes():
    """What the timing unit measures needs a core free: handed out first and left out of the
    balance, it is followed by one waiting and one computing unit, not two computing ones."""
    costs = {EXCLUSIVE: (70.0, 10.0), "w0": (30.0, 3.0), "w1": (20.0, 2.0),
             "c0": (25.0, 20.0), "c1": (24.0, 20.0), "c2": (23.0, 20.0)}
    units = {name: [name] for name in costs}
    assert hand_out_order(units, costs)[:3] == [EXCLUSIVE, "c0", "c1"]  # balanced with it
    assert hand_out_order(units, costs, first=EXCLUSIVE)[:3] == [EXCLUSIVE, "w0", "c0"]


def test_every_listed_test_still_exists():
    """A test renamed, merged or removed after tests/data/slow_tests.txt was measured would
    count as unlisted (0.03 s) and its successor, perhaps the longest test of all, would be
    handed out last: every listed id names a test function of its module."""
    stale = []
    defined: dict[str, set[str]] = {}
    for nodeid in _test_costs():
        path, name = nodeid.split("::", 1)
        name = name.split("[", 1)[0].split("::")[-1]
        if path not in defined:
            file = HERE.parent / path
            tree = ast.parse(file.read_text(encoding="utf-8")) if file.exists() else ast.Module([], [])
            defined[path] = {n.name for n in ast.walk(tree)
                             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if name not in defined[path]:
            stale.append(nodeid)
    assert not stale, f"tests/data/slow_tests.txt lists tests that no longer exist: {stale}"


def test_the_timing_unit_runs_ahead_of_the_other_workers():
    """Beside the timing unit the other workers' tests (and the processes they start) run at a
    higher nice value, so that what the timing tests measure gets the CPU on time."""
    assert niceness_for("tests/test_taps.py::t") == niceness_for("tests/test_calibrate.py::t") == 0
    assert niceness_for("tests/test_pack.py::t") == OTHER_TESTS_NICE > 0
