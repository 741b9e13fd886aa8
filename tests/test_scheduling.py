"""The test scheduler of tests/conftest.py: which tests run together, and in what order the
units are handed to the xdist workers (the longest first, so no worker ends with a long tail)."""
from conftest import EXCLUSIVE, _test_seconds, longest_first, xdist_unit


def test_units_are_handed_out_longest_first_ties_in_collection_order():
    units = {"a": ["t/a.py::x"], "b": ["t/b.py::x", "t/b.py::y"], "c": ["t/c.py::x"],
             "d": ["t/d.py::x"]}
    seconds = {"t/a.py::x": 1.0, "t/b.py::x": 0.5, "t/b.py::y": 0.4, "t/c.py::x": 30.0}
    # b: 0.9 s listed; d: unlisted (0.2 s) after the listed ones; a before b (1.0 > 0.9)
    assert longest_first(units, seconds) == ["c", "a", "b", "d"]
    assert longest_first({"p": ["u"], "q": ["v"]}, {}) == ["p", "q"]  # ties keep their order


def test_the_timing_unit_is_one_unit_and_expected_to_be_the_longest():
    """The modules that must not run beside each other are one unit; with the measured times
    it is handed out first (it is the longest: ending with it would leave one worker alone)."""
    seconds = _test_seconds()
    ids = {}
    for nodeid in seconds:
        ids.setdefault(xdist_unit(nodeid), []).append(nodeid)
    assert xdist_unit("tests/test_taps.py::t") == xdist_unit("tests/test_output.py::t") == EXCLUSIVE
    assert xdist_unit("tests/test_cli.py::a") != xdist_unit("tests/test_cli.py::b")
    assert longest_first(ids, seconds)[0] == EXCLUSIVE
