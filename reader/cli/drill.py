"""``karuta drill memory`` and ``karuta drill speed``: options in, the drill modules
(``reader.drills``) do the work.  The drills' own modules are imported only when one runs, so
``karuta drill --help`` stays fast.
"""
from __future__ import annotations

import sys

import click

from reader.base import seeds
from reader.cli import warn

from reader.cli.bounds import FINITE
from reader.cli.options import (backend_option, colors_option, device_option, poems_option,
                                replace_option, seed_option, timing_details_option,
                                timing_details_wanted, voice_option, web_options)

from pathlib import Path


@click.group()
def drill():
    """Drills: memorise the cards, train your reactions.  Answers are saved for 'karuta stats'."""


_COLOR_NAMES = ["blue", "pink", "yellow", "green", "orange", "青", "桃", "黄", "緑", "橙"]


def _color(value: str | None) -> str | None:
    if value is None:
        return None
    from poems import COLOR_JA

    by_ja = {ja: name for name, ja in COLOR_JA.items()}
    return by_ja.get(value, value)


@drill.command("memory")
@click.option("--count", "-n", type=click.IntRange(1, 200), default=20, show_default=True,
              help="Poems in the session (due ones first, then new ones).")
@click.option("--mode", type=click.Choice(["kami", "kimariji", "reverse", "mix"]), default="kami",
              show_default=True,
              help="kami: 上の句 → 取り札; kimariji: 決まり字 → 取り札; reverse: 取り札 → 上の句; mix: any.")
@click.option("--choices", "n_choices", type=click.IntRange(2, 9), default=4, show_default=True,
              help="Cards to choose from.")
@click.option("--due", "due_only", is_flag=True, help="Only poems due for review (no new ones).")
@click.option("--new", "max_new", type=click.IntRange(0, 100), default=10, show_default=True,
              help="At most this many new poems in the session.")
@click.option("--color", type=click.Choice(_COLOR_NAMES), default=None,
              help="One goshiki colour: its 20 poems only, distractors and kimariji among them.")
@click.option("--seed", type=int, default=None, help="Seed for the question order and choices.")
@click.option("--window", is_flag=True, help="Drill in a window (large text, cards as printed).")
def memory(count, mode, n_choices, due_only, max_new, color, seed, window):
    """Memory drill: pick the torifuda for a 上の句 or kimariji, or the reverse.

    \b
    Poems are scheduled with FSRS, one card per poem; new poems come colour by
    colour (青 桃 黄 緑 橙), the next colour once 16 of the previous 20 are learned.
    Every answer is saved as it is given (see 'karuta stats').

    \b
    Examples:
      karuta drill memory                      # due poems, then new ones
      karuta drill memory --due --mode kimariji
      karuta drill memory --color 青 --choices 6 --window
    """
    from reader.cli import command_clock
    from reader.memory.deck import MODES, MemoryDeck, poems_of
    from reader.drills.memory_drill import MemorySession, run_terminal, run_window
    from reader.drills.stats import StatsDB

    if window:
        from reader.ui.window import require_display

        require_display()
    color = _color(color)
    clock = command_clock()
    rng = seeds.rng(seed)
    with StatsDB() as db:
        if db.notice:
            warn(db.notice)
        deck = MemoryDeck.from_json(db.memory_cards())
        now = clock.now()
        plan = deck.plan_session(now, rng, count=count, due_only=due_only, color=color, max_new=max_new)
        click.echo(deck.due_counts(now, color).describe())
        if not plan.poems:
            nxt = deck.next_due(poems_of(color))
            when = f"; next due {nxt.astimezone().strftime('%Y-%m-%d %H:%M')}" if nxt else ""
            click.echo(f"nothing to drill now{when}")
            return
        click.echo(f"{len(plan.poems)} poems: {plan.due} due, {plan.new} new\n")
        settings = {"mode": mode, "choices": n_choices, "color": color, "due_only": due_only,
                    "seed": seed, "window": window}
        sid = db.start_session("memory", now, settings)
        session = MemorySession(
            db, deck, plan, sid, rng, modes=MODES if mode == "mix" else (mode,),
            n_choices=n_choices, universe=poems_of(color),
        )
        out = sys.stdout  # (click.get_text_stream is deprecated in click 8.3)
        if window:
            run_window(session, clock, out)
        else:
            run_terminal(session, clock, sys.stdin, out)
        click.echo(session.summary() + "; " + deck.due_counts(clock.now(), color).describe())


