"""``karuta practice``: a practice match — the app reads, you grab, the rules judge.

Thin: parse options, build the match (``reader.practice.headless.new_match`` / ``resume``), then
either play it headless (``--bot-vs-bot``) or hand it to the board window
(``reader.practice.window``).
"""
from __future__ import annotations

import json

import click

from reader.cli import warn

from reader.base.errors import KarutaError
from reader.base.seeds import pick_seed
from reader.cli.bounds import finite_range
from reader.cli.options import (backend_option, device_option, joka_option, seed_option,
                                voice_option)


def _cards(ctx, param, value):
    if value is None:
        return None
    from reader.practice.deal import MAX_KYOGI_CARDS

    if not 1 <= value <= MAX_KYOGI_CARDS:
        raise click.BadParameter(f"{value} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                                 "cards a side", ctx=ctx, param=param)
    return value


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--rules", type=click.Choice(["kyogi", "goshiki"]), default=None,
              help="kyogi (default): 25 cards a side, first to empty theirs wins; goshiki: one "
                   "colour's 20, 10 each, most taken after 17 reads wins.")
@click.option("--vs", "vs", default=None, metavar="bot:LEVEL|human|none",
              help="Your opponent: a bot of level 1-5 (default bot:3), a second player on the "
                   "same screen, or none (alone: all the cards on the board are yours; "
                   "goshiki: your 10, the colour's other 10 are karafuda).")
@click.option("--cards", type=int, default=None, callback=_cards,
              help="Kyogi: cards a side (1-50, default 25); the rest are karafuda.")
@click.option("--color", type=click.Choice(["blue", "pink", "yellow", "green", "orange"]),
              default=None, help="Goshiki colour (default: drawn from the seed).")
@seed_option("Seed of the deal, the reading order and the bots (printed when not given).")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Match log (JSON Lines), saved after every read; 'karuta match replay' "
                   "scores it.")
@click.option("--resume", is_flag=True, help="Continue the match in --log after a crash or quit.")
@click.option("--bot-vs-bot", "bot_vs_bot", default=None, metavar="A,B",
              help="Two bots play a whole match with no window and no sound (e.g. 2,4).")
@click.option("--json", "as_json", is_flag=True,
              help="With --bot-vs-bot: print the result as 'karuta match replay --json' does.")
@click.option("--hints", is_flag=True,
              help="Live narrowing: cards that can no longer be the one being read dim as "
                   "each sound is heard.")
@voice_option()
@joka_option("Read the jo-ka before the first card (default: yes; --no-joka starts with the "
             "first 上の句).")
@click.option("--simultaneous", type=finite_range(0, 1000), default=10.0, show_default=True,
              help="Touches within this many ms count as simultaneous (the card goes to its "
                   "owner).")
@device_option("Sound device (window play; see karuta read --list-devices).")
@click.option("--fullscreen", is_flag=True, help="Window play: full screen.")
@click.option("--memorize", type=finite_range(0, 120), default=None,
              help="Window play: memorisation time, minutes (kyogi 15, goshiki 0.5).")
@click.option("--show-kimariji", is_flag=True,
              help="Window play: print each card's kimariji on it (for beginners).")
