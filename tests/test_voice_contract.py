"""The Voice contract, run against every voice (ToneVoice and the synthesized SynthVoice).

Grid: a voice may quantize lengths to ``voice.grid`` frames (SynthVoice: 240 = 5 ms at 48 kHz;
voices without the attribute: 1 frame).  A ``hold_ms`` then adds exactly
``round(hold_ms * rate / 1000 / grid) * grid`` frames.
"""
from __future__ import annotations

import numpy as np
import pytest

from audio.voice import Layout, SpeechItem, ToneVoice, Voice, reading_for
from poems.kimariji import sound_morae

pytestmark = pytest.mark.filterwarnings("ignore:Dictionary.create:DeprecationWarning")


@pytest.fixture(params=["tone", "synth"])
def voice(request, tmp_path, monkeypatch, synth_cache):
    monkeypatch.setenv("KARUTA_CACHE_DIR", str(synth_cache))
    if request.param == "tone":
        yield ToneVoice()
    else:
        from audio.synth import SynthVoice

        # synthesizing in this process: a clip is the same from a worker process
        # (test_synth.test_deterministic), and a pool started for one clip a test was most of
        # the test's time
        v = SynthVoice(workers=0)
        yield v
        v.close()


ITEMS = [
    SpeechItem("1", "kami"),
    SpeechItem("100", "shimo", hold_ms=1000),
    SpeechItem("44", "kami", speed=1.5),
    SpeechItem("karafuda", "shimo", speed=0.8, hold_ms=333),
    SpeechItem("announce", "whole"),
]


def _grid(voice) -> int:
    return getattr(voice, "grid", 1)


def test_is_a_voice(voice):
    assert isinstance(voice, Voice)
    assert isinstance(voice.name, str) and voice.name
    assert voice.sample_rate == 48000


@pytest.mark.parametrize("item", ITEMS, ids=lambda i: f"{i.key}-{i.part}-{i.speed}-{i.hold_ms}")
def test_layout_and_samples(voice, item):
    lay = voice.layout(item)
    assert isinstance(lay, Layout) and lay.sample_rate == voice.sample_rate
    assert lay == voice.layout(item)  # stable
    # morae: the reading as heard, one per mora, tiling the clip from 0 to its end
    assert tuple(m.kana for m in lay.morae) == sound_morae(reading_for(item))
    assert lay.morae[0].start == 0
    assert lay.morae[-1].end == lay.frames
    for a, b in zip(lay.morae, lay.morae[1:]):
        assert a.start < a.end == b.start < b.end
    assert lay.frames % _grid(voice) == 0
    samples = voice.samples(item)
    assert isinstance(samples, np.ndarray) and samples.dtype == np.float32 and samples.ndim == 1
    assert len(samples) == lay.frames
    assert np.isfinite(samples).all() and np.abs(samples).max() <= 1.0
    assert np.abs(samples).max() > 0.05  # it says something


@pytest.mark.parametrize("key,part", [("1", "kami"), ("61", "shimo"), ("joka", "kami")])
def test_speed_shortens(voice, key, part):
    slow = voice.layout(SpeechItem(key, part, speed=0.8)).frames
    base = voice.layout(SpeechItem(key, part)).frames
    fast = voice.layout(SpeechItem(key, part, speed=1.5)).frames
    assert slow > base > fast
    assert fast < base * 0.75


@pytest.mark.parametrize("hold_ms", [1, 250, 1234, 3000])
def test_hold_lengthens_by_exactly_hold_ms(voice, hold_ms):
    base = voice.layout(SpeechItem("23", "shimo"))
    held = voice.layout(SpeechItem("23", "shimo", hold_ms=hold_ms))
    grid = _grid(voice)
    expect = round(hold_ms * voice.sample_rate / 1000 / grid) * grid
    assert held.frames - base.frames == expect
    # only the last mora grows
    assert held.morae[:-1] == base.morae[:-1]
    assert held.morae[-1].start == base.morae[-1].start
    assert held.morae[-1].end - base.morae[-1].end == expect


def test_held_samples_length(voice):
    item = SpeechItem("23", "shimo", hold_ms=700)
    assert len(voice.samples(item)) == voice.layout(item).frames
