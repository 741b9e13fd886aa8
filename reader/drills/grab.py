"""The grab timer's pure core: reaction times, the speed drill's plan, drill log records.

Nothing here reads a clock, opens a device or prints.  The live drill (``reader.drills.speed``)
stamps a tap (``reader.input.taps``), maps it to a *plan frame* (the sample of the reading that was
reaching the listener at that instant) and hands that number to ``reaction``.

Timeline of one card in a speed drill plan (``drill_plan``)::

    ── ma / lead pause ──┬── kami (上の句) ────────────────────┬── take (wait) ──
                         kami.start        kami.decisive        kami.end
                         (from_kami_ms 0)  (reaction_ms 0)

``kami.decisive`` is the plan frame where the last mora of the poem's kimariji *at that moment*
starts: the kimariji is counted among the drill's universe (selection + karafuda) minus the
poems read before (the engine computes it, ``poems.kimariji``).  How exact that frame is depends
on the voice (``timeline``):

  ``exact``      synthesized / tone voice: the mora onsets are the ones the voice produces.
  ``estimated``  a recording from a voice pack: the pack's aligned (estimated) mora timeline
                 (``Layout.exact`` False).
  ``kami-start`` no mora timeline at all: reactions are measured from the 上の句 start and
                 flagged so.

``reaction`` subtracts the player's calibration (``reader.drills.calibrate``): ``tap_ms`` is the
plan time the player meant, ``reaction_ms = tap_ms - kimariji_onset_ms``.  A tap less than
``ANTICIPATION_MS`` after the onset cannot be a reaction to it (``anticipation``); one before
the onset is also ``early``.

A tap whose card's sound had a gap between the kimariji's onset and the tap (an underrun, or
the DAC times jumping: ``reader.input.taps.sound_gap_ms``) is ``untimed``: it still counts as
a take or a fault, but its reaction is not known (it would be off by the gap), so
``reaction_ms`` and ``from_kami_ms`` are None, it is neither early nor an anticipation, and it
is left out of every reaction figure.  A gap only before the onset (between the 上の句's start
and the decisive mora) leaves the reaction exact: the player heard the onset and the tap on
one steady timeline.  Only ``from_kami_ms`` (which spans the gap) is then None
(``gap_before_onset``), and ``gap_ms`` says how far the sound moved.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "ANTICIPATION_MS", "TIMELINES", "LOG_FIELDS", "Grab", "reaction", "frames_to_ms",
    "drill_plan", "timeline_of", "log_record", "summarize", "Summary", "card_at", "untimed",
    "gap_before_onset",
    "UNTIMED_GAP", "OPTIONAL_LOG_FIELDS",
]

#: a tap sooner than this after the kimariji onset is an anticipation, not a reaction
ANTICIPATION_MS = 100.0
TIMELINES = ("exact", "estimated", "kami-start")

#: keys of a drill log line (``--log FILE.jsonl``), in order.  Stable: add, never rename.
LOG_FIELDS = (
    "poem", "kimariji", "kimariji_onset_ms", "kami_start_ms", "tap_ms", "reaction_ms",
    "from_kami_ms", "correct", "anticipation", "early", "fault", "karafuda", "answer",
    "timeline", "calibration_ms", "card", "ts",
)
#: keys a drill log line has only sometimes, after ``LOG_FIELDS``: ``untimed`` (why the tap has
#: no reaction time: ``reaction_ms`` and ``from_kami_ms`` are null) and ``gap_ms`` (how far the
#: sound's timing moved; alone, for a gap before the kimariji's onset: ``from_kami_ms`` null,
#: the reaction exact)
OPTIONAL_LOG_FIELDS = ("untimed", "gap_ms")
#: why a tap is not timed (``untimed``)
UNTIMED_GAP = "the sound had a gap: not timed"


def _ms3(x: float) -> float:
    return round(x, 3) + 0.0  # + 0.0: no -0.0


def frames_to_ms(frame: float, sample_rate: int) -> float:
    return frame * 1000.0 / sample_rate


@dataclass(frozen=True)
class Grab:
    """One tap measured against the card being read.  All times in ms on the plan timeline."""

    poem: int
    kimariji: str
    kimariji_sound: str
    kimariji_onset_ms: float
    kami_start_ms: float
    tap_ms: float  # plan time heard at the tap, calibration applied
    reaction_ms: float | None  # tap_ms - kimariji_onset_ms (None: untimed)
    from_kami_ms: float | None  # tap_ms - kami_start_ms (None: untimed)
    anticipation: bool  # reaction_ms < ANTICIPATION_MS
    early: bool  # reaction_ms < 0: before the kimariji's last mora began
    timeline: str  # exact | estimated | kami-start
    calibration_ms: float
    untimed: str | None = None  # why the tap has no reaction time (``untimed``)
    gap_ms: float | None = None  # the gap in the sound that made it so

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reaction(tap_plan_frame: float, kami_segment, calibration_ms: float = 0.0, *,
             sample_rate: int = 48000, timeline: str = "exact") -> Grab:
    """A tap heard at plan frame ``tap_plan_frame`` (fractional allowed) against
    ``kami_segment`` (a ``kami`` ``Segment`` of a numbered poem: ``start``, ``decisive``,
    ``kimariji``), minus the player's ``calibration_ms``.

    Without a mora timeline (``timeline="kami-start"`` or no ``decisive`` frame) the onset is
    the 上の句's start and the result says ``timeline="kami-start"``.
    """
    if timeline not in TIMELINES:
        raise ValueError(f"timeline must be one of {TIMELINES}, not {timeline!r}")
    seg = kami_segment
    if seg.decisive is None or timeline == "kami-start":
        onset_frame, timeline = seg.start, "kami-start"
    else:
        onset_frame = seg.decisive
    tap_ms = frames_to_ms(tap_plan_frame, sample_rate) - float(calibration_ms)
    onset_ms = frames_to_ms(onset_frame, sample_rate)
    start_ms = frames_to_ms(seg.start, sample_rate)
    r = _ms3(tap_ms - onset_ms)  # flags follow the reported (rounded) value
    return Grab(
        poem=int(seg.poem), kimariji=seg.kimariji or "", kimariji_sound=seg.kimariji_sound or "",
        kimariji_onset_ms=_ms3(onset_ms), kami_start_ms=_ms3(start_ms),
        tap_ms=_ms3(tap_ms), reaction_ms=r, from_kami_ms=_ms3(tap_ms - start_ms),
        anticipation=r < ANTICIPATION_MS, early=r < 0, timeline=timeline,
        calibration_ms=float(calibration_ms),
    )


def untimed(grab: Grab, gap_ms: float | None, reason: str = UNTIMED_GAP) -> Grab:
    """``grab`` with no reaction time: the sound had a gap of ``gap_ms`` between the 上の句's
    start and the tap, so the reaction measured is off by about that much.  Still a tap (a
    take or a fault); ``tap_ms`` keeps the plan time the tap was mapped to."""
    from dataclasses import replace

    return replace(grab, reaction_ms=None, from_kami_ms=None, anticipation=False, early=False,
                   untimed=reason, gap_ms=gap_ms)


def gap_before_onset(grab: Grab, gap_ms: float) -> Grab:
    """``grab`` whose sound had a gap of ``gap_ms`` after the 上の句 began but before the
    kimariji's onset: the reaction (onset to tap, one steady stretch of sound) stands; the time
    from the 上の句's start spans the gap, so it is not known."""
    from dataclasses import replace

    return replace(grab, from_kami_ms=None, gap_ms=gap_ms)


