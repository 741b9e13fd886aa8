"""``karuta read``, ``karuta render`` and ``karuta plan``: one set of reading options, one plan.

All three build the same plan from the same options and seed, so ``karuta plan --seed 7``
describes exactly what ``karuta render --seed 7`` writes and ``karuta read --seed 7 --auto``
plays.
"""
from __future__ import annotations

import functools
from pathlib import Path

import click

from reader.cli import command_clock, warn

from reader.base.errors import KarutaError
from reader.cli.options import (backend_option, colors_option, device_option, joka_option,
                                poems_option, replace_option, seed_option, stack,
                                voice_option)
from reader.cli.bounds import FINITE, MAX_MEMORIZE_MIN, finite_range
from reader.match.rules.games import KYOGI
from reader.reading.settings import READINGS

#: the reading presets (each game's, and beginner: reader.reading.settings.READINGS)
RULE_CHOICES = click.Choice(list(READINGS))


def reading_options(f):
    """The options every reading command shares."""
    opts = [
        click.option("--rules", type=RULE_CHOICES, default=KYOGI.name, show_default=True,
                     help="kyogi: competition rhythm; goshiki: classroom, each poem once through; "
                          "beginner: slow, straight through."),
        seed_option("Shuffle seed; the same seed gives the same reading (printed when not given)."),
        click.option("--cards", type=int, default=None, help="How many cards to read (default: all; goshiki 17)."),
        poems_option(),
        colors_option(),
        click.option("--karafuda", type=int, default=None,
                     help="Karafuda (空札) drawn from outside the selection and shuffled in."),
        click.option("--ma", type=FINITE, default=None, help="間 before each 上の句, seconds (kyogi 1.0)."),
        click.option("--yoin", type=FINITE, default=None, help="How long a 下の句's last sound is held, seconds."),
        click.option("--take", type=FINITE, default=None,
                     help="Wait after each 上の句 in auto mode and in files, seconds (kyogi 3.0)."),
        click.option("--gap", type=FINITE, default=None,
                     help="Silence between the halves of a poem (kyogi: between the jo-ka's two 下の句, 0.9), seconds."),
        click.option("--joka-gap", type=FINITE, default=None,
                     help="Silence between the jo-ka's 上の句 and 下の句, seconds (1.5)."),
        click.option("--speed", type=FINITE, default=None, help="Reading pace, 1.0 = kyogi (0.25-4)."),
        joka_option(),
        click.option("--last-shimo/--no-last-shimo", default=None, help="Read the last card's 下の句 (kyogi)."),
        voice_option(),
    ]
    return stack(*opts)(f)


def reading_from_options(opts: dict):
    """(settings, seed or None, voice spec) from the shared reading options."""
    from reader.reading.settings import settings_from_options

    settings = settings_from_options(
        opts["rules"], poems_spec=opts["poems_spec"], colors=opts["colors"], cards=opts["cards"],
        karafuda=opts["karafuda"], ma=opts["ma"], yoin=opts["yoin"], take=opts["take"],
        gap=opts["gap"], speed=opts["speed"], joka=opts["joka"], last_shimo=opts["last_shimo"],
        joka_gap=opts.get("joka_gap"))
    return settings, opts["seed"], opts["voice_spec"]


def build(opts: dict):
    """(plan, voice) from the shared options (a seed is picked when none is given)."""
    from reader.base.seeds import pick_seed
    from reader.reading.voices import build_reading

    settings, seed, voice_spec = reading_from_options(opts)
    return build_reading(settings, pick_seed(seed), voice_spec)


def _write_json(path: str, text: str, replace: bool) -> None:
    from reader.base.statefiles import check_output, write_output_text

    check_output(path, "--plan-out", replace=replace)
    write_output_text(Path(path), text)


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}:{s:02d}"


def _shared(f):
    @reading_options
    @functools.wraps(f)
    def wrapper(**kw):
        return f(**kw)

    return wrapper


