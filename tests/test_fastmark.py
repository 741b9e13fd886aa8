"""The ``fast`` marker (tests/fastmark.py): set at collection by what a test uses, and checked
as the tests run: a test marked fast that starts a process fails, naming what it started."""
from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

import fastmark

MODULE = textwrap.dedent('''
    import subprocess
    import pytest

    from helpers import run_karuta, made_plan

    def _play_it(out):
        return subprocess.run(["true"])

    def _deeper():
        return _play_it(None)

    PLAYED = _deeper

    def test_pure():
        assert made_plan(3)

    def test_through_two_helpers():
        _deeper()

    def test_through_a_global():
        PLAYED()

    def test_the_command():
        run_karuta("poems")

    def test_in_a_window(xvfb):
        pass

    @pytest.mark.realtime
    def test_plays_in_real_time():
        pass

    class TestGroup:
        def _helper(self):
            return subprocess.Popen(["true"])

        def test_method(self):
            self._helper()
''')


def _item(path, name, cls=None, fixtures=(), markers=()):
    def closest(m):
        return object() if m in markers else None

    return SimpleNamespace(function=SimpleNamespace(__name__=name), path=path,
                           cls=None if cls is None else type(cls, (), {}),
                           fixturenames=list(fixtures), get_closest_marker=closest,
                           nodeid=f"{path.name}::{name}")


def test_what_a_test_uses_decides_whether_it_is_fast(tmp_path):
    path = tmp_path / "test_example.py"
    path.write_text(MODULE)
    assert fastmark.why_not_fast(_item(path, "test_pure")) is None
    assert fastmark.why_not_fast(_item(path, "test_through_two_helpers")) == "names subprocess"
    assert fastmark.why_not_fast(_item(path, "test_through_a_global")) == "names subprocess"
    assert fastmark.why_not_fast(_item(path, "test_the_command")) == "names run_karuta"
    assert fastmark.why_not_fast(_item(path, "test_in_a_window", fixtures=["xvfb", "tmp_path"])) \
        == "uses the fixture xvfb"
    assert fastmark.why_not_fast(_item(path, "test_plays_in_real_time", markers=["realtime"])) \
        == "marked realtime"
    assert fastmark.why_not_fast(_item(path, "test_method", cls="TestGroup")) == "names Popen"
    # a test measured slow (tests/data/slow_tests.txt) is not in the inner loop either
    slow = next(iter(fastmark.measured_slow()))
    item = _item(path, "test_pure")
    item.nodeid = slow
    assert fastmark.why_not_fast(item).startswith("took ")


def test_a_fast_test_that_starts_a_process_fails_and_says_what_it_started(pytester):
    """The rules cannot see into another module's helper: the run does (Python's audit events),
    and fails the test that was wrongly marked fast."""
    pytester.makepyfile(fastmark_helper_mod=textwrap.dedent('''
        import subprocess

        def run_true():
            subprocess.run(["true"], check=True)
    '''))
    pytester.makepyfile(test_inner=textwrap.dedent('''
        import pytest
        import fastmark_helper_mod

        def test_pure():
            assert 1 + 1 == 2

        def test_spawns_through_a_helper():
            fastmark_helper_mod.run_true()

        @pytest.mark.process
        def test_marked_by_hand():
            fastmark_helper_mod.run_true()
    '''))
    listed = pytester.runpytest_inprocess("-p", "fastmark", "-m", "fast", "--collect-only", "-q")
    assert sorted(line for line in listed.outlines if "::" in line) == [
        "test_inner.py::test_pure", "test_inner.py::test_spawns_through_a_helper"]
    res = pytester.runpytest_inprocess("-p", "fastmark", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=3, errors=1)
    text = res.stdout.str()
    assert "test_spawns_through_a_helper is marked fast (starts no process) but started 1 " \
           "process(es), the first: 'true'" in text, text
    assert "ERROR test_inner.py::test_spawns_through_a_helper" in text


@pytest.mark.parametrize("event", ["os.fork", "os.posix_spawn", "os.system"])
def test_every_way_of_starting_a_process_is_seen(event):
    before = len(fastmark._started)
    fastmark._audit(event, ())
    assert fastmark._started[before:] == [event]
    del fastmark._started[before:]