def card_at(plan, plan_frame: float):
    """The kami ``Segment`` a tap at ``plan_frame`` is about, or None.

    A tap belongs to the card whose 上の句 is being read or waited on: the silence before a
    上の句 (``ma``/lead ``pause``) belongs to the card that follows, the ``take`` after it to
    the card just read.
    """
    segs = plan.segments
    if not segs:
        return None
    p = max(0.0, float(plan_frame))
    seg = None
    for s in segs:
        if s.start <= p < s.end or (s.wait and s.start == p):
            seg = s
            break
    if seg is None:
        seg = segs[-1] if p >= segs[-1].end else None
    if seg is None or not isinstance(seg.poem, int):
        return None
    kami = [s for s in segs if s.kind == "kami" and s.poem == seg.poem]
    return kami[0] if kami else None


# ---------------------------------------------------------------------------- the drill's plan
def timeline_of(voice, kami_segment) -> str:
    """``exact`` / ``estimated`` / ``kami-start`` for a kami segment read by ``voice``."""
    if kami_segment.decisive is None or kami_segment.speech is None:
        return "kami-start"
    layout = voice.layout(kami_segment.speech)
    if not layout.morae:
        return "kami-start"
    return "exact" if getattr(layout, "exact", True) else "estimated"


def drill_plan(voice, seed: int, *, poems: Sequence[int] | None = None, karafuda: int = 0,
               cards: int | None = None, ma_ms: int = 1000, take_ms: int = 3000,
               lead_ms: int = 1500, speed: float = 1.0):
    """A speed-drill plan: for each card ``ma`` · ``kami`` (with its kimariji at that moment and
    ``decisive`` frame) · ``take`` (``wait=True``: the live drill waits there for the answer).

    The order, universe and karafuda come from the engine's ``choose_order`` (same seed, same
    drill); kimariji from ``poems.kimariji`` over universe minus the poems read before, exactly
    as ``build_plan`` does.  The first 上の句 follows a ``lead_ms`` pause (the device settles,
    the player gets ready).  ``rules`` is ``"speed"``.
    """
    from audio.voice import SpeechItem
    from poems.kimariji import kimariji
    from reader.reading.engine import choose_order
    from audio.plan import Plan, Segment
    from reader.match.rules.games import KYOGI
    from reader.reading.settings import preset

    settings = preset(KYOGI.name, poems=tuple(poems) if poems is not None else None,
                      karafuda=karafuda, cards=cards, ma_ms=ma_ms, take_ms=take_ms, speed=speed,
                      joka=False, last_shimo=False)
    order, universe, kara = choose_order(settings, seed)
    rate = voice.sample_rate

    def frames(ms: int) -> int:
        return round(ms * rate / 1000)

    segs: list = []
    pos = 0
    read: list[int] = []
    for i, no in enumerate(order):
        gap = frames(lead_ms if i == 0 else ma_ms)
        if gap:
            segs.append(Segment("pause" if i == 0 else "ma", no, pos, pos + gap))
            pos += gap
        k = kimariji(universe, read)[no]
        item = SpeechItem(key=str(no), part="kami", speed=speed)
        layout = voice.layout(item)
        decisive = None
        if layout.morae:
            decisive = pos + layout.morae[min(k.length, len(layout.morae)) - 1].start
        segs.append(Segment("kami", no, pos, pos + layout.frames, speech=item, kimariji=k.card,
                            kimariji_sound=k.sound, decisive=decisive))
        pos += layout.frames
        n = frames(take_ms)
        segs.append(Segment("take", no, pos, pos + n, wait=True))
        pos += n
        read.append(no)
    d = settings.to_dict()
    d.update(rules="speed", lead_ms=lead_ms)
    for key in ("yoin_ms", "gap_ms", "joka", "last_shimo"):
        d.pop(key, None)
    return Plan(sample_rate=rate, rules="speed", seed=seed, order=order, universe=universe,
                karafuda=kara, segments=tuple(segs), settings=d, voice=getattr(voice, "name", ""))


