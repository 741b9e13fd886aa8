"""A reading plan: the whole reading as timed segments, in sample frames.

The engine (``reader.reading.engine``) makes a plan; the renderer and the live session walk it.  A plan
is plain data and never changes once made.

Segment kinds:

  ``kami``      a 上の句 being spoken (speech)
  ``shimo``     a 下の句 being spoken, its held last sound (余韻) included (speech)
  ``whole``     a one-line text spoken whole (goshiki's 「ご用意よければ 空札一枚」) (speech)
  ``ma``        間: the silence right before a 上の句 (exactly ``settings.ma_ms``)
  ``take``      the wait after a 上の句 while players take the card.  ``wait=True``: a live
                reader waits here for a key; auto mode and files use its set length.
  ``gap``       the silence between the two halves of one poem (goshiki, beginner, jo-ka)
  ``pause``     any other silence (between poems in goshiki/beginner, after the announcement)

``poem`` is the poem number (int) or "joka" / "karafuda" / "announce".  Silences carry the
poem they belong to: a ``ma`` the poem whose 上の句 follows, a ``take`` the card just read.

Speech segments hold the ``SpeechItem`` to ask the voice for, and start where the voice
starts.  A numbered poem's ``kami`` also carries its kimariji as it was when read (among the
poems of the universe not read before it) and ``decisive``: the plan frame where the kimariji's
last mora starts, the moment the poem became decisive (grab timing measures from it).  Segments tile the timeline: each starts where the previous one ended.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from audio.voice import SpeechItem

SPEECH_KINDS = frozenset({"kami", "shimo", "whole"})
SILENCE_KINDS = frozenset({"ma", "take", "gap", "pause"})


@dataclass(frozen=True)
class Segment:
    kind: str
    poem: int | str
    start: int  # frame, inclusive
    end: int  # frame, exclusive
    speech: SpeechItem | None = None
    wait: bool = False
    #: kami of a numbered poem: its kimariji at the moment it is read (card form, as heard)
    kimariji: str | None = None
    kimariji_sound: str | None = None
    #: kami: plan frame where the kimariji's last mora starts (the poem became decisive)
    decisive: int | None = None

    @property
    def frames(self) -> int:
        return self.end - self.start

    @property
    def is_speech(self) -> bool:
        return self.kind in SPEECH_KINDS


@dataclass(frozen=True)
class Plan:
    sample_rate: int
    rules: str
    seed: int | None
    #: poem numbers in the order their 上の句 are read (karafuda included)
    order: tuple[int, ...]
    #: the poems whose kimariji matter (what can be read): kimariji are counted among these
    universe: tuple[int, ...]
    #: poems in ``order`` that are karafuda drawn for a practice subset (not in the selection)
    karafuda: tuple[int, ...]
    segments: tuple[Segment, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    voice: str = ""

    @property
    def frames(self) -> int:
        return self.segments[-1].end if self.segments else 0

    @property
    def seconds(self) -> float:
        return self.frames / self.sample_rate

    def ms(self, frame: int) -> float:
        return round(frame * 1000.0 / self.sample_rate, 3)

    def find(self, kind: str, poem: int | str) -> list[Segment]:
        return [s for s in self.segments if s.kind == kind and s.poem == poem]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form (``karuta plan --json``, ``--plan-out``)."""
        return {
            "sample_rate": self.sample_rate,
            "rules": self.rules,
            "seed": self.seed,
            "voice": self.voice,
            "order": list(self.order),
            "universe": list(self.universe),
            "karafuda": list(self.karafuda),
            "settings": self.settings,
            "frames": self.frames,
            "duration_ms": self.ms(self.frames),
            "segments": [
                {
                    "kind": s.kind,
                    "poem": s.poem,
                    "start_ms": self.ms(s.start),
                    "end_ms": self.ms(s.end),
                    "start_frame": s.start,
                    "end_frame": s.end,
                    **({"wait": True} if s.wait else {}),
                    **({"kimariji": s.kimariji, "kimariji_sound": s.kimariji_sound,
                        "decisive_ms": self.ms(s.decisive)} if s.kimariji is not None else {}),
                }
                for s in self.segments
            ],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)
