"""The live reading session: walks a plan on a sound device and takes the reader's keys.

This is the only place in the reading path that waits (on keys and on the device); the engine
made the plan, the cursor produces its samples, the output plays them in real time.

    keys (this thread) ──> PlanCursor commands ──> feeder thread ──> device callback
                                        ^ segment heard now (output.frame_now) ──> screen lines

State seen by the reader (printed one line per change)::

    上の句 ──> take: waiting (live) / counting down (auto) ──space──> 下の句 ──> 間 ──> next 上の句
                    │  p: hold ──p──> resume                  r: the last 下の句 again
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import poems
from reader.base.errors import DeviceError, KarutaError
from audio.plan import Plan, Segment

HELP = "keys: space next · p hold/resume · r repeat 下の句 · q quit"


def list_output_devices() -> list[str]:
    from audio.output import list_devices

    rows = list_devices()
    if not rows:
        raise DeviceError("no sound device found: use `karuta render --out reading.wav` to write the reading to a file")
    return [f"{d['index']:3d}  {d['name']}{'  (default)' if d.get('default') else ''}" for d in rows]


def open_output(backend: str, device, sample_rate: int):
    """The output for ``--backend``; a missing device is one ``DeviceError`` line."""
    if backend == "pygame":
        from audio.output import PygameOutput

        return PygameOutput(sample_rate=sample_rate)
    import os

    from audio.output import AudioProcessOutput, SounddeviceOutput

    # the stream plays in an audio process of its own (the app's GIL cannot starve it);
    # KARUTA_AUDIO_PROCESS=0 keeps it in this process
    process = os.environ.get("KARUTA_AUDIO_PROCESS", "1") != "0"
    extra: dict = {}
    # audio made ahead (default 150 ms); how far the audio process's ring is filled ahead
    # (default 3000 ms; 0: the queue only)
    for key, name, lo, hi in (("queue_ms", "KARUTA_AUDIO_QUEUE_MS", 20.0, 600.0),
                              ("ahead_ms", "KARUTA_AUDIO_AHEAD_MS", 0.0, 5000.0)):
        value = os.environ.get(name)
        if value:
            try:
                extra[key] = min(hi, max(lo, float(value)))
            except ValueError:
                raise DeviceError(f"{name}={value!r} is not a number of ms") from None
    if not process:
        extra.pop("ahead_ms", None)  # the in-process stream has no ring to fill ahead
        return SounddeviceOutput(device=device, sample_rate=sample_rate, **extra)
    return AudioProcessOutput(device=device, sample_rate=sample_rate, **extra)


@dataclass
class ReadLog:
    """What was read, in order, with each card's kimariji as it was when read (for disputes)."""

    entries: list[tuple[int, str]] = field(default_factory=list)

    def add(self, seg: Segment) -> None:
        if isinstance(seg.poem, int) and (not self.entries or self.entries[-1][0] != seg.poem):
            self.entries.append((seg.poem, seg.kimariji or ""))


def describe(plan: Plan, seg: Segment, repeat: bool = False) -> str | None:
    """One line for the reader's screen when ``seg`` starts being heard (None: nothing to say)."""
    total = len(plan.order)
    if seg.kind == "kami" and isinstance(seg.poem, int):
        p = poems.poem(seg.poem)
        i = plan.order.index(seg.poem) + 1
        tag = " 空札" if seg.poem in plan.karafuda else ""
        return (f"[{i}/{total}] {seg.poem:3d} {seg.kimariji}  {' '.join(p.kanji[:3])}  "
                f"({p.author}){tag}")
    if seg.kind == "kami" and seg.poem == "joka":
        return "序歌  " + " ".join(poems.JOKA.kanji[:3])
    if seg.kind == "kami" and seg.poem == "karafuda":
        return "空札  " + " ".join(poems.GOSHIKI_KARAFUDA.kanji[:3])
    if seg.kind == "whole" and seg.poem == "announce":
        return "ご用意よければ 空札一枚"
    if seg.kind == "shimo":
        text = poems.JOKA if seg.poem == "joka" else (
            poems.GOSHIKI_KARAFUDA if seg.poem == "karafuda" else poems.poem(seg.poem))
        return f"      {'(again) ' if repeat else ''}下の句  {' '.join(text.kanji[3:])}"
    if seg.kind == "take" and seg.wait:
        return None
    return None


