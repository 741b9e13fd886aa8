"""Tap calibration: steady clicks, the player taps along, the median offset is saved per device.

What the offset holds: everything between "the click reached the speaker" (as the output's DAC
clock predicts it) and "the tap was stamped", as the player really taps — the device's
unreported latency, the keyboard and input path, and the player's own habit of tapping a little
early or late.  ``reader.grab.reaction`` subtracts it from every tap.

    clicks = click_track(rate)                  # a Plan + voice of ``count`` clicks
    offsets = tap offsets to the nearest click  # ms, tap - click, on the plan timeline
    result = analyze(taps_ms, clicks_ms)        # outliers dropped (MAD rule), median
    CalibrationStore().save(device_key, result)

Store: ``$KARUTA_CONFIG_DIR/calibration.json`` if set (tests), else
``platformdirs.user_config_dir("karuta")/calibration.json``::

    {"version": 1, "devices": {"sounddevice:pulse": {"offset_ms": 12.4, "taps": 18,
      "dropped": 2, "spread_ms": 3.1, "input": "terminal", "date": "2026-...Z"}}}
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from reader.errors import KarutaError
from reader.dirs import config_dir

__all__ = [
    "CalibrationError", "CalibrationResult", "CalibrationStore", "analyze", "click_track",
    "ClickVoice", "device_key", "config_dir", "MIN_TAPS",
]

MIN_TAPS = 5
FILE_NAME = "calibration.json"


class CalibrationError(KarutaError):
    """Too few usable taps, or an unreadable calibration file."""





@dataclass(frozen=True)
class CalibrationResult:
    offset_ms: float  # median of the kept offsets (tap - click)
    taps: int  # taps kept
    dropped: int  # taps dropped as outliers (or matched to no click)
    spread_ms: float  # median absolute deviation of the kept offsets
    offsets: tuple[float, ...] = ()

    def describe(self) -> str:
        return (f"offset {self.offset_ms:+.1f} ms (from {self.taps} taps, {self.dropped} dropped, "
                f"spread ±{self.spread_ms:.1f} ms)")


def analyze(taps_ms, clicks_ms, *, min_taps: int = MIN_TAPS, floor_ms: float = 15.0,
            max_ms: float = 250.0) -> CalibrationResult:
    """Each tap against its nearest click (one tap per click: the nearer is kept); offsets
    further than ``max_ms`` are not taps along; then outliers further than
    ``max(3 × 1.4826 × MAD, floor_ms)`` from the median are dropped; the median of the rest.
    Raises ``CalibrationError`` with fewer than ``min_taps`` kept."""
    clicks = np.sort(np.asarray(list(clicks_ms), dtype=float))
    taps = [float(t) for t in taps_ms]
    if clicks.size == 0:
        raise CalibrationError("no clicks")
    best: dict[int, float] = {}
    for t in taps:
        k = int(np.searchsorted(clicks, t))
        cands = [i for i in (k - 1, k) if 0 <= i < clicks.size]
        i = min(cands, key=lambda i: abs(t - clicks[i]))
        off = t - clicks[i]
        if abs(off) > max_ms:
            continue
        if i not in best or abs(off) < abs(best[i]):
            best[i] = off
    offs = [best[i] for i in sorted(best)]
    if len(offs) < min_taps:
        raise CalibrationError(
            f"only {len(offs)} taps matched a click (need {min_taps}): tap once on each click")
    med = statistics.median(offs)
    mad = statistics.median(abs(o - med) for o in offs)
    lim = max(3 * 1.4826 * mad, floor_ms)
    kept = [o for o in offs if abs(o - med) <= lim]
    if len(kept) < min_taps:
        raise CalibrationError(f"the taps were too uneven ({len(kept)} steady ones, need "
                               f"{min_taps}): try again")
    m = statistics.median(kept)
    return CalibrationResult(
        offset_ms=round(m, 2), taps=len(kept), dropped=len(taps) - len(kept),
        spread_ms=round(statistics.median(abs(o - m) for o in kept), 2),
        offsets=tuple(round(o, 2) for o in kept))


class CalibrationStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else config_dir() / FILE_NAME

    def load(self) -> dict[str, dict]:
        from reader.statefiles import StateFileError, load_json

        if not self.path.exists():
            return {}
        try:
            data = load_json(self.path, "calibration", "the calibration file")
            devices = data["devices"]
            if not isinstance(devices, dict):
                raise TypeError
            return {k: v for k, v in devices.items()
                    if isinstance(v, dict) and isinstance(v.get("offset_ms"), (int, float))}
        except (OSError, ValueError, KeyError, TypeError, StateFileError):
            raise CalibrationError(f"the calibration file {self.path} is unreadable: run "
                                   f"`karuta calibrate` again (or delete it)") from None

    def get(self, key: str) -> dict | None:
        return self.load().get(key)

    def offset_ms(self, key: str) -> float | None:
        entry = self.get(key)
        return None if entry is None else float(entry["offset_ms"])

    def save(self, key: str, result: CalibrationResult, *, input: str = "terminal",
             when: datetime | None = None) -> None:
        from reader.files import atomic_write_text

        try:
            devices = self.load()
        except CalibrationError:
            devices = {}
        when = when or datetime.now(timezone.utc)
        entry = asdict(result)
        entry.pop("offsets")
        entry.update(input=input, date=when.astimezone(timezone.utc).isoformat(timespec="seconds"))
        devices[key] = entry
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CalibrationError(f"cannot create {self.path.parent}: {e.strerror}") from None
        atomic_write_text(self.path, json.dumps({"version": 1, "devices": devices},
                                                ensure_ascii=False, indent=1, sort_keys=True))


def device_key(output) -> str:
    """The name calibrations are kept under: backend and device name."""
    info = getattr(output, "device_info", None)
    if info is not None:
        return f"sounddevice:{info['name']}"
    if type(output).__name__ == "PygameOutput":
        return f"pygame:{os.environ.get('SDL_AUDIODRIVER', 'default')}"
    return f"{type(output).__name__.removesuffix('Output').lower()}:default"


# ---------------------------------------------------------------------------- the click track
class ClickVoice:
    """A voice that says one thing: ``count`` clicks, ``interval_ms`` apart (a 3 ms attack,
    2 kHz, 25 ms decay: a sharp onset to tap to).  Its layout's morae are the clicks."""

    name = "clicks"

    def __init__(self, sample_rate: int = 48000, count: int = 20, interval_ms: float = 600.0):
        self.sample_rate = sample_rate
        self.count = count
        self.step = round(interval_ms * sample_rate / 1000)
        self.click_frames = round(0.04 * sample_rate)

    def layout(self, item):
        from audio.voice import Layout, Mora

        morae = tuple(Mora("・", i * self.step, i * self.step + self.click_frames)
                      for i in range(self.count))
        return Layout(frames=(self.count - 1) * self.step + self.click_frames,
                      sample_rate=self.sample_rate, morae=morae)

    def samples(self, item):
        lay = self.layout(item)
        out = np.zeros(lay.frames, dtype=np.float32)
        n = self.click_frames
        t = np.arange(n) / self.sample_rate
        click = (0.6 * np.sin(2 * np.pi * 2000 * t) * np.exp(-t / 0.008)).astype(np.float32)
        for m in lay.morae:
            out[m.start:m.start + n] = click
        return out


