"""The voice interface: what the reading engine asks of any voice, synthesized or recorded.

A voice answers two questions about a ``SpeechItem`` (which text, which half, how fast, how
long the last sound is held):

  ``layout(item)``  -> ``Layout``: its exact length in frames and the frame where each mora
                      starts.  Cheap (no synthesis): the engine plans a whole reading from it.
  ``samples(item)`` -> float32 mono numpy array of exactly ``layout(item).frames`` frames at
                      ``voice.sample_rate``, starting where the voice starts (no leading
                      silence), the held last sound (余韻) included.

Because the layout is fixed before any audio exists, the plan is exact and the same plan feeds
live playback and rendering.

``ToneVoice`` is a real, deterministic voice made of tones (one short tone per mora).  It needs
no speech engine, so the engine, renderer and backends can be tested quickly against it; the
synthesized voice must pass the same contract tests (tests/test_voice_contract.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["SpeechItem", "Mora", "Layout", "Voice", "ToneVoice", "PARTS", "text_for"]

#: "kami" = 上の句 (ku 1-3), "shimo" = 下の句 (ku 4-5), "whole" = all five ku (or a one-line text)
PARTS = ("kami", "shimo", "whole")


@dataclass(frozen=True)
class SpeechItem:
    """What to say.  Hashable: it is the cache key's core.

    key:      "1".."100" (a poem), "joka", "karafuda" (goshiki's 空札 poem), "announce"
    part:     "kami" | "shimo" | "whole"
    speed:    1.0 = the kyogi pace (about 0.3 s a mora); 1.5 is 1.5x faster
    hold_ms:  how long the last mora's vowel is held after it is spoken (余韻); 0 = not held
    """

    key: str
    part: str
    speed: float = 1.0
    hold_ms: int = 0

    def __post_init__(self):
        if self.part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, not {self.part!r}")


@dataclass(frozen=True)
class Mora:
    """One spoken mora: its kana (as heard) and its frames [start, end) within the clip."""

    kana: str
    start: int
    end: int


@dataclass(frozen=True)
class Layout:
    """Exact timing of one clip.  ``frames`` includes the held last sound."""

    frames: int
    sample_rate: int
    morae: tuple[Mora, ...]
    #: True when the mora onsets are exact (synthesized); False when estimated (recordings)
    exact: bool = True

    @property
    def ms(self) -> float:
        return self.frames * 1000.0 / self.sample_rate


@runtime_checkable
class Voice(Protocol):
    name: str
    sample_rate: int

    def layout(self, item: SpeechItem) -> Layout: ...

    def samples(self, item: SpeechItem):  # -> numpy.ndarray (float32, mono)
        ...


def text_for(key: str):
    """The ``poems.Text`` a key names ("1".."100", "joka", "karafuda", "announce")."""
    import poems

    named = {"joka": poems.JOKA, "karafuda": poems.GOSHIKI_KARAFUDA, "announce": poems.GOSHIKI_ANNOUNCE}
    if key in named:
        return named[key]
    if key.startswith("ku:"):
        return composed_text(key)
    try:
        return poems.poem(int(key))
    except (ValueError, KeyError):
        raise KeyError(f"no text named {key!r}") from None


def composed_text(key: str):
    """A poem put together from ku of the 100 (``karuta table genkan``'s composed poems):
    ``"ku:12.1,45.2,3.3,77.4,9.5"`` is poem 12's first ku, then poem 45's second, and so on."""
    import poems

    try:
        pairs = [tuple(int(x) for x in part.split(".")) for part in key[3:].split(",")]
        if not pairs or any(len(p) != 2 or not 1 <= p[1] <= 5 for p in pairs):
            raise ValueError
        chosen = [(poems.poem(n), k - 1) for n, k in pairs]
    except (ValueError, KeyError):
        raise KeyError(f"no text named {key!r}") from None
    return poems.Text(key=key, kanji=tuple(p.kanji[k] for p, k in chosen),
                      reading=tuple(p.reading[k] for p, k in chosen))


def reading_for(item: SpeechItem) -> tuple[str, ...]:
    """The ku (modern reading) an item says."""
    text = text_for(item.key)
    if item.part == "kami":
        return text.kami_reading if len(text.reading) == 5 else text.reading
    if item.part == "shimo":
        return text.shimo_reading if len(text.reading) == 5 else text.reading
    return text.reading


class ToneVoice:
    """A deterministic test voice: one 440-880 Hz tone per mora, 0.25 s a mora at speed 1.

    Each ku's last mora is twice as long; the held last sound is a steady tone.  Layouts are
    exact and ``samples`` always has exactly ``layout().frames`` frames.
    """

    name = "tone"

    def __init__(self, sample_rate: int = 48000, mora_ms: int = 250):
        self.sample_rate = sample_rate
        self.mora_ms = mora_ms

    def _units(self, item: SpeechItem) -> list[tuple[str, int]]:
        from poems.kimariji import sound_morae

        out = []
        mora = round(self.mora_ms / item.speed * self.sample_rate / 1000)
        for ku in reading_for(item):
            morae = sound_morae([ku])
            for i, m in enumerate(morae):
                out.append((m, mora * (2 if i == len(morae) - 1 else 1)))
        return out

    def layout(self, item: SpeechItem) -> Layout:
        pos, morae = 0, []
        for kana, n in self._units(item):
            morae.append(Mora(kana, pos, pos + n))
            pos += n
        hold = round(item.hold_ms * self.sample_rate / 1000)
        if morae and hold:
            last = morae[-1]
            morae[-1] = Mora(last.kana, last.start, last.end + hold)
            pos += hold
        return Layout(frames=pos, sample_rate=self.sample_rate, morae=tuple(morae))

    def samples(self, item: SpeechItem):
        import numpy as np

        lay = self.layout(item)
        out = np.zeros(lay.frames, dtype=np.float32)
        for i, m in enumerate(lay.morae):
            n = m.end - m.start
            t = np.arange(n, dtype=np.float64) / self.sample_rate
            freq = 440.0 * 2 ** ((ord(m.kana[0]) % 12) / 12)
            env = np.minimum(1.0, np.minimum(np.arange(n), np.arange(n)[::-1]) / 240.0)
            out[m.start:m.end] = (0.3 * np.sin(2 * np.pi * freq * t) * env).astype(np.float32)
        return out
