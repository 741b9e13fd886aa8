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


#: how each poem of ``write_repeat_pack`` is read, in turn: (speed, pause before the 下の句,
#: pause before its repeat, the repeat: "read" again at another pace and level, or "copy",
#: a digital copy; what is in the pauses: "breath" a noise burst, "click" a 3 ms tick)
REPEAT_STYLES = (
    (1.0, 1.6, 1.2, "read", ("breath",)),
    (1.2, 1.1, 2.4, "copy", ("click",)),       # the repeat's pause the longest
    (0.85, 2.5, 0.9, "read", ("breath", "click")),
    (1.0, 1.3, 2.6, "read", ()),
)


def _burst(rng, kind: str, rate: int, level: float):
    import numpy as np

    if kind == "click":
        n = int(0.003 * rate)
        return (level * 3 * rng.choice([-1.0, 1.0]) * np.exp(-np.arange(n) / (0.0005 * rate))).astype(np.float32)
    n = int(rng.uniform(0.2, 0.35) * rate)  # a breath: band-limited noise, rising and falling
    noise = rng.standard_normal(n + 64)
    noise = np.convolve(noise, np.hanning(64), mode="same")[:n]
    noise /= noise.std()
    return (level * noise * np.hanning(n)).astype(np.float32)


def write_repeat_pack(folder, keys, *, seed: int = 0, styles=REPEAT_STYLES, voice=None,
                      rate: int = 48000, ext: str = "wav") -> dict:
    """One file a poem (``NNN.wav``) read 上・下・下 as many readers' sets are: the 上の句, a
    pause, the 下の句, a pause, the 下の句 again, by the synthesized voice (``voice``, default
    ``SynthVoice()``; its clips made ahead by ``made_ahead``) at the style's speed (WSOLA),
    with a noise floor 70 dB under the voice and breaths or clicks 0.3-0.8 s after a part
    ends (and at least 0.15 s before the next).  Returns per key: the samples where the
    上の句's voice ends, where the 下の句's starts and ends, where the repeat starts and ends,
    and the style."""
    import numpy as np
    import soundfile as sf

    from audio.decode import trim_silence
    from audio.stretch import stretch

    if voice is None:
        from audio.synth import SynthVoice

        voice = SynthVoice(workers=0)
    from audio.voice import SpeechItem

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    truth = {}
    for i, key in enumerate(keys):
        speed, p1, p2, repeat, bursts = styles[i % len(styles)]
        halves = []
        for part in ("kami", "shimo"):
            x = np.asarray(voice.samples(SpeechItem(key, part)), np.float32)
            s, e = trim_silence(x, voice.sample_rate)
            x = stretch(x[s:e], voice.sample_rate, speed) if speed != 1.0 else x[s:e]
            halves.append(0.5 * x / max(1e-9, float(np.abs(x).max())))
        kami, shimo = halves
        again = shimo.copy() if repeat == "copy" else \
            0.8 * stretch(shimo, rate, 0.93)  # read again: a little slower, a little softer
        level = 0.5 * 10 ** (-38 / 20)

        def pause(seconds):
            z = np.zeros(int(seconds * rate), np.float32)
            for kind in bursts:
                b = _burst(rng, kind, rate, level)
                at = int(rng.uniform(0.3, 0.8) * rate) if kind == "breath" else int(0.25 * rate)
                at = max(0, min(at, len(z) - len(b) - int(0.15 * rate)))  # over 0.15 s before the voice
                z[at:at + len(b)] += b[: max(0, len(z) - at)]
            return z

        lead = np.zeros(int(rng.uniform(0.3, 0.9) * rate), np.float32)
        pieces = [lead, kami, pause(p1), shimo, pause(p2), again, np.zeros(int(0.5 * rate), np.float32)]
        y = np.concatenate(pieces)
        y += (0.5 * 10 ** (-70 / 20) * rng.standard_normal(len(y))).astype(np.float32)
        nnn = 0 if key == "joka" else int(key)
        sf.write(folder / f"reader_{nnn:03d}.{ext}", y, rate, subtype="PCM_24")
        at = np.cumsum([0] + [len(p) for p in pieces])
        truth[key] = {"kami_end": int(at[2]), "shimo": (int(at[3]), int(at[4])),
                      "repeat": (int(at[5]), int(at[6])), "style": styles[i % len(styles)]}
    return truth
