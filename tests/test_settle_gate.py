"""The "get ready" (``reader.input.taps.SettleGate``) runs on the ``Clock`` it is given: with the
tests' ``FakeClock`` its wait, countdown and fallback follow the time the test moves, in
microseconds of real time.  (The real output's settling is tested with PortAudio in
tests/test_taps.py and the drills' tests.)"""
from __future__ import annotations

from fakes import FakeClock
from reader.input.taps import SettleGate


class _Output:
    """What the gate asks of an output: whether its DAC times have settled yet."""

    def __init__(self):
        self.settled = False

    def timing_settled(self) -> bool:
        return self.settled


class _Cursor:
    def __init__(self):
        self.held = False

    def hold(self):
        self.held = True

    def resume(self):
        self.held = False


def _gate(max_s=20.0):
    clock, output, cursor = FakeClock(t=50.0), _Output(), _Cursor()
    gate = SettleGate(output, cursor, max_s=max_s, clock=clock, countdown=3, step_s=0.5)
    return gate, clock, output, cursor


def test_the_gate_waits_for_the_timing_then_counts_down_on_its_clock():
    gate, clock, output, cursor = _gate()
    assert gate.start() and cursor.held and gate.pop_message() == "get ready…"
    clock.advance(1.0)
    assert not gate.poll() and gate.waiting  # not settled yet: still getting ready
    output.settled = True
    clock.advance(1.0)
    assert not gate.poll() and gate.pop_message() == "3"
    shown = []
    for _ in range(3):
        clock.advance(0.5)
        ended = gate.poll()
        shown.append(gate.pop_message())
    assert shown == ["2", "1", ""] and ended and not cursor.held and not gate.waiting
    assert gate.settle_s == 2.0 and gate.waited_s == 3.5
    assert gate.describe() == "get ready: 3.5 s (timing settled after 2.0 s, then a countdown)"


def test_the_gate_gives_up_at_its_cap_on_its_clock():
    gate, clock, output, cursor = _gate(max_s=5.0)
    gate.start()
    clock.advance(4.875)
    assert not gate.poll()
    clock.advance(0.125)
    assert gate.poll() and gate.fallback and not cursor.held
    assert gate.pop_message().startswith("timing did not settle within 5 s")
