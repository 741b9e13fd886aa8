"""The page's ClockSync (``reader/web/static/clocksync.js``, the touch-only mode's clock: a
touch on the device mapped to the laptop's clock) and the two-laptop match's
``reader.practice.online.ClockSync`` give the same offset, width and clock steps on the same
round trips.  The JS runs in Debian's headless Chromium (the module imported as the page
imports it), fed the trips Python was fed; every estimate after every trip is compared."""
from __future__ import annotations

import base64
import json
import random
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testbed.cdp import Browser

from reader.practice.online import ClockSync

SOURCE = resources.files("reader.web").joinpath("static", "clocksync.js").read_bytes()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from procguard import session_owned

    with session_owned():
        b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    try:
        b.load("about:blank")
        yield b
    finally:
        b.close()


def in_js(b, trips: list[tuple[float, float, float, float]], keep: int = 128) -> list:
    """Each trip added to the page's ClockSync: [offset, width, jumps, lastJumpMs, rtt]
    after each."""
    url = "data:text/javascript;base64," + base64.b64encode(SOURCE).decode()
    expr = (f"import({json.dumps(url)}).then(({{ ClockSync }}) => {{ const c = new ClockSync"
            f"({keep}); return {json.dumps(trips)}.map(([a, b, c2, d]) => {{ c.add(a, b, c2, d);"
            " return [c.offset, c.width, c.jumps, c.lastJumpMs, c.rtt]; }); })")
    r = b.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
    assert "exceptionDetails" not in r, r
    return r["result"]["value"]


def in_python(trips, keep: int = 128) -> list:
    c = ClockSync(keep)
    out = []
    for t in trips:
        c.add(*t)
        out.append([c.offset, c.width, c.jumps, c.last_jump_ms, c.rtt])
    return out


def link(n: int, seed: int, *, offset=0.25, delay=0.08, jitter=0.02, step_at=None,
         step=0.0, drift_ppm=0.0, every=0.1) -> list[tuple[float, float, float, float]]:
    """``n`` round trips over a link ``delay ± jitter`` each way, the other clock ``offset``
    ahead (stepping by ``step`` at trip ``step_at``, drifting ``drift_ppm``)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t0 = 1000.0 + i * every
        off = offset + drift_ppm * 1e-6 * (t0 - 1000.0) + (step if step_at is not None
                                                           and i >= step_at else 0.0)
        out_d = delay + rng.uniform(-jitter, jitter)
        proc = rng.uniform(0.0, 0.002)
        back = delay + rng.uniform(-jitter, jitter)
        t1 = t0 + out_d + off
        t2 = t1 + proc
        t3 = t0 + out_d + proc + back
        out.append((t0, t1, t2, t3))
    return out


def same(js: list, py: list) -> None:
    assert len(js) == len(py)
    for i, (a, b) in enumerate(zip(js, py)):
        assert a[2] == b[2], f"trip {i}: jumps {a[2]} (page) vs {b[2]}"
        for x, y in zip(a[:2] + a[3:], b[:2] + b[3:]):
            assert x == pytest.approx(y, abs=1e-12), f"trip {i}: page {a} vs Python {b}"


@pytest.mark.parametrize("kw", [
    {},                                           # 80 ± 20 ms each way, 0.1 s pings
    {"step_at": 200, "step": 0.030},              # the laptop's clock steps 30 ms
    {"step_at": 300, "step": -0.008, "jitter": 0.001, "delay": 0.002},  # a step < the trip
    {"drift_ppm": 300.0},                         # the two clocks drift apart
    {"delay": 0.0005, "jitter": 0.0005},          # a quick LAN
], ids=["jitter", "step", "small-step", "drift", "lan"])
def test_the_page_and_the_match_give_the_same_offset_on_the_same_trips(browser, kw):
    trips = link(500, 7, **kw)
    py = in_python(trips)
    same(in_js(browser, trips), py)
    if "step" in kw:
        assert py[-1][2] >= 1  # (the step was seen: the compared path includes it)
    assert abs(py[-1][0] - (0.25 + kw.get("step", 0.0) + kw.get("drift_ppm", 0) * 1e-6 * 49.9)) \
        < max(py[-1][1], 0.002)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 0.3), st.floats(-0.05, 0.05), st.floats(0, 0.01),
                          st.floats(0, 0.3)), min_size=1, max_size=160),
       st.integers(2, 128))
def test_any_trips_give_the_same_estimates_in_both(browser, legs, keep):
    """Arbitrary trips (out, the other clock's step, their turn-around, back: replies before
    their pings included) and window sizes."""
    trips, t, off = [], 100.0, 0.5
    for out, step, turn, back in legs:
        off += step
        t1 = t + out + off
        trips.append((t, t1, t1 + turn, t + out + turn + back))
        t += 0.1
    same(in_js(browser, trips, keep), in_python(trips, keep))