def run_live(plan: Plan, voice, *, auto: bool, device=None, backend: str = "sounddevice",
             echo: Callable[[str], None] = print, keys=None) -> ReadLog:
    """Play ``plan`` live until it ends or the reader quits; returns the read log.

    ``keys``: a ``reader.ui.keys.KeyReader``-like object (default: the terminal).
    """
    from audio.render import PlanCursor
    from reader.ui.keys import KeyReader

    output = open_output(backend, device, plan.sample_rate)  # fail before any synthesis
    cursor = PlanCursor(plan, voice, live=not auto)
    log = ReadLog()
    echo(f"{plan.rules} reading · {len(plan.order)} cards · seed {plan.seed} · {voice.name} voice"
         f"{' · auto' if auto else ''}")
    echo(HELP)
    own_keys = keys is None
    keys = keys if keys is not None else KeyReader()
    held = False
    shown: tuple | None = None
    waiting_said = False
    segs = plan.segments
    index = {id(sg): k for k, sg in enumerate(segs)}
    nxt = 0  # the first segment of the plan not yet shown

    def show(sg, repeat=False):
        nonlocal waiting_said, nxt
        if not repeat and id(sg) in index:
            nxt = max(nxt, index[id(sg)] + 1)
        if sg.kind == "kami":
            log.add(sg)
            waiting_said = False
        line = describe(plan, sg, repeat)
        if line:
            echo(line)

    def catch_up(pos):
        """Show the segments the ear passed since the last look (a device without a clock
        plays far faster than real time; a loop kept off the CPU looks late)."""
        while nxt < len(segs) and segs[nxt].start < pos:
            show(segs[nxt])

    ended = stopped = False
    try:
        if own_keys:
            keys.__enter__()
        output.play(cursor)
        while True:
            key = keys.get(timeout=0.01)
            if key is not None:
                c = key.char
                if c == " " or c in "\r\n":
                    cursor.release()
                elif c in "pP":
                    held = not held
                    (cursor.hold if held else cursor.resume)()
                    echo("      (hold)" if held else "      (resume)")
                elif c in "rR":
                    cursor.repeat_last_shimo()
                elif c in "qQ\x1b":
                    echo("stopped by the reader")
                    stopped = True
                    break
            frame = output.frame_now()
            if frame is not None:
                seg, repeat = cursor.segment_at(max(0, int(frame)))
                if seg is not None and (seg, repeat) != shown:
                    shown = (seg, repeat)
                    if not repeat and id(seg) in index:
                        catch_up(seg.start)
                    show(seg, repeat)
                    if seg.kind == "take" and not auto and not waiting_said:
                        echo("      … take (space: 下の句)")
                        waiting_said = True
            if not output.is_active:
                ended = True
                break
        output.wait(timeout=0)
        if ended and cursor.state.finished:
            catch_up(plan.frames)  # played to the end: whatever the last look missed
    except DeviceError as e:
        last = (f" (the last: {log.entries[-1][0]} {log.entries[-1][1]})" if log.entries else "")
        raise DeviceError(f"{e}: {len(log.entries)} of {len(plan.order)} cards were heard{last}; "
                          f"`--seed {plan.seed}` gives the same order again") from None
    except KarutaError:
        raise
    finally:
        output.stop()
        cursor.close()
        if own_keys:
            keys.__exit__(None, None, None)
    echo(f"read {len(log.entries)} of {len(plan.order)} cards")
    from audio.output import underrun_line

    line = underrun_line(output, stopped=stopped)
    if line:
        echo(line)
    return log
