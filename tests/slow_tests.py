"""Write tests/data/slow_tests.txt, the measured costs the test scheduler hands units out by
(tests/conftest.py, ``hand_out_order``), from two measurements of the whole suite:

- the wall seconds of a run like CI's (``--durations=0`` output of ``scripts/test``, three
  workers on the quiet machine: what a test takes beside the others), and
- the CPU seconds of each test (``PYTHONPATH=tests pytest -n 0 -p cpu_time --cpu-out FILE``,
  tests/cpu_time.py: CPU does not depend on what else runs).

    .venv/bin/python tests/slow_tests.py --durations ci.log --cpu cpu.txt

A test of the durations run that took 0.5 s or more of either is listed; one the CPU run did
not have (new or renamed since) keeps the CPU figure the file gave it, else its wall time.
"""
from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

from conftest import _UNLISTED_S, SLOW_TESTS, _test_costs

OUT = Path(SLOW_TESTS)
HEADER = f"""\
# Wall and CPU seconds of each test (set-up + call + tear-down) that took 0.5 s or more of
# either: wall from a --durations=0 run of scripts/test (three workers, quiet 2-core machine),
# CPU from tests/cpu_time.py (-n 0).  The scheduler in tests/conftest.py hands out the units
# it expects to take longest first, with the units that mostly wait (little CPU for their
# length) spread among the ones that compute; a test not listed counts as {_UNLISTED_S} s of each.
# Only the order of the work depends on this file.  Refresh: tests/slow_tests.py.
"""
_DURATION = re.compile(r"^([0-9.]+)s (?:setup|call|teardown)\s+(\S.*)$")


def read_durations(log: str) -> dict[str, float]:
    walls: collections.Counter = collections.Counter()
    for line in log.splitlines():
        m = _DURATION.match(line.strip())
        if m:
            walls[m.group(2).strip()] += float(m.group(1))
    return dict(walls)


def read_cpu(text: str) -> dict[str, float]:
    cpu = {}
    for line in text.splitlines():
        if line.strip():
            c, _wall, nodeid = line.split(None, 2)
            cpu[nodeid.strip()] = float(c)
    return cpu


def table(walls: dict[str, float], cpu: dict[str, float],
          previous: dict[str, tuple[float, float]] | None = None, floor: float = 0.5) -> str:
    """The file's text: the tests of the durations run (the suite as it is now), each with its
    CPU from ``cpu``, else from the ``previous`` file's (a test measured by hand since),
    else its wall time."""
    previous = previous or {}
    rows = []
    for nodeid, w in walls.items():
        c = cpu.get(nodeid, previous.get(nodeid, (w, w))[1])
        if max(w, c) >= floor:
            rows.append((w, c, nodeid))
    rows.sort(key=lambda r: (-r[0], r[2]))
    return HEADER + "".join(f"{w:.2f} {c:.2f} {n}\n" for w, c, n in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--durations", required=True, help="a scripts/test log with --durations=0")
    ap.add_argument("--cpu", required=True, help="a --cpu-out file of tests/cpu_time.py")
    args = ap.parse_args()
    walls = read_durations(Path(args.durations).read_text(encoding="utf-8", errors="replace"))
    cpu = read_cpu(Path(args.cpu).read_text(encoding="utf-8"))
    OUT.write_text(table(walls, cpu, _test_costs()), encoding="utf-8")
    print(f"{OUT}: {len(OUT.read_text().splitlines())} lines")


if __name__ == "__main__":
    main()