@click.command("plan")
@_shared
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON plan.")
def plan(as_json: bool, **opts):
    """Print the reading plan: the order and every timed segment (no sound).

    \b
    JSON: {"sample_rate", "order", "segments": [{"kind", "poem", "start_ms", "end_ms", ...}], ...}
    kinds: kami, shimo (its held last sound included), whole, ma, take, gap.
    """
    import poems

    p, _ = build(opts)
    if as_json:
        click.echo(p.to_json(indent=1))
        return
    click.echo(f"{p.rules} reading, seed {p.seed}, {len(p.order)} cards, {_clock(p.seconds)} "
               f"({p.voice} voice)")
    for s in p.segments:
        if s.kind != "kami" or not isinstance(s.poem, int):
            continue
        i = p.order.index(s.poem) + 1
        flag = " 空札" if s.poem in p.karafuda else ""
        click.echo(f"{_clock(s.start / p.sample_rate):>6}  [{i:3d}] {s.poem:3d} {s.kimariji}"
                   f"{'　' * (7 - len(s.kimariji))}{''.join(poems.poem(s.poem).kanji[:3])}{flag}")


@click.command("render")
@_shared
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Output file: .wav (16-bit PCM), .flac, or .mp3/.ogg (needs ffmpeg).")
@click.option("--plan-out", default=None, type=click.Path(dir_okay=False), help="Also write the plan as JSON.")
@click.option("--subtype", default=None, type=click.Choice(["PCM_16", "PCM_24", "FLOAT"]),
              help="WAV sample format (default PCM_16).")
@replace_option()
def render(out: str, plan_out: str | None, subtype: str | None, replace: bool, **opts):
    """Render the reading to a file: exactly what `karuta read --auto` plays."""
    from audio.render import render_to_file

    from audio.render import _check_target
    from reader.base.statefiles import check_distinct, check_output

    check_distinct(("--out", out), ("--plan-out", plan_out))

    _check_target(Path(out), replace)  # before the synthesis: a refused --out costs nothing
    if plan_out:  # a plan that cannot be written must not cost a finished render
        check_output(plan_out, "--plan-out", replace=replace)
        _check_target(Path(plan_out), replace)
    p, voice = build(opts)
    from reader.cli.progress import synthesize_ahead

    synthesize_ahead(p, voice)
    render_to_file(p, voice, Path(out), subtype=subtype or "PCM_16", replace=replace)
    if plan_out:
        _write_json(plan_out, p.to_json(indent=1), replace)
    _notice(voice)
    click.echo(f"wrote {out}: {_clock(p.seconds)}, {len(p.order)} cards, {p.rules}, seed {p.seed}"
               + (f"; plan in {plan_out}" if plan_out else ""))


def _notice(voice) -> None:
    """A voice pack with missing clips says so once (the synthesized voice fills in)."""
    note = getattr(voice, "notice_once", None)
    msg = note() if callable(note) else None
    if msg:
        warn(msg)


@click.command("read")
@_shared
@click.option("--auto", is_flag=True, help="Advance by itself after the take time (no keys needed).")
@device_option("Sound device name or number (see --list-devices).")
@click.option("--list-devices", is_flag=True, help="List sound output devices and exit.")
@backend_option("Audio output library.")
@click.option("--plan-out", default=None, type=click.Path(dir_okay=False), help="Also write the plan as JSON.")
@click.option("--live", is_flag=True,
              help="Club mode: a full-screen status (card k/N, kimariji at read time, read/left, "
                   "the read log), step back, memorisation timer; saved after every card.")
@click.option("--window", is_flag=True, help="Club mode in a large-text window with a NEXT button.")
@click.option("--resume", is_flag=True, help="Continue the saved session where it stopped (same order).")
@click.option("--session", "session_path", default=None, type=click.Path(dir_okay=False),
              help="Session file (default: the data folder's sessions/last.json; KARUTA_DATA_DIR).")
@click.option("--memorize", type=finite_range(0, MAX_MEMORIZE_MIN), default=None, metavar="MIN",
              help="Memorisation minutes before the reading (club mode default 15; goshiki 0.5, i.e. 30 s; 0 = none).")
@click.option("--signals", default=None, metavar="MIN[,MIN]",
              help="Memorisation signals, minutes from the start (default: 2 min before the end).")
@click.option("--show-log", is_flag=True, help="Print the last session's read log and exit.")
@click.option("--list-sessions", is_flag=True,
              help="List the saved session and those a new one set aside, and exit.")
