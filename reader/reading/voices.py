"""Which voice reads: the name on the command line, the configured default, or the built-in
synthesized voice.  One place, used by every command that reads aloud."""
from __future__ import annotations

from reader.base.errors import KarutaError


def make_voice(spec: str | None):
    """``synth`` (built-in), ``tone`` (test tones), a voice pack name or folder, or None (the
    configured default, else the built-in synth)."""
    from audio.voice import ToneVoice

    if spec == "tone":
        return ToneVoice()
    try:
        from audio.pack import resolve_voice
    except ImportError:
        resolve_voice = None
    if resolve_voice is not None:
        return resolve_voice(spec, _synth)
    if spec in (None, "synth"):
        return _synth()
    raise KarutaError(f"unknown voice {spec!r}: use synth or tone")


def _synth():
    from audio.synth import SynthVoice

    return SynthVoice()


def build_reading(settings, seed: int, voice_spec: str | None):
    """(plan, voice) for settings + seed + voice name: what ``karuta read/render/plan``, the
    club and the match reader all build."""
    from reader.reading.engine import build_plan

    voice = make_voice(voice_spec)
    return build_plan(settings, seed, voice), voice
