"""What every part of ``audio.pack`` shares: the constants, ``MissingClip``, ``Problem``,
the folder packs live in, TOML strings, and the reference layout a clip is timed by."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from audio.voice import Layout, SpeechItem
from reader.base.dirs import data_dir
from reader.base.errors import KarutaError

PACK_RATE = 48000
PARTS = ("kami", "shimo")
KEYS = ("joka",) + tuple(str(n) for n in range(1, 101))
BUILTIN = ("synth", "tone")
PACK_FORMAT = 1
TARGET_RMS_DB = -20.0
PEAK_LIMIT = 10 ** (-0.5 / 20)
MIN_CLIP_S = 1.0
MAX_CLIP_S = 20.0
SILENT_DB = -60.0
MIN_PAUSE_S = 0.15
_PART_JA = {"kami": "上の句", "shimo": "下の句"}


class MissingClip(KarutaError):
    """The pack has no (usable) clip for this item."""


def voices_dir() -> Path:
    return data_dir() / "voices"


@dataclass(frozen=True)
class Problem:
    clip: str  # "12 kami", "12", "voice.toml", a file name
    kind: str  # missing | unreadable | silent | clipped | too short | too long | low confidence | ...
    detail: str = ""

    def line(self) -> str:
        return f"{self.clip}: {self.kind}" + (f" ({self.detail})" if self.detail else "")

    def to_json(self):
        return [self.clip, self.kind, self.detail]


def clip_label(key: str, part: str) -> str:
    return f"{key} {part}"


def format_problems(problems: list[Problem]) -> str:
    """A plain text table: clip | problem | detail."""
    if not problems:
        return ""
    rows = [("clip", "problem", "detail")] + [(p.clip, p.kind, p.detail) for p in problems]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return "\n".join(f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows)


def _order(key: str) -> int:
    return 0 if key == "joka" else int(key) if key.isdigit() else 999


def _toml_str(s: str) -> str:
    return json.dumps(str(s), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _ref_layout(ref, key: str, part: str) -> Layout:
    item = SpeechItem(key, part)
    if ref is not None:
        try:
            return ref.layout(item)
        except Exception:
            pass
    from audio.voice import ToneVoice

    return ToneVoice(PACK_RATE).layout(item)