def _open_output(backend: str, device, rate: int):
    from reader.reading.player import open_output

    return open_output(backend, device, rate)


@drill.command("speed")
@poems_option()
@colors_option()
@click.option("--cards", type=int, default=None, help="How many cards to read (default: all selected).")
@click.option("--karafuda", type=int, default=0, show_default=True,
              help="Karafuda (空札) from outside the selection, shuffled in: tapping one is a fault.")
@seed_option()
@click.option("--speed", "pace", type=FINITE, default=None, help="Reading pace, 1.0 = kyogi (0.25-4).")
@click.option("--ma", type=FINITE, default=1.0, show_default=True, help="間 before each 上の句, seconds.")
@click.option("--take", type=FINITE, default=3.0, show_default=True,
              help="How long to wait for a tap after the 上の句, seconds (then it is missed).")
@voice_option()
@click.option("--window", is_flag=True, help="Drill in a window (keys, mouse, touch; torifuda to pick).")
@click.option("--choices", type=click.IntRange(2, 8), default=6, show_default=True,
              help="Window: torifuda to pick from after a tap.")
@device_option()
@backend_option()
@click.option("--log", "log_path", default=None, type=click.Path(dir_okay=False),
              help="Write a JSON line per tap to this file (a new file).")
@click.option("--plan-out", default=None, type=click.Path(dir_okay=False),
              help="Write the drill's plan as JSON.")
@replace_option()
@timing_details_option()
@web_options("Drill on a phone or tablet: its browser plays the reading and takes the "
             "touches (open the address printed, or scan its QR code).")
