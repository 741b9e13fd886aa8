"""The one clock shape (``reader.base.clock``) and the tests' one fake: the same contract."""
from __future__ import annotations

import time

import pytest

from fakes import FakeClock
from reader.base.clock import SYSTEM_CLOCK


@pytest.fixture(params=["system", "fake"])
def clock(request):
    return SYSTEM_CLOCK if request.param == "system" else FakeClock(step_ms=0.5)


def test_the_clock_never_goes_back_and_its_units_agree(clock):
    a_ns, a_s, a_ms = clock.ns(), clock.seconds(), clock.ms()
    b_ms, b_s, b_ns = clock.ms(), clock.seconds(), clock.ns()
    assert a_ns <= b_ns and a_s <= b_s and a_ms <= b_ms
    # read in the order ns, s, ms then ms, s, ns: each unit's span holds the others'
    assert a_ns / 1e9 <= a_s <= a_ms / 1e3 <= b_ms / 1e3 <= b_s <= b_ns / 1e9


def test_now_is_an_aware_utc_datetime(clock):
    now = clock.now()
    assert now.tzinfo is not None and now.utcoffset().total_seconds() == 0


def test_the_system_clock_is_the_one_keys_are_stamped_on():
    before = time.perf_counter_ns()
    ns = SYSTEM_CLOCK.ns()
    assert before <= ns <= time.perf_counter_ns()


def test_the_fake_moves_only_as_told():
    c = FakeClock(t=10.0)
    assert c.seconds() == c.seconds() == 10.0
    c.advance(2.5)
    assert c.ms() == 12_500.0 and c.ns() == 12_500_000_000
    assert (c.now() - FakeClock(t=0.0).now()).total_seconds() == 2.5
