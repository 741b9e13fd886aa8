"""``karuta drill speed``: the grab timer.  The 上の句 of the selected poems are read, shuffled;
tap as soon as you know the poem, then say which it was.

Layers (top calls down)::

    speed (click command)        options, device, calibration, log, stats; picks a front end
      run_drill(plan, ..., front)  plays the plan, maps taps, asks, records (one loop, both UIs)
        TerminalFront / WindowFront   input (reader.input.taps: stamped as taken in) and display
        reader.drills.grab                  reaction times, drill plan, log records (pure)

A tap whose card's sound had a gap between the kimariji's onset and the tap (an underrun, or
the DAC times jumping: ``reader.input.taps.sound_gap_ms``, the detection ``karuta calibrate``
uses) still counts as a take or a fault, but is shown and logged as not timed (``untimed``) and
left out of the reaction figures: a reaction measured across a gap is off by the gap.  A gap
before the onset leaves the reaction exact (``grab.gap_before_onset``).

A card: 間 · 上の句 (the kimariji's last mora starts at ``decisive``) · take (the drill waits
there ``--take`` seconds for a tap, then the card is missed).  A tap belongs to the card whose
上の句 is being read or waited on (the 間 before it included).  Terminal: any key taps (q / Esc
quit), then type the kimariji or the poem number and Enter.  Window: a key, a click or a touch
taps, then pick the torifuda among ``--choices`` (key 1..N or a click).  A tap on a karafuda is
a fault.  Every tap is a line in ``--log`` and a row in the stats database, written as it
happens.

Before the first card the drill plays silence ("get ready…") until the output's timing has
settled (``Output.timing_settled``; at most ``reader.input.taps.WARMUP_MAX_S``): PortAudio's DAC times of a new
PulseAudio stream wander by up to ±5 ms for its first 3-15 s, which showed as the first taps
of a drill reported up to 5 ms off.  ``KARUTA_TIMING_DEBUG=1`` adds a ``debug`` object to each
log line (how the tap was mapped: stream age, DAC buffer and its residual, clock pairing
width, warm-up); ``KARUTA_TIMING_DUMP=FILE.npz`` writes the stream's DAC timeline at the end.
"""
from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reader.base import seeds
from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.ui.term import echo as term_echo

__all__ = ["run_drill", "TerminalFront", "WindowFront", "resolve_answer", "DrillResult"]

QUIT_CHARS = ("q", "Q", "\x1b")


# ---------------------------------------------------------------------------- answers
def resolve_answer(text: str, candidates) -> tuple[int | None, str]:
    """The poem named by ``text`` (a number, or kana: the kimariji or any longer opening, as
    heard or as printed) among ``candidates`` (the poems still unread, the one read included).
    Returns (poem, "") or (None, why)."""
    from poems.kimariji import opens_with

    t = "".join(text.split())
    if not t:
        return None, "type the kimariji or the poem's number"
    if t.isdigit():
        n = int(t)
        return (n, "") if 1 <= n <= 100 else (None, f"no poem {n}: poems are 1-100")
    found = [n for n in candidates if opens_with(n, t)]
    if not found:
        return None, f"no poem left opens with {t}"
    if len(found) > 1:
        return None, f"{t} fits {len(found)} poems: type more"
    return found[0], ""


def choices_for(poem: int, candidates, n: int, rng: random.Random) -> list[int]:
    """``n`` torifuda to pick from: the read poem and the unread ones sharing the longest
    opening with it (the confusable ones), shuffled."""
    from poems.kimariji import shared_opening

    def common(x):
        return shared_opening(poem, x)

    others = [c for c in candidates if c != poem]
    rng.shuffle(others)
    others.sort(key=common, reverse=True)
    picked = [poem] + others[:max(0, n - 1)]
    rng.shuffle(picked)
    return picked


