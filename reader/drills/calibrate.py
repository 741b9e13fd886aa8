"""Tap calibration: steady clicks, the player taps along, the median offset is saved per device.

What the offset holds: everything between "the click reached the speaker" (as the output's DAC
clock predicts it) and "the tap was stamped", as the player really taps — the device's
unreported latency, the keyboard and input path, and the player's own habit of tapping a little
early or late.  ``reader.drills.grab.reaction`` subtracts it from every tap.

    clicks = click_track(rate)                  # a Plan + voice of ``count`` clicks
    offsets = tap offsets to the nearest click  # ms, tap - click, on the plan timeline
    result = analyze(taps_ms, clicks_ms)        # outliers dropped (MAD rule), median
    CalibrationStore().save(device_key, result)

Store: ``$KARUTA_CONFIG_DIR/calibration.json`` if set (tests), else
``platformdirs.user_config_dir("karuta")/calibration.json``::

    {"version": 1, "devices": {"sounddevice:pulse": {"offset_ms": 12.4, "taps": 18,
      "dropped": 2, "spread_ms": 3.1, "clicks": 20, "input": "terminal", "date": "2026-...Z",
      "history": [{"offset_ms", "spread_ms", "taps", "date"}, ...]}}}   (newest last, 20 kept)
"""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import KarutaError
from reader.base.dirs import config_dir
# the detection of gaps in the sound is shared with the speed drill (one function for both)
from reader.input.taps import MAX_SHIFT_MS, timing_moved  # noqa: F401  (re-exported)

__all__ = [
    "CalibrationError", "CalibrationResult", "CalibrationStore", "analyze", "click_track",
    "ClickVoice", "device_key", "config_dir", "MIN_TAPS", "MAX_SPREAD_MS", "describe_history",
    "SoundGapError", "timing_moved",
]

MIN_TAPS = 5
FILE_NAME = "calibration.json"
#: calibrations kept per device (``history``)
HISTORY = 20
#: a run whose spread (MAD of the offsets) is above this is repeated (``run_calibration``)
MAX_SPREAD_MS = 0.5


class CalibrationError(KarutaError):
    """Too few usable taps, or an unreadable calibration file."""


class _NewerFile(KarutaError):
    """A calibration file a newer karuta wrote: not saved over (nor kept aside as damaged)."""


class SoundGapError(CalibrationError):
    """A run had too few taps before a gap in the sound (``timing_moved``)."""

    def __init__(self, click: int):
        super().__init__(f"the sound had a gap before click {click}")
        self.click = click




