"""audio.stretch: slower/faster without a pitch change, exact lengths."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio.stretch import stretch, stretched_length

RATE = 48000


def harmonic(seconds, f0=220.0):
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.4 * np.sin(2 * np.pi * f0 * t) + 0.2 * np.sin(2 * np.pi * 3 * f0 * t)).astype(np.float32)


def dominant(x):
    w = np.hanning(len(x))
    return np.argmax(np.abs(np.fft.rfft(x * w))) * RATE / len(x)


@pytest.mark.parametrize("speed", [0.7, 0.8, 0.9, 1.1, 1.2])
def test_pitch_kept_and_length_exact(speed):
    x = harmonic(2.0)
    y = stretch(x, RATE, speed)
    assert len(y) == round(len(x) / speed)
    assert abs(dominant(y[4000:-4000]) - 220) < 1.0
    # steady level: no dropouts or doubled loudness where pieces overlap
    hop = 480
    n = (len(y) - 2 * hop) // hop
    rms = np.sqrt((y[hop:hop + n * hop].reshape(n, hop) ** 2).mean(1))
    ref = np.sqrt((x ** 2).mean())
    assert rms[2:-2].min() > 0.9 * ref and rms[2:-2].max() < 1.1 * ref


def test_speed_one_is_identity():
    x = harmonic(0.5)
    assert np.array_equal(stretch(x, RATE, 1.0), x)


@pytest.mark.parametrize("speed", [0.7, 1.2])
def test_events_move_with_the_tempo(speed):
    """Bursts at known times come out at time / speed (±30 ms: WSOLA moves pieces of 40 ms)."""
    x = np.zeros(RATE * 3, np.float32)
    onsets = [0, RATE // 2, RATE, int(1.9 * RATE), int(2.5 * RATE)]
    for o in onsets:
        x[o:o + 4800] = harmonic(0.1, 330)
    y = stretch(x, RATE, speed)
    env = np.abs(y) > 0.05
    found = [i for i in range(1, len(env)) if env[i] and not env[i - 1:i].any() and not env[max(0, i - 960):i].any()]
    if env[0]:
        found = [0] + found
    assert len(found) == len(onsets)
    for f, o in zip(found, onsets):
        assert abs(f - o / speed) < 0.03 * RATE


def test_clip_starts_where_it_started():
    x = harmonic(1.0)
    for speed in (0.7, 1.2):
        y = stretch(x, RATE, speed)
        assert abs(float(y[0]) - float(x[0])) < 1e-3
        assert np.abs(y[:50] - x[:50]).max() < 0.02


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 30000), speed=st.floats(0.7, 1.2))
def test_any_length(n, speed):
    x = np.random.default_rng(n).normal(0, 0.1, n).astype(np.float32)
    y = stretch(x, RATE, speed)
    assert len(y) == stretched_length(n, speed)
    assert y.dtype == np.float32 and np.all(np.isfinite(y))


def test_bad_speed():
    with pytest.raises(ValueError):
        stretch(np.zeros(10, np.float32), RATE, 0)