# ---------------------------------------------------------------------------- front ends
class TerminalFront:
    """The terminal: keys from ``reader.input.taps.TerminalTaps``, lines out through ``echo``."""

    name = "terminal"

    def __init__(self, echo: Callable[[str], None] = term_echo, stream=None,
                 clock: Clock = SYSTEM_CLOCK):
        from reader.input.taps import TerminalTaps

        self.echo = echo
        self.taps = TerminalTaps(stream, clock=clock)
        self._typed = ""

    def __enter__(self):
        self.taps.__enter__()
        return self

    def __exit__(self, *exc):
        self.taps.__exit__(*exc)

    def poll(self, timeout: float) -> list:
        ev = self.taps.get(timeout)
        if ev is None:
            return []
        out = [ev]
        while (ev := self.taps.get()) is not None:
            out.append(ev)
        return out

    # drill
    def is_tap(self, ev) -> bool:
        return ev.kind == "key" and ev.char not in QUIT_CHARS

    def card(self, plan, index: int, poem: int) -> None:
        self.echo(f"[{index}/{len(plan.order)}]")

    def show(self, text: str) -> None:
        self.echo(text)

    def stats(self) -> str:
        d = self.taps.stats.describe()
        return f"input polled every {d.get('median_ms', 0):.2f} ms (median), max {d.get('max_ms', 0):.1f} ms"

    def ask(self, grab, choices: list[int]) -> None:
        self._typed = ""
        term_echo("  which poem? kimariji or number, Enter: ", nl=False)

    def answer(self, ev, choices: list[int], candidates) -> int | None:
        """Feed one event in the answer phase; the poem once Enter is pressed on a valid name."""
        c = ev.char
        if ev.kind != "key":
            return None
        if c in ("\r", "\n"):
            poem, why = resolve_answer(self._typed, candidates)
            if poem is None:
                term_echo("")
                term_echo(f"  {why}: ", nl=False)
                self._typed = ""
                return None
            term_echo("")
            return poem
        if c in ("\x7f", "\b"):
            if self._typed:
                self._typed = self._typed[:-1]
                term_echo("\b \b", nl=False)
            return None
        if c.isprintable():
            self._typed += c
            term_echo(c, nl=False)
        return None

    def tapped(self, n: int) -> None:  # calibration feedback
        term_echo("·", nl=False)

    def frame(self, heard) -> None:
        pass


