"""Reciting a composed 現幻 poem with the app's reading voice.

A composed poem is a list of (poem, ku) pairs; the voice layer names it ``"ku:12.1,45.2,…"``
(``audio.voice.composed_text``), so the built-in synthesizer says each ku in its modern reading
with the same chant timing as the hundred, and a recorded voice pack (which has no clip for a
composed text) falls back to the synthesizer as it does for any missing clip.

One plan with one speech segment (the whole poem, its last sound held ``hold_ms``) feeds both
paths: ``render_poem`` writes it to a file, ``play_poem`` plays it live and returns when done.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["speech_key", "poem_plan", "render_poem", "play_poem"]

HOLD_MS = 1500


def speech_key(entry: dict) -> str:
    return "ku:" + ",".join(f"{n}.{k}" for n, k in entry["ku"])


def poem_plan(entry: dict, voice, *, speed: float = 1.0, hold_ms: int = HOLD_MS):
    from audio.voice import SpeechItem
    from audio.plan import Plan, Segment

    key = speech_key(entry)
    item = SpeechItem(key, "whole", speed=speed, hold_ms=hold_ms)
    frames = voice.layout(item).frames
    seg = Segment("whole", key, 0, frames, speech=item)
    return Plan(sample_rate=voice.sample_rate, rules="table", seed=None, order=(), universe=(),
                karafuda=(), segments=(seg,), settings={"hold_ms": hold_ms, "speed": speed},
                voice=getattr(voice, "name", ""))


def render_poem(entry: dict, voice, out: Path | str, replace: bool = False, **kw) -> Path:
    from audio.render import render_to_file

    return render_to_file(poem_plan(entry, voice, **kw), voice, out, replace=replace)


def play_poem(entry: dict, voice, output, **kw) -> None:
    """Play the poem and return when it has been heard.  The clip is made before the stream
    starts (synthesis takes a second or two), so the poem starts at once and plays through."""
    from audio.render import PlanCursor
    from reader.base.errors import DeviceError

    plan = poem_plan(entry, voice, **kw)
    voice.samples(plan.segments[0].speech)  # synthesize (and cache) first
    cursor = PlanCursor(plan, voice, live=True)
    try:
        try:
            output.play(cursor)
        except Exception as e:  # PortAudio failing to start an opened stream
            if type(e).__name__ != "PortAudioError":
                raise
            raise DeviceError(f"the sound device would not start ({' '.join(str(e).split())}): "
                              "recite to a file instead, with --out poem.wav") from None
        while not output.wait(timeout=0.5):
            pass
    finally:
        output.stop()
        cursor.close()
