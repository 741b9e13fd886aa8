"""Clips of the synthesized voice made ahead in the test process, for tests whose command or
import aligns with the voice but does not test how the voice is made."""
from __future__ import annotations


def made_ahead(synth_cache, keys, parts=("kami", "shimo")) -> None:
    """Make, in this process, the clips of the default synthesized voice (``SynthVoice()``)
    for ``keys`` x ``parts`` into the worker's shared cache (the ``synth_cache`` fixture, set
    as the test's ``KARUTA_CACHE_DIR``): an import or a ``voice check`` aligning with that
    voice then reads them back, as a user's second run would, instead of starting its
    synthesis processes for them (each a Python with the voice loaded, ~2 CPU-s).  Those
    processes are tested by test_synth.py (``test_prefetch``, the prefetch queue) and by the
    commands' own tests."""
    from audio.synth import SynthVoice
    from audio.voice import SpeechItem

    voice = SynthVoice(cache_dir=synth_cache / "synth", workers=0)
    for key in keys:
        for part in parts:
            voice.samples(SpeechItem(key, part))