# ---------------------------------------------------------------------------- log and summary
def log_record(grab: Grab, *, correct: bool, answer: int | str | None = None,
               karafuda: bool = False, fault: bool = False, card: int | None = None,
               ts: str | None = None) -> dict[str, Any]:
    """One drill-log line (``LOG_FIELDS`` order, then ``OPTIONAL_LOG_FIELDS`` for an untimed
    tap).  ``correct``: the tap was right (the read poem named; never for a karafuda);
    ``fault``: a tap on a karafuda or a wrong poem named."""
    rec = {
        "poem": grab.poem, "kimariji": grab.kimariji,
        "kimariji_onset_ms": grab.kimariji_onset_ms, "kami_start_ms": grab.kami_start_ms,
        "tap_ms": grab.tap_ms, "reaction_ms": grab.reaction_ms, "from_kami_ms": grab.from_kami_ms,
        "correct": bool(correct), "anticipation": grab.anticipation, "early": grab.early,
        "fault": bool(fault), "karafuda": bool(karafuda), "answer": answer,
        "timeline": grab.timeline, "calibration_ms": grab.calibration_ms, "card": card, "ts": ts,
    }
    assert tuple(rec) == LOG_FIELDS
    if grab.untimed is not None:
        rec.update(untimed=grab.untimed, gap_ms=grab.gap_ms)
    elif grab.gap_ms is not None:
        rec.update(gap_ms=grab.gap_ms)
    return rec