@backend_option("Window play: audio output library (sounddevice times clicks best).")
def practice(rules, vs, cards, color, seed, log_file, resume, bot_vs_bot, as_json, hints,
             voice_spec, joka, simultaneous, device, fullscreen, memorize, show_kimariji, backend):
    """Play a practice match on a board: the app reads, you grab the cards, it judges.

    \b
    Examples:
      karuta practice --vs bot:3                 # kyogi against a level-3 bot, in a window
      karuta practice --cards 10 --vs bot:1      # a short game: 10 cards a side
      karuta practice --rules goshiki --color blue --vs human
      karuta practice --vs none --no-joka        # alone, straight to the first card
      karuta practice --log m.jsonl --resume     # continue after a crash
      karuta practice --bot-vs-bot 2,4 --seed 7 --log m.jsonl --json
    """
    from reader.reading.voices import make_voice
    from reader.practice import headless
    from reader.practice.match import PracticeSettings, Seat

    if not 0 <= simultaneous <= headless.MAX_SIMULTANEOUS_MS:
        raise KarutaError(f"--simultaneous {simultaneous:g} is out of range: "
                          f"0-{headless.MAX_SIMULTANEOUS_MS:g} ms")
    if as_json and bot_vs_bot is None and not resume:
        raise KarutaError("--json needs --bot-vs-bot (a window match shows its result)")
    if resume and log_file is None:
        raise KarutaError("--resume needs --log FILE (the match to continue)")
    if bot_vs_bot is not None:
        if vs is not None:
            raise KarutaError("--bot-vs-bot and --vs do not go together")
        parts = [p for p in bot_vs_bot.replace(" ", "").split(",")]
        if len(parts) != 2:
            raise KarutaError(f"--bot-vs-bot {bot_vs_bot!r}: give two levels, e.g. 2,4")
        seats = {"A": headless.parse_seat(f"bot:{parts[0]}"),
                 "B": headless.parse_seat(f"bot:{parts[1]}")}
    else:
        seats = {"A": Seat("human"), "B": headless.parse_seat(vs or "bot:3")}
    if cards is not None and (rules or "kyogi") != "kyogi":
        raise KarutaError("--cards applies to kyogi (goshiki deals 10 each)")
    if color is not None and (rules or "kyogi") != "goshiki":
        raise KarutaError("--color applies to goshiki")

    from reader.cli import claim_log

    def claim(hold=True):  # never over a file; one karuta plays a log at a time
        if log_file is not None:
            claim_log(log_file, "a practice log", new=not resume, hold=hold)

    claim(hold=False)  # now; held once the sound device is open (window) or before a save
    voice = make_voice(voice_spec)
    if resume:
        if (rules is not None or cards is not None or color is not None or seed is not None
                or joka is not None):
            raise KarutaError("--resume continues the logged match: leave out --rules, "
                              "--cards, --color, --seed and --joka/--no-joka")
        m = headless.resume(log_file, voice, seats if (bot_vs_bot or vs) else None)
    else:
        if seed is None:
            seed = pick_seed()
        m = headless.new_match(rules or "kyogi", seats, seed, voice, cards=cards, color=color,
                               reading=None if joka is None else {"joka": joka},
                               settings=PracticeSettings(simultaneous_ms=simultaneous))

    if any(s.kind == "human" for s in m.seats.values()):
        if as_json:
            raise KarutaError("--json needs --bot-vs-bot (a window match shows its result)")
        _play_in_window(m, log_file=log_file, hints=hints, device=device, fullscreen=fullscreen,
                   memorize=memorize, show_kimariji=show_kimariji, backend=backend,
                   new_log=not resume, claim=claim)
        _say_seed(m)
        return
    claim()

    def after(match, closed):
        if log_file is not None:
            headless.save(match, log_file)

    try:
        if log_file is not None and not resume:
            headless.save(m, log_file)  # the deal is on disk before the first read
        headless.play(m, on_read=after)
    except KeyboardInterrupt:  # (Ctrl-C, SIGTERM, SIGHUP) every read before it is saved
        import os

        if log_file is not None and os.path.exists(log_file):
            click.echo(f"log saved to {log_file}; continue with: karuta practice --resume "
                       f"--log {log_file} --bot-vs-bot {bot_vs_bot}", err=True)
        raise
    from reader.match import log as matchlog

    if as_json:
        click.echo(json.dumps(matchlog.summary(m.match), ensure_ascii=False))
    else:
        click.echo(matchlog.report(m.match))
        _say_seed(m)


def _say_seed(m) -> None:
    """After the match (never before an error line): the seed that repeats it."""
    seed = m.extra.get("seed")
    if seed is not None:
        click.echo(f"seed {seed}: the same deal, order and bots again with --seed {seed}")


def _play_in_window(m, *, log_file=None, hints: bool = False, device=None, fullscreen: bool = False,
        memorize: float | None = None, show_kimariji: bool = False,
        backend: str = "sounddevice", on_event=None, new_log: bool = False, claim=None):
    """``karuta practice`` with a human seat: open the output (a missing device is one line,
    before any window and before anything is written), write a new log's deal (``new_log``),
    open the stats database, and play the match in the board window."""
    from reader.drills.calibrate import CalibrationStore, device_key
    from reader.reading.player import open_output
    from reader.base.errors import DeviceError, KarutaError
    from reader.practice.window import NO_DISPLAY, BoardWindow
    from reader.ui.window import display_available

    if memorize is not None and not 0 <= memorize <= 120:
        raise KarutaError(f"--memorize {memorize:g} is out of range: 0-120 minutes")
    if not display_available():
        raise DeviceError(NO_DISPLAY)
    output = open_output(backend, device, m.plan.sample_rate)
    try:
        if claim is not None:
            claim()  # the log is held from now on (``claim_log``)
        if new_log and log_file is not None:
            from reader.practice import headless

            headless.save(m, log_file)  # the deal is on disk before the first read
    except KarutaError:
        output.stop()
        raise
    key = device_key(output)
    calib = CalibrationStore().offset_ms(key)
    if calib is None:
        warn(f"no calibration for {key}: reactions are uncalibrated (run `karuta calibrate`)")
    from datetime import datetime, timezone

    from reader.drills.stats import StatsDB

    with StatsDB() as db:
        sid = db.start_session("practice", datetime.now(timezone.utc), {
            "rules": m.rules, "seats": {p: s.kind for p, s in m.seats.items()},
            "seed": m.extra.get("seed"), "device": key, "calibration_ms": calib})
        w = BoardWindow(m, output, log_file=log_file, hints=hints, memorize_min=memorize,
                        calibration_ms=calib or 0.0, show_kimariji=show_kimariji,
                        fullscreen=fullscreen, on_event=on_event, db=db, session_id=sid)
        w.run()
        w.record_stats()
    from reader.match import log as matchlog

    click.echo(matchlog.report(m.match))
    for line in w.end_lines()[3:]:
        click.echo(line)
    for p, skill in sorted(m.skill.items()):  # its form this match (reader.practice.bot)
        click.echo(f"bot {m.seats[p].level} ({p}) played this match like a {skill:.1f}")
    click.echo(w.stats())
    if w.ready_line() is not None:
        click.echo(w.ready_line())
    return m