def click_track(sample_rate: int = 48000, count: int = 20, interval_ms: float = 600.0,
                lead_ms: int = 1500):
    """(plan, voice, click plan frames): a lead-in silence (the device settles; its first
    0.15 s of DAC times are unreliable) then the clicks."""
    from audio.voice import SpeechItem
    from reader.plan import Plan, Segment

    voice = ClickVoice(sample_rate, count, interval_ms)
    item = SpeechItem(key="clicks", part="whole")
    lay = voice.layout(item)
    lead = round(lead_ms * sample_rate / 1000)
    segs = (Segment("pause", "clicks", 0, lead),
            Segment("whole", "clicks", lead, lead + lay.frames, speech=item),
            Segment("pause", "clicks", lead + lay.frames, lead + lay.frames + sample_rate // 2))
    plan = Plan(sample_rate=sample_rate, rules="calibrate", seed=None, order=(), universe=(),
                karafuda=(), segments=segs, settings={"count": count, "interval_ms": interval_ms},
                voice="clicks")
    return plan, voice, tuple(lead + m.start for m in lay.morae)


# ---------------------------------------------------------------------------- running it
def run_calibration(output, front, *, count: int = 20, interval_ms: float = 600.0,
                    echo=print) -> CalibrationResult:
    """Play the clicks on ``output`` and collect taps from ``front`` (``TerminalFront`` or
    ``WindowFront`` of ``reader.drill_speed``: ``poll(timeout) -> [TapEvent]``); returns the
    analysis (raises ``CalibrationError`` with too few taps, ``KeyboardInterrupt`` on q/Esc)."""
    from audio.render import PlanCursor
    from reader.taps import TapMapper

    plan, voice, clicks = click_track(output.sample_rate, count, interval_ms)
    cursor = PlanCursor(plan, voice, live=False, threaded=False)
    mapper = TapMapper(output, cursor)
    taps_ms: list[float] = []
    output.play(cursor)
    try:
        while output.is_active:
            for ev in front.poll(0.005):
                if ev.kind == "quit" or ev.char in ("q", "Q", "\x1b"):
                    raise KeyboardInterrupt
                p = mapper.plan_frame(ev.ns)
                if p is not None:
                    taps_ms.append(p * 1000.0 / plan.sample_rate)
                    front.tapped(len(taps_ms))
        output.wait(timeout=1.0)
    finally:
        output.stop()
    return analyze(taps_ms, [c * 1000.0 / plan.sample_rate for c in clicks])