@dataclass(frozen=True)
class Summary:
    cards: int
    taps: int
    correct: int
    faults: int
    missed: int
    anticipations: int
    median_reaction_ms: float | None
    best_reaction_ms: float | None
    median_from_kami_ms: float | None
    untimed: int = 0  # taps with no reaction time (gaps in the sound)
    planned: int | None = None  # the drill's cards (said when fewer were done)
    stopped_at: int | None = None  # the card being read when the player quit (q)

    def describe(self) -> str:
        def ms(v):
            return "—" if v is None else f"{v:.0f} ms"

        of = f"{self.cards} card{'s' if self.cards != 1 else ''}"
        if self.planned is not None and self.planned != self.cards:
            of = (f"{self.cards} of {self.planned} cards"
                  + (f" (stopped at card {self.stopped_at})" if self.stopped_at else ""))
        return (f"{of} · {self.taps} taps · {self.correct} correct · "
                f"{self.faults} faults · {self.missed} missed · {self.anticipations} anticipations"
                f" · median reaction {ms(self.median_reaction_ms)} · best "
                f"{ms(self.best_reaction_ms)} · median from 上の句 {ms(self.median_from_kami_ms)}"
                + (f" · {self.untimed} card{'s' if self.untimed != 1 else ''} not timed: "
                   f"gaps in the sound" if self.untimed else ""))


def summarize(records: Iterable[dict[str, Any]], cards: int, missed: int = 0,
              planned: int | None = None, stopped_at: int | None = None) -> Summary:
    """Totals over drill-log records; reaction figures from correct, non-anticipated, timed
    taps (an untimed one, ``reaction_ms`` null, is counted in ``untimed``).  ``cards``: the
    cards done; ``planned``: the drill's cards (said when fewer were done); ``stopped_at``:
    the card being read when the player quit."""
    recs = list(records)
    good = [r for r in recs if r["correct"] and not r["anticipation"]
            and r.get("reaction_ms") is not None]
    rt = [r["reaction_ms"] for r in good]
    fk = [r["from_kami_ms"] for r in good if r["from_kami_ms"] is not None]  # (gap before)
    return Summary(
        cards=cards, taps=len(recs), correct=sum(bool(r["correct"]) for r in recs),
        faults=sum(bool(r["fault"]) for r in recs), missed=missed,
        anticipations=sum(bool(r["anticipation"]) for r in recs),
        median_reaction_ms=round(statistics.median(rt), 1) if rt else None,
        best_reaction_ms=round(min(rt), 1) if rt else None,
        median_from_kami_ms=round(statistics.median(fk), 1) if fk else None,
        untimed=sum(r.get("reaction_ms") is None for r in recs),
        planned=planned, stopped_at=stopped_at,
    )