def speed(poems_spec, colors, cards, karafuda, seed, pace, ma, take, voice_spec, window,
          choices, device, backend, log_path, plan_out, replace, timing_details, web, address,
          port):
    """Speed drill (grab timer): tap as soon as you know the poem, then say which.

    \b
    The 上の句 of the selected poems are read, shuffled.  Reaction = from the start of the
    last sound of the kimariji (as it is at that moment) to your tap, calibration applied
    (see 'karuta calibrate'); taps under 100 ms are anticipations.
    Terminal: any key taps, then type the kimariji or the number and Enter; q quits.
    Window: key, click or touch taps, then pick the torifuda (1..N or click).

    \b
    Log line (--log): {"poem", "kimariji", "kimariji_onset_ms", "kami_start_ms", "tap_ms",
    "reaction_ms", "from_kami_ms", "correct", "anticipation", "early", "fault", ...};
    a tap across a gap in the sound has null reaction times and "untimed" (why).
    """
    from reader.base.seeds import pick_seed
    from reader.cli import command_clock
    from reader.cli.underruns import say_underruns
    from reader.drills.calibrate import CalibrationStore, device_key
    from reader.drills.speed import TerminalFront, WindowFront, run_drill
    from reader.reading.voices import make_voice
    from reader.base.errors import KarutaError
    from reader.drills.grab import drill_plan
    from reader.reading.selection import parse_selection

    if web and window:
        raise KarutaError("--web and --window: choose one")
    if not web and (address is not None or port is not None):
        raise KarutaError("--address and --port are for --web (the drill on a phone)")
    if window:
        from reader.ui.window import require_display

        require_display()
    from reader.base.statefiles import check_distinct, check_output

    check_distinct(("--log", log_path), ("--plan-out", plan_out))  # the log would replace it
    if log_path:  # a new log: a file there is never replaced (said below; --replace: the plan)
        check_output(log_path, "--log", replace=True)
    if plan_out:
        check_output(plan_out, "--plan-out", replace=replace)
    def refuse_a_log_there():
        try:
            if log_path and Path(log_path).exists() and Path(log_path).stat().st_size:
                raise KarutaError(f"{log_path} exists: give a new file for --log")
        except OSError as e:
            raise KarutaError(f"cannot write {log_path}: {e.strerror or e}") from None

    refuse_a_log_there()
    selection = parse_selection(poems_spec, colors) if (poems_spec or colors) else None
    seed = pick_seed(seed)
    if web:  # the device plays the reading: no sound here
        from reader.cli import hold_while_running
        from reader.web.server import run_web_drill

        if log_path:
            hold_while_running(log_path, "the drill log")
            refuse_a_log_there()

        return run_web_drill(
            lambda v: drill_plan(v, seed, poems=selection, karafuda=karafuda, cards=cards,
                                 ma_ms=round(ma * 1000), take_ms=round(take * 1000),
                                 speed=pace or 1.0),
            voice_spec, seed=seed, karafuda=karafuda, take_s=take, choices=choices,
            log_path=log_path, plan_out=plan_out, address=address, port=port,
            clock=command_clock(), echo=click.echo, warn=warn)
    output = _open_output(backend, device, 48000)  # no device: one line, before synthesis
    if log_path:  # two drills on one new log would write into each other's (held from now)
        from reader.cli import hold_while_running

        hold_while_running(log_path, "the drill log")
        refuse_a_log_there()
    voice = make_voice(voice_spec)
    if voice.sample_rate != output.sample_rate:
        output = _open_output(backend, device, voice.sample_rate)
    plan = drill_plan(voice, seed, poems=selection, karafuda=karafuda, cards=cards,
                      ma_ms=round(ma * 1000), take_ms=round(take * 1000), speed=pace or 1.0)
    if plan_out:
        from reader.base.statefiles import write_output_text

        write_output_text(Path(plan_out), plan.to_json(indent=1))
    key = device_key(output)
    clock = command_clock()
    calib = CalibrationStore().offset_ms(key)
    if calib is None:
        dev = f" --device {device}" if device else ""
        warn(f"no calibration for {key}: reactions are uncalibrated "
             f"(run `karuta calibrate{dev}`)")
    click.echo(f"speed drill · {len(plan.order)} cards · seed {seed} · {voice.name} voice · "
               f"calibration {'none' if calib is None else f'{calib:+.1f} ms'}")
    click.echo("tap (any key" + (", click or touch" if window else "") + ") as soon as you know "
               "the poem; q quits")
    from reader.drills.stats import StatsDB

    try:
        log = open(log_path, "w", encoding="utf-8") if log_path else None
    except OSError as e:
        raise KarutaError(f"cannot write {log_path}: {e.strerror or e}") from None
    try:
        with StatsDB() as db:
            if db.notice:
                warn(db.notice)
            sid = db.start_session("speed", clock.now(), {
                "seed": seed, "poems": list(plan.universe), "karafuda": karafuda,
                "device": key, "calibration_ms": calib, "window": window})
            front = WindowFront(clock=clock) if window else TerminalFront(clock=clock)
            with front:
                res = run_drill(plan, voice, output, front, calibration_ms=calib or 0.0,
                                take_s=take, choices=choices, log=log, db=db, session_id=sid,
                                rng=seeds.rng(seed), clock=clock)
                timing = front.stats()
    finally:
        if log is not None:
            log.close()
    s = res.summary(len(plan.order))  # (q: the cards done, of the drill's)
    click.echo(s.describe())
    if timing_details_wanted(timing_details):  # (a developer's figures)
        click.echo(timing)
        if res.gate is not None:
            click.echo(res.gate.describe())
    say_underruns(output, stopped=res.quit)  # (q stopped the sound on purpose)
    if log_path:
        click.echo(f"log: {log_path}")