@dataclass(frozen=True)
class CalibrationResult:
    offset_ms: float  # median of the kept offsets (tap - click)
    taps: int  # taps kept
    dropped: int  # taps dropped as outliers (or matched to no click)
    spread_ms: float  # median absolute deviation of the kept offsets
    offsets: tuple[float, ...] = ()
    clicks: int = 0  # clicks played (0: not known)
    #: the sound's timing moved before this click (1-based; a gap in the sound): the taps
    #: from it on were not used.  None: steady throughout.
    moved_at: int | None = None

    def describe(self) -> str:
        used = f"{self.taps} of {self.clicks} clicks used" if self.clicks else f"{self.taps} taps"
        moved = "" if self.moved_at is None else \
            f"; the sound had a gap before click {self.moved_at}: no taps from there on used"
        return (f"offset {self.offset_ms:+.1f} ms (from {used}, {self.dropped} dropped, "
                f"spread ±{self.spread_ms:.2f} ms{moved})")

    @property
    def short(self) -> bool:
        """Too few clicks before a gap in the sound for a run to stand on its own."""
        return self.moved_at is not None and self.moved_at - 1 < max(MIN_TAPS, self.clicks // 2)


def analyze(taps_ms, clicks_ms, *, min_taps: int = MIN_TAPS, floor_ms: float = 15.0,
            max_ms: float = 250.0, moved_at: int | None = None) -> CalibrationResult:
    """Each tap against its nearest click (one tap per click: the nearer is kept); offsets
    further than ``max_ms`` are not taps along; then outliers further than
    ``max(3 × 1.4826 × MAD, floor_ms)`` from the median are dropped; the median of the rest.
    ``moved_at`` (1-based click number, ``timing_moved``): the sound had a gap before that
    click, so the taps on it and after it are not used (a player tapping by rhythm taps the
    old beat; one who follows the sound is thrown off for a few clicks).
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
        if abs(off) > max_ms or (moved_at is not None and i >= moved_at - 1):
            continue
        if i not in best or abs(off) < abs(best[i]):
            best[i] = off
    offs = [best[i] for i in sorted(best)]
    if len(offs) < min_taps:
        if moved_at is not None:
            raise SoundGapError(moved_at)
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
        spread_ms=round(statistics.median(abs(o - m) for o in kept), 3),
        offsets=tuple(round(o, 3) for o in kept), clicks=int(clicks.size), moved_at=moved_at)


class CalibrationStore:
    def __init__(self, path: Path | None = None, clock: Clock = SYSTEM_CLOCK):
        self.path = Path(path) if path is not None else config_dir() / FILE_NAME
        self.clock = clock  # (its now() dates a calibration saved without a ``when``)
        #: where ``save`` kept a damaged file it replaced (None: there was none)
        self.kept_damaged: Path | None = None

    def load(self) -> dict[str, dict]:
        from reader.base.statefiles import StateFileError, load_json

        if not self.path.exists():
            return {}
        try:
            data = load_json(self.path, "calibration", "the calibration file")
            devices = data["devices"]
            if not isinstance(devices, dict):
                raise TypeError
            return {k: _clean(v) for k, v in devices.items()
                    if isinstance(v, dict) and _number(v.get("offset_ms"))}
        except (OSError, ValueError, KeyError, TypeError, StateFileError):
            raise CalibrationError(f"the calibration file {self.path} is unreadable: run "
                                   f"`karuta calibrate` again (the damaged file is kept beside "
                                   f"it) or delete it") from None

    def get(self, key: str) -> dict | None:
        return self.load().get(key)

    def offset_ms(self, key: str) -> float | None:
        entry = self.get(key)
        return None if entry is None else float(entry["offset_ms"])

    def save(self, key: str, result: CalibrationResult, *, input: str = "terminal",
             when: datetime | None = None) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CalibrationError(f"cannot create {self.path.parent}: {e.strerror}") from None
        from reader.base.files import locked

        # two calibrations at once (two devices): the second reads what the first saved
        with locked(self.path, "the calibration file"):
            self._save(key, result, input=input, when=when)

    def _save(self, key, result, *, input, when) -> None:
        from reader.base.files import atomic_write_text

        self.kept_damaged = None
        try:
            cleaned = self.load()
            saved = self._saved()  # the other devices' entries go back as they were
        except CalibrationError:  # the damaged file is kept, never replaced unseen
            cleaned, saved = {}, {}
            self.kept_damaged = self._keep_damaged()
        devices = dict(saved.get("devices", {}))
        when = when or self.clock.now()
        entry = asdict(result)
        entry.pop("offsets")
        if entry.get("moved_at") is None:
            entry.pop("moved_at", None)
        entry.update(input=input, date=when.astimezone(timezone.utc).isoformat(timespec="seconds"))
        # per-device history (newest last, ``HISTORY`` kept): a drifting device shows
        old = cleaned.get(key) or {}
        history = [h for h in old.get("history", []) if isinstance(h, dict)]
        if not history and "offset_ms" in old:  # a file from before the history was kept
            history = [{k: old.get(k) for k in ("offset_ms", "spread_ms", "taps", "date")}]
        history.append({k: entry.get(k) for k in ("offset_ms", "spread_ms", "taps", "date")})
        entry["history"] = history[-HISTORY:]
        devices[key] = entry
        atomic_write_text(self.path, json.dumps({"version": 1, "devices": devices},
                                                ensure_ascii=False, indent=1, sort_keys=True))


    def check_can_save(self) -> None:
        """One line now if ``save`` would refuse the file (a newer karuta's), so nobody taps
        for a calibration that cannot be saved; a damaged file is fine (kept aside then)."""
        try:
            self.load()
        except CalibrationError:
            return
        self._saved()

    def _saved(self) -> dict:
        """The file as saved (checked by ``load``), or {} if there is none; one
        ``CalibrationError`` for a file a newer karuta wrote (``version`` above 1): its
        entries may hold what this one would drop, so it is not written over."""
        from reader.base.statefiles import load_json

        if not self.path.exists():
            return {}
        data = load_json(self.path, "calibration", "the calibration file")
        version = data.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version > 1:
            raise _NewerFile(f"the calibration file {self.path} was written by a newer karuta "
                             f"(version {version!r}): this one does not write over it; it was "
                             "left as it is (update karuta, or move it away)")
        return data

    def _keep_damaged(self) -> Path | None:
        """Keep the damaged file as ``calibration.json.damaged-N`` (the next free N) before a
        new one is written in its place; one ``CalibrationError`` if it cannot be kept."""
        import os

        from reader.base.files import write_target

        target = write_target(self.path)
        if not target.is_file():
            return None  # a folder in its place is said when the new file cannot be written
        n = 1
        while os.path.lexists(target.with_name(f"{target.name}.damaged-{n}")):
            n += 1
        kept = target.with_name(f"{target.name}.damaged-{n}")
        try:
            os.link(target, kept)
        except OSError as e:
            raise CalibrationError(f"the calibration file {self.path} is damaged and cannot be "
                                   f"kept as {kept.name} ({e.strerror or e}): nothing saved; "
                                   "move it away and calibrate again") from None
        return kept


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


#: an entry's fields besides ``offset_ms`` and the test of their type
_FIELDS = {"taps": _number, "dropped": _number, "spread_ms": _number, "clicks": _number,
           "moved_at": _number, "input": lambda v: isinstance(v, str),
           "date": lambda v: isinstance(v, str), "history": lambda v: isinstance(v, list)}


def _clean(entry: dict) -> dict:
    """A device's entry with every field of another type left out (a hand-edited or damaged
    file): the offset still applies, ``--show`` says "?" for what is gone, never a
    traceback.  History entries without a numeric offset are left out too."""
    out = {"offset_ms": entry["offset_ms"]}
    for k, ok in _FIELDS.items():
        if k in entry and ok(entry[k]):
            out[k] = entry[k]
    if "history" in out:
        out["history"] = [{k: v for k, v in h.items() if k == "offset_ms" or
                           (k in _FIELDS and _FIELDS[k](v))}
                          for h in out["history"] if isinstance(h, dict)
                          and _number(h.get("offset_ms"))]
    return out


def describe_history(entry: dict) -> str | None:
    """One line on a device's past calibrations (None with fewer than two): how far the
    offsets range, so a drifting device shows."""
    hist = [h for h in entry.get("history", []) if isinstance(h.get("offset_ms"), (int, float))]
    if len(hist) < 2:
        return None
    offs = [float(h["offset_ms"]) for h in hist]
    last = ", ".join(f"{o:+.1f}" for o in offs[-5:])
    return (f"history: {len(offs)} calibrations, offsets {min(offs):+.1f} to {max(offs):+.1f} ms "
            f"(range {max(offs) - min(offs):.1f} ms; last {last})")


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
    from audio.plan import Plan, Segment

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
                    echo=print, attempts: int = 3, max_spread_ms: float = MAX_SPREAD_MS,
                    settle: bool = True, clock: Clock = SYSTEM_CLOCK) -> CalibrationResult:
    """Play the clicks on ``output`` and collect taps from ``front`` (``TerminalFront`` or
    ``WindowFront`` of ``reader.drills.speed``: ``poll(timeout) -> [TapEvent]``); returns the
    analysis (raises ``CalibrationError`` with too few taps, ``KeyboardInterrupt`` on q/Esc).

    Each run waits for the output's timing to settle first (``reader.input.taps.SettleGate``, as the
    drill does: a run made while PortAudio's DAC times still wander lands ms off).  A run whose
    spread is above ``max_spread_ms`` is rejected and repeated, up to ``attempts`` runs; then
    the steadiest is returned (the caller compares its ``spread_ms`` with ``max_spread_ms``
    and says so).  The taps after a gap in the sound are not used (``timing_moved``); a run
    with fewer than half its clicks before its gap is repeated too, and counts only when no
    whole run was made (``CalibrationError`` when every run had one too early).
    ``settle=False``: no waiting (tests of the analysis only).  ``clock``: the one the
    front's taps are stamped on (it times the "get ready")."""
    runs: list[CalibrationResult] = []
    gap: SoundGapError | None = None
    for k in range(max(1, attempts)):
        if k and gap is not None:
            echo(f"{gap}: once more ({k + 1} of {attempts})")
        elif k and runs[-1].short:
            echo(f"the sound had a gap before click {runs[-1].moved_at}: once more "
                 f"({k + 1} of {attempts})")
        elif k:
            echo(f"spread ±{runs[-1].spread_ms:.2f} ms is above ±{max_spread_ms:.2f} ms: "
                 f"once more ({k + 1} of {attempts})")
        try:
            res = _one_run(output, front, count, interval_ms, echo, settle, clock)
        except SoundGapError as e:  # too few taps before a gap in the sound
            gap = e
            continue
        gap = None
        runs.append(res)
        if res.spread_ms <= max_spread_ms and not res.short:
            break
    if not runs:
        raise CalibrationError(f"the sound had gaps in every run (the last before click "
                               f"{gap.click}): nothing saved; try again (on a busy machine, "
                               f"close other programs first)")
    # a run cut short by a gap in the sound counts only when no whole one was made
    return min(runs, key=lambda r: (r.short, r.spread_ms))


def _one_run(output, front, count, interval_ms, echo, settle, clock) -> CalibrationResult:
    from audio.render import PlanCursor
    from reader.input.taps import SettleGate, TapMapper

    plan, voice, clicks = click_track(output.sample_rate, count, interval_ms)
    # live: a hold pauses in the lead silence (there are no waits in the click track)
    cursor = PlanCursor(plan, voice, live=True, threaded=False)
    mapper = TapMapper(output, cursor)
    taps_ms: list[float] = []
    gate = SettleGate(output, cursor, max_s=None if settle else 0.0, clock=clock)
    rec = _Record.from_env(output)
    gate.start()
    output.play(cursor)
    try:
        while output.is_active:
            if rec is not None:
                rec.look()
            gate.poll()
            text = gate.pop_message()
            if text:
                echo(text)
                if hasattr(front, "message"):
                    front.message(text)
            for ev in front.poll(0.005):
                if ev.kind == "quit" or ev.char in ("q", "Q", "\x1b"):
                    raise KeyboardInterrupt
                if gate.waiting:
                    continue
                p = mapper.plan_frame(ev.ns)
                if rec is not None:
                    rec.tap(ev.ns, p)
                if p is not None:
                    taps_ms.append(p * 1000.0 / plan.sample_rate)
                    front.tapped(len(taps_ms))
        output.wait(timeout=1.0)
    finally:
        output.stop()
        if rec is not None:
            rec.save(cursor, clicks)
    echo(gate.describe())
    moved = None
    if getattr(output, "dac_timeline", False):
        moved = timing_moved(output.timeline, [cursor.stream_frame_at(c) for c in clicks],
                             plan.sample_rate)
    return analyze(taps_ms, [c * 1000.0 / plan.sample_rate for c in clicks], moved_at=moved)


class _Record:
    """``KARUTA_TIMING_DUMP=FILE.npz`` (benchmarks): each run writes ``FILE.runN.npz`` with the
    stream's DAC timeline (``Output.timing_dump``), every tap (stamp, plan frame, the clock
    pairing it was mapped with), the cursor's anchors, the click frames and every clock pairing
    the output published during the run (``scripts/bench_grab.py --calibrations`` compares
    them with its own observer of the sink)."""

    runs = 0

    def __init__(self, output, path: str):
        self.output = output
        self.path = path
        self.taps: list[tuple] = []
        self.pairings: list[tuple[float, float, float]] = []

    @classmethod
    def from_env(cls, output):
        path = os.environ.get("KARUTA_TIMING_DUMP")
        if not path or not hasattr(output, "timing_dump"):
            return None
        return cls(output, path)

    def _pair(self) -> tuple[float, float]:
        shared = getattr(self.output, "_shared_offset", None)
        if shared is not None:
            shared()
        return getattr(self.output, "_pair_last", (float("nan"), float("nan")))

    def look(self) -> None:
        w, off = self._pair()
        if not self.pairings or self.pairings[-1][1:] != (w, off):
            self.pairings.append((SYSTEM_CLOCK.seconds(), w, off))

    def tap(self, ns: int, plan_frame) -> None:
        w, off = getattr(self.output, "_pair_last", (float("nan"), float("nan")))
        self.taps.append((ns / 1e9, float("nan") if plan_frame is None else plan_frame, w, off))

    def save(self, cursor, clicks) -> None:
        _Record.runs += 1
        stem = self.path[:-4] if self.path.endswith(".npz") else self.path
        anchors = np.array([(a.stream_frame, a.plan_frame, a.advancing) for a in cursor.anchors],
                           dtype=np.float64).reshape(-1, 3)
        self.output.timing_dump(f"{stem}.run{_Record.runs}.npz",
                                taps=np.array(self.taps, dtype=np.float64).reshape(-1, 4),
                                pairings=np.array(self.pairings, np.float64).reshape(-1, 3),
                                anchors=anchors, clicks=np.array(clicks, dtype=np.int64))