class WindowFront:
    """The pygame window: input polled about every 1 ms, drawn at 60 fps, on one thread
    (``reader.input.taps.WindowLoop``).  ``poll(timeout)`` runs the loop for up to ``timeout`` s."""

    name = "window"
    SIZE = (960, 640)

    def __init__(self, title: str = "karuta drill speed", fps: float = 60.0,
                 echo: Callable[[str], None] = term_echo, clock: Clock = SYSTEM_CLOCK):
        self.clock = clock  # (the one taps are stamped on: run_drill's)
        self.title = title
        self.fps = fps
        self.echo = echo
        self.lines: list[str] = []
        self.big = ""
        self.cards: list[int] = []
        self.frames: list | None = None  # once a pick is made (reader.ui.choices.answer_frames)
        self.verdict_of: bool | None = None  # the pick's ○ (True) / × (False)
        self.rects: list = []
        self.progress: float | None = None
        self._static = None
        self._dirty = True
        self.heard: Callable[[], float | None] | None = None

    def __enter__(self):
        from reader.input.taps import WindowLoop, WindowTaps
        from reader.ui.window import load_font, open_window

        self.screen = open_window(self.SIZE, self.title)
        import pygame

        self._pg = pygame
        self.fonts = (load_font(24), load_font(56), load_font(30))
        self.taps = WindowTaps(clock=self.clock)
        self.loop = WindowLoop(self.taps, self._draw, fps=self.fps)
        return self

    def __exit__(self, *exc):
        self.taps.close()
        self._pg.display.quit()

    def poll(self, timeout: float) -> list:
        end = SYSTEM_CLOCK.seconds() + timeout  # (a real wait: the loop sleeps)
        out = []
        while True:
            out += self.loop.step()
            if out or SYSTEM_CLOCK.seconds() >= end:
                return out

    # drawing
    def _render_static(self):
        pg = self._pg
        from reader.ui.choices import draw_choices, draw_verdict
        from reader.ui.window import BACKGROUND, draw_text

        small, big, _ = self.fonts
        surf = pg.Surface(self.SIZE)
        surf.fill(BACKGROUND)
        y = 10
        for ln in self.lines[-4:]:
            y += draw_text(surf, ln, small, pg.Rect(16, y, self.SIZE[0] - 32, 60))
        if self.big and self.verdict_of is not None:  # ○ / × in the frames' colours
            draw_verdict(surf, self.verdict_of, self.big, big, pg.Rect(0, 150, self.SIZE[0], 80))
        elif self.big:
            draw_text(surf, self.big, big, pg.Rect(0, 150, self.SIZE[0], 80), center=True)
        self.rects = []
        if self.cards:
            n = len(self.cards)
            gap = 16
            w = min(130, (self.SIZE[0] - 40 - gap * (n - 1)) // n)
            h = int(w * 1.4)
            left = (self.SIZE[0] - (w * n + gap * (n - 1))) // 2
            self.rects = [pg.Rect(left + i * (w + gap), 270, w, h) for i in range(n)]
            # the memory drill's way (reader.ui.choices): numbered, framed once picked
            draw_choices(surf, self.rects, self.cards, small, self.frames)
        self._static = surf
        self._dirty = False

    BAR = (40, 110, 880, 10)

    def _draw(self):
        """A frame: the whole screen when the content changed (returns None: full flip), else
        only the progress bar of the 上の句 being heard (returns its rect)."""
        pg = self._pg
        full = self._dirty or self._static is None
        if full:
            self._render_static()
            self.screen.blit(self._static, (0, 0))
        bar = pg.Rect(self.BAR)
        self.screen.blit(self._static, bar, bar)
        p = self.progress_fn() if self.progress_fn else None
        if p is not None:
            pg.draw.rect(self.screen, (70, 90, 80), bar)
            pg.draw.rect(self.screen, (235, 200, 90), (bar.x, bar.y, int(bar.w * min(1.0, p)), bar.h))
        return None if full else [bar]

    progress_fn: Callable[[], float | None] | None = None

    def _set(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        self._dirty = True

    # drill
    def is_tap(self, ev) -> bool:
        if ev.kind in ("mouse", "touch"):
            return True
        return ev.kind == "key" and ev.char not in QUIT_CHARS and ev.key != self._pg.K_ESCAPE

    def card(self, plan, index: int, poem: int) -> None:
        self._set(big="", cards=[], frames=None, verdict_of=None,
                  lines=self.lines[-3:] + [f"[{index}/{len(plan.order)}] …"])

    def show(self, text: str) -> None:
        self.echo(text)
        self._set(lines=self.lines + [text.strip()])

    def ask(self, grab, choices: list[int]) -> None:
        big = "not timed" if grab.reaction_ms is None else f"{grab.reaction_ms:+.0f} ms"
        self._set(big=big, cards=list(choices), frames=None, verdict_of=None)

    def verdict(self, poem: int, answer: int | None, correct: bool) -> None:
        """The pick is made: the read card framed green, a wrong pick red, ○ / × by the time
        (a tap on a karafuda: × and no cards).  Stays until the next card."""
        from reader.ui.choices import answer_frames

        cards = self.cards
        frames = answer_frames(len(cards), cards.index(poem) if poem in cards else None,
                               cards.index(answer) if answer in cards else None)
        big = self.big if cards else "お手つき (空札)"
        self._set(frames=frames, verdict_of=bool(correct), big=big)

    def answer(self, ev, choices: list[int], candidates) -> int | None:
        if ev.kind == "key" and ev.char.isdigit() and 1 <= int(ev.char) <= len(choices):
            return choices[int(ev.char) - 1]
        if ev.kind in ("mouse", "touch") and ev.pos is not None:
            for r, poem in zip(self.rects, choices):
                if r.collidepoint(ev.pos):
                    return poem
        return None

    def tapped(self, n: int) -> None:
        self._set(big=f"{n}")

    def stats(self) -> str:
        d = self.taps.stats.describe()
        return (f"window {self.loop.fps_measured():.1f} fps; input polled every "
                f"{d.get('median_ms', 0):.2f} ms (median), p99 {d.get('p99_ms', 0):.1f} ms, "
                f"max {d.get('max_ms', 0):.1f} ms; {self.taps.describe_stamping()}")

    def frame(self, heard) -> None:
        pass

    def message(self, text: str) -> None:
        self._set(big=text, cards=[], frames=None, verdict_of=None)


# ---------------------------------------------------------------------------- the drill loop
@dataclass
class DrillResult:
    records: list[dict] = field(default_factory=list)
    missed: list[int] = field(default_factory=list)
    passed: list[int] = field(default_factory=list)  # karafuda rightly not tapped
    quit: bool = False
    gate: object = None  # the "get ready" (reader.input.taps.SettleGate)
    done: int = 0  # cards finished: tapped and named, missed, or a karafuda left alone
    reached: int = 0  # the last card whose 上の句 began (1-based)

    def summary(self, planned: int):
        """``reader.drills.grab.Summary`` of what was done, out of ``planned`` cards (a drill
        stopped with q counts only the cards it got through)."""
        from reader.drills.grab import summarize

        return summarize(self.records, cards=self.done, missed=len(self.missed),
                         planned=planned, stopped_at=self.reached if self.quit else None)


def _ts_of(ns: int, clock: Clock = SYSTEM_CLOCK) -> datetime:
    """The wall-clock time of a stamp ``ns`` (``clock``'s nanoseconds, as taps are stamped)."""
    return clock.now() - timedelta(seconds=clock.seconds() - ns / 1e9)


def run_drill(plan, voice, output, front, *, calibration_ms: float = 0.0, take_s: float = 3.0,
              choices: int = 6, log=None, db=None, session_id: str | None = None,
              rng: random.Random | None = None, echo: Callable[[str], None] = term_echo,
              on_event: Callable[[str, object], None] | None = None,
              clock: Clock = SYSTEM_CLOCK,
              ) -> DrillResult:
    """Play the drill ``plan`` on ``output``; taps from ``front``; every tap is logged
    (``log``: a text file, one JSON line, flushed) and recorded in ``db`` (``StatsDB``) as it
    happens.  ``clock``: seconds on the clock taps are stamped with (``TapEvent.ns`` / 1e9;
    it times the take and the "get ready"; its ``now()`` dates a record).  ``on_event(name, data)`` tells tests/benchmarks what happens ("ready" (the warm-up's
    length, s), "card", "grab", "record", "miss")."""
    from audio.render import PlanCursor
    from reader.drills.grab import (card_at, gap_before_onset, log_record, reaction, timeline_of,
                                    untimed)
    from reader.input.taps import SettleGate, TapMapper, sound_gap_ms

    rng = rng or seeds.rng(seeds.pick_seed())
    notify = on_event or (lambda name, data: None)
    rate = plan.sample_rate
    kami = {s.poem: s for s in plan.segments if s.kind == "kami" and isinstance(s.poem, int)}
    timeline = {p: timeline_of(voice, s) for p, s in kami.items()}
    position = {p: i + 1 for i, p in enumerate(plan.order)}
    karafuda = set(plan.karafuda)
    cursor = PlanCursor(plan, voice, live=True)
    mapper = TapMapper(output, cursor)
    result = DrillResult()
    done: set[int] = set()
    pending = None  # (grab, choices, candidates) while the player names the poem
    wait_since: float | None = None
    released: int | None = None
    shown: int | None = None
    # KARUTA_TIMING_DEBUG=1: each log line gets "debug": how its tap was mapped (DAC buffer,
    # clock pairing, stream age ...); KARUTA_TIMING_DUMP=FILE.npz: the DAC timeline at the end
    debug = os.environ.get("KARUTA_TIMING_DEBUG", "") not in ("", "0")
    debug_of: dict[int, dict] = {}

    def candidates_for(poem):
        i = plan.order.index(poem)
        read_before = set(plan.order[:i])
        return [n for n in plan.universe if n not in read_before and n not in karafuda]

    def finish(grab, answer, correct, fault, ns):
        ts = _ts_of(ns, clock)
        rec = log_record(grab, correct=correct, answer=answer, karafuda=grab.poem in karafuda,
                         fault=fault, card=position[grab.poem],
                         ts=ts.isoformat(timespec="milliseconds"))
        if debug:
            rec["debug"] = debug_of.pop(grab.poem, {})
        result.records.append(rec)
        if log is not None:
            log.write(json.dumps(rec, ensure_ascii=False) + "\n")
            log.flush()
            os.fsync(log.fileno())
        if db is not None and session_id is not None:
            db.record_tap(session_id, grab.poem, ts, kimariji=grab.kimariji,
                          reaction_ms=grab.reaction_ms, from_kami_ms=grab.from_kami_ms,
                          correct=correct, anticipation=grab.anticipation, fault=fault)
        done.add(grab.poem)
        notify("record", rec)
        import poems

        p = poems.poem(grab.poem)
        verdict = ("○" if correct else "× お手つき" if fault else "×")
        front.show(f"  {verdict}  {grab.poem} {grab.kimariji}  {' '.join(p.kanji[:3])}")
        if hasattr(front, "verdict"):  # (a window: the cards framed as in the memory drill)
            front.verdict(grab.poem, answer, bool(correct))

    def progress():
        f = output.frame_now()
        if f is None:
            return None
        seg, _ = cursor.segment_at(max(0, int(f)))
        if seg is None or seg.kind != "kami":
            return None
        return (cursor.plan_frame_at(max(0, int(f))) - seg.start) / max(1, seg.frames)

    if isinstance(front, WindowFront):
        front.progress_fn = progress
    # "get ready": the stream plays silence (the cursor held in the lead pause) until its DAC
    # times have settled, then a countdown (``reader.input.taps.SettleGate``); taps meanwhile are
    # ignored
    gate = SettleGate(output, cursor, clock=clock)
    result.gate = gate

    def say(text):
        if hasattr(front, "message"):
            front.message(text)
        elif text:
            front.show(text)

    gate.start()
    output.play(cursor)
    try:
        while output.is_active:
            ended = gate.poll()
            text = gate.pop_message()
            if text is not None:
                say(text)
            if ended:
                notify("ready", gate.waited_s)
            for ev in front.poll(0.002):
                if ev.kind == "quit" or (ev.kind == "key" and ev.char in QUIT_CHARS
                                         and pending is None) or (ev.char == "\x1b"):
                    result.quit = True
                    front.show("stopped")
                    return result
                if pending is None:
                    if gate.waiting or not front.is_tap(ev):
                        continue
                    pf = mapper.plan_frame(ev.ns)
                    seg = card_at(plan, pf) if pf is not None else None
                    if seg is None or seg.poem in done:
                        continue
                    if debug and hasattr(output, "timing_debug"):
                        dbg = output.timing_debug(ev.ns / 1e9)
                        dbg["tap_perf"] = ev.ns / 1e9
                        dbg["plan_frame"] = pf
                        dbg["warmup_s"] = round(gate.waited_s, 2)
                        debug_of[seg.poem] = dbg
                    grab = reaction(pf, seg, calibration_ms, sample_rate=rate,
                                    timeline=timeline[seg.poem])
                    # a gap in the sound since the kimariji's onset: the reaction would be off
                    # by it; one before the onset only moves the time from the 上の句's start
                    gap = sound_gap_ms(output, cursor, seg.start, ev.ns)
                    if gap is not None:
                        onset = seg.decisive if grab.timeline != "kami-start" else seg.start
                        after = (sound_gap_ms(output, cursor, onset, ev.ns)
                                 if onset > seg.start else gap)
                        grab = (untimed(grab, after) if after is not None
                                else gap_before_onset(grab, gap))
                    notify("grab", grab)
                    flag = (" (before the kimariji)" if grab.early else
                            " (anticipation)" if grab.anticipation else "")
                    flag += "" if grab.timeline == "exact" else f" [{grab.timeline} timeline]"
                    if grab.untimed is not None:
                        front.show(f"  {grab.untimed} (its timing moved {grab.gap_ms:+.0f} ms "
                                   "after the kimariji began)")
                    elif grab.from_kami_ms is None:
                        front.show(f"  {grab.reaction_ms:+.0f} ms after the kimariji{flag} (the "
                                   f"sound had a gap of {grab.gap_ms:+.0f} ms before it)")
                    else:
                        front.show(f"  {grab.reaction_ms:+.0f} ms after the kimariji, "
                                   f"{grab.from_kami_ms:.0f} ms into the 上の句{flag}")
                    if grab.poem in karafuda:
                        finish(grab, None, False, True, ev.ns)
                        front.show("  空札: not on the field — a tap is a fault")
                    else:
                        cands = candidates_for(grab.poem)
                        ch = choices_for(grab.poem, cands, choices, rng)
                        pending = (grab, ch, cands, ev.ns)
                        front.ask(grab, ch)
                else:
                    grab, ch, cands, ns = pending
                    answer = front.answer(ev, ch, cands)
                    if answer is not None:
                        pending = None
                        finish(grab, answer, answer == grab.poem, answer != grab.poem, ns)
            # what the cursor is doing (its head, ~0.1 s ahead of the ear)
            st = cursor.state
            seg = st.segment
            if seg is not None and seg.kind == "kami" and seg.poem != shown:
                shown = seg.poem
                result.reached = position[seg.poem]
                front.card(plan, position[seg.poem], seg.poem)
                notify("card", seg)
            if st.waiting and seg is not None and isinstance(seg.poem, int):
                poem = seg.poem
                if poem in done:
                    if released != poem:
                        released = poem
                        wait_since = None
                        cursor.release()
                elif pending is None:
                    now = clock.seconds()
                    if wait_since is None:
                        wait_since = now
                    elif now - wait_since >= take_s:
                        done.add(poem)
                        if poem in karafuda:
                            result.passed.append(poem)
                            front.show(f"  空札 {poem}: rightly left alone")
                        else:
                            result.missed.append(poem)
                            front.show(f"  missed {poem} {kami[poem].kimariji}")
                        notify("miss", poem)
        output.wait(timeout=1.0)
    finally:
        result.done = len(done)
        output.stop()
        cursor.close()
        dump = os.environ.get("KARUTA_TIMING_DUMP")
        if dump and hasattr(output, "timing_dump"):
            output.timing_dump(dump)
    return result