@click.option("--next-keys", default=None, metavar="KEYS",
              help="Club mode: the keys that mean next, comma-separated, replacing the default "
                   "space,enter,pagedown,right (for a foot pedal).  Names: space enter tab "
                   "backspace pageup pagedown left right up down comma, or one character (a "
                   "letter matches both cases).")
@click.option("--back-keys", default=None, metavar="KEYS",
              help="Club mode: the keys that step back a card (default b,left,backspace,pageup). "
                   "A key in both lists is refused; a list left at its default gives up the keys "
                   "the other one names.  p h r q s keep their meaning.")
@replace_option()
def read(auto: bool, device: str | None, list_devices: bool, backend: str, plan_out: str | None,
         live: bool, window: bool, resume: bool, session_path: str | None, memorize: float | None,
         signals: str | None, show_log: bool, list_sessions: bool, next_keys: str | None,
         back_keys: str | None,
         replace: bool, **opts):
    """Read aloud on the sound device: jo-ka, then the shuffled poems.

    \b
    Keys: space  next (after the take; the 下の句 follows)
          p      hold / resume (a raised hand)
          r      repeat the last 下の句
          q      quit
    With --auto the reading advances after the take time by itself.

    \b
    Club mode (--live, --window; --resume continues a saved one):
          space / Enter / PageDown / Right   next        (--next-keys)
          p or h                             hold / resume (at the next silence)
          r                                  repeat the last 下の句
          b / Left / Backspace / PageUp      step back one card (--back-keys)
          s                                  skip the memorisation
          q                                  quit (saved)
    A pedal that sends n:  --next-keys n   (or  --next-keys space,n  to keep space)
    """
    from reader.reading.player import list_output_devices, run_live

    if list_devices:
        for line in list_output_devices():
            click.echo(line)
        return
    if show_log:
        from reader.club.run import show_log as _show

        _show(session_path, click.echo)
        return
    if list_sessions:
        from reader.club.run import list_sessions as _list

        _list(session_path, click.echo)
        return
    def _device_first():  # no device: one line before any file is written
        if backend == "sounddevice" and not window:
            from audio.output import resolve_device

            resolve_device(device)

    if plan_out:  # before a session or anything else is written
        from reader.base.statefiles import check_distinct, check_output

        check_output(plan_out, "--plan-out", replace=replace)
        check_distinct(("--session", session_path), ("--plan-out", plan_out))
    club_mode = live or window or resume or memorize is not None
    if (next_keys is not None or back_keys is not None) and not club_mode:
        raise KarutaError("--next-keys/--back-keys map club-mode keys: add --live or --window "
                          "(or --resume)")
    if club_mode:
        from reader.cli import hold_while_running
        from reader.club.run import open_club
        from reader.club.store import default_session_path
        from reader.ui.keys import key_bindings

        # given now: these keys (saved with the session); else a resumed session's own
        bindings = (key_bindings(next_keys, back_keys)
                    if next_keys is not None or back_keys is not None else None)

        def _built(p, voice):
            if plan_out:
                _device_first()
                _write_json(plan_out, p.to_json(indent=1), replace)
            _notice(voice)

        session = Path(session_path) if session_path else default_session_path()
        if not resume:  # a new session: the last one becomes previous.json; any other file
            from reader.base.statefiles import check_output  # is the user's: refused

            check_output(session, "--session", same_kind="a club reading session", replace=None)

        def claim():  # one club reading a session at a time (once the device is open)
            try:  # (as the session's first save would)
                session.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise KarutaError(f"cannot write session {session}: {e.strerror or e}") from None
            hold_while_running(session, "the club session")

        open_club(reading_from_options(opts), resume=resume,
                  session_path=session_path, memorize=memorize, signals=signals, auto=auto,
                  device=device, backend=backend, window=window, echo=click.echo,
                  bindings=bindings, on_built=_built, claim=claim, clock=command_clock())
        return
    _device_first()
    p, voice = build(opts)
    if plan_out:
        _write_json(plan_out, p.to_json(indent=1), replace)
    _notice(voice)
    run_live(p, voice, auto=auto, device=device, backend=backend, echo=click.echo)
