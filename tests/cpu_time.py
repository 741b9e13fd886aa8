"""CPU seconds per test, for comparing a change on a shared, loaded machine (a pytest plugin).

Wall times (``--durations``) on a machine that other runs keep busy grow with the load (a
test whose work is a second of CPU was seen taking 5-25 s); the CPU a test spends does not.
This counts, for each test (set-up, call and tear-down), the CPU time of the test process and
of the child processes it has waited for (the app run as a command, ffmpeg, a synthesis pool
that was shut down), and prints the sums per module and the slowest tests at the end:

    PYTHONPATH=tests .venv/bin/python -m pytest -n 0 -p cpu_time tests/test_pack.py tests/test_synth.py

Not counted: children still running or never waited for (a pool the test leaves to its
process's exit), and processes a test did not start (servers shared by the session).
Compare a change on the same modules, in the same order, as the before and after of one run.

With ``--cpu-out FILE`` it also writes every test's CPU seconds and wall seconds to FILE
(``cpu wall node-id`` a line), the CPU column of tests/data/slow_tests.txt.
"""
from __future__ import annotations

import collections
import resource
import time

import pytest

_per_test: collections.Counter = collections.Counter()
_per_module: collections.Counter = collections.Counter()
_wall: collections.Counter = collections.Counter()


def pytest_addoption(parser):
    parser.addoption("--cpu-out", default=None,
                     help="write each test's CPU and wall seconds to this file")


def _cpu_s() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, wall = _cpu_s(), time.perf_counter()
    yield
    spent = _cpu_s() - start
    _wall[item.nodeid] += time.perf_counter() - wall
    _per_test[item.nodeid] += spent
    _per_module[item.nodeid.split("::", 1)[0]] += spent


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    out = terminalreporter.config.getoption("--cpu-out")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            for name, s in _per_test.items():
                f.write(f"{s:.2f} {_wall[name]:.2f} {name}\n")
    terminalreporter.section("CPU seconds per module (this process and waited-for children)")
    for name, s in _per_module.most_common():
        write(f"{s:8.2f}  {name}")
    write(f"{sum(_per_module.values()):8.2f}  total")
    terminalreporter.section("CPU seconds, slowest 30 tests")
    for name, s in _per_test.most_common(30):
        write(f"{s:8.2f}  {name}")
