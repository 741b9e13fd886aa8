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
from reader.cli.bounds import FINITE, finite_range
from reader.cli.options import (backend_option, device_option, joka_option, seed_option,
                                timing_details_option, timing_details_wanted, voice_option)
from reader.practice import online


def _cards(ctx, param, value):
    if value is None:
        return None
    from reader.practice.deal import MAX_KYOGI_CARDS

    if not 1 <= value <= MAX_KYOGI_CARDS:
        raise click.BadParameter(f"{value} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                                 "cards a side", ctx=ctx, param=param)
    return value


def _reading(rules: str, joka, ma, yoin, speed, take) -> dict:
    """The reading settings a practice match changes (``headless.new_match``'s ``reading``),
    checked as a reading's are (one line for a pause or pace out of range) before anything is
    opened or written."""
    from reader.reading.settings import settings_from_options

    # (raises on a bad value)
    s = settings_from_options(rules, ma=ma, yoin=yoin, speed=speed, take=take)
    given = {"joka": joka, "ma_ms": s.ma_ms if ma is not None else None,
             "yoin_ms": s.yoin_ms if yoin is not None else None,
             "take_ms": s.take_ms if take is not None else None,
             "speed": s.speed if speed is not None else None}
    return {k: v for k, v in given.items() if v is not None}


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
@joka_option("Before the first card: kyogi reads the jo-ka; goshiki (which has none) the "
             "announcement and a 空札 poem (default: yes; --no-joka starts with the first "
             "上の句).")
@click.option("--ma", type=FINITE, default=None,
              help="間 before each 上の句, seconds (kyogi 1.0, goshiki 0.6).")
@click.option("--yoin", type=FINITE, default=None,
              help="How long a 下の句's last sound is held, seconds (kyogi 3.0).")
@click.option("--speed", type=FINITE, default=None,
              help="Reading pace, 1.0 = kyogi (0.25-4; goshiki 1.8).")
@click.option("--take", type=FINITE, default=None,
              help="Kyogi: the wait after each 上の句 for the take, seconds (3.0).")
@click.option("--simultaneous", type=finite_range(0, 1000), default=10.0, show_default=True,
              help="Touches within this many ms count as simultaneous (the card goes to its "
                   "owner).")
@device_option("Sound device (window play; see karuta read --list-devices).")
@click.option("--fullscreen", is_flag=True, help="Window play: full screen.")
@click.option("--memorize", type=finite_range(0, 120), default=None,
              help="Window play: memorisation time, minutes (kyogi 15, goshiki 0.5; "
                   "--resume: 2, at most the rules').")
@click.option("--show-kimariji", is_flag=True,
              help="Window play: print each card's kimariji on it (for beginners).")
@backend_option("Window play: audio output library (sounddevice times clicks best).")
@click.option("--host", "host_mode", is_flag=True,
              help="Online: host a match for a player on another machine (prints the code "
                   "they join with).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help=f"Online, --host: the TCP port to listen on (default {online.DEFAULT_PORT}; "
                   "0: any free port, printed).")
@click.option("--join", "join", default=None, metavar="HOST[:PORT]",
              help="Online: join the match hosted at HOST (with --code).")
@click.option("--code", default=None, metavar="CODE",
              help="Online: the code the host printed (--join); --host: use this code.")
@click.option("--as", "as_seat", default=None, metavar="bot:LEVEL",
              help="Online: a bot plays this machine's seat (no window); without it you play "
                   "at the board window.")
@click.option("--sound", is_flag=True,
              help="Online with --as: read aloud too, in sync with the other machine "
                   "(--device).")
@timing_details_option()
def practice(rules, vs, cards, color, seed, log_file, resume, bot_vs_bot, as_json, hints,
             voice_spec, joka, ma, yoin, speed, take, simultaneous, device, fullscreen, memorize,
             show_kimariji, backend, host_mode, port, join, code, as_seat, sound, timing_details):
    """Play a practice match on a board: the app reads, you grab the cards, it judges.

    \b
    Examples:
      karuta practice --vs bot:3                 # kyogi against a level-3 bot, in a window
      karuta practice --cards 10 --vs bot:1      # a short game: 10 cards a side
      karuta practice --rules goshiki --color blue --vs human
      karuta practice --vs none --no-joka        # alone, straight to the first card
      karuta practice --log m.jsonl --resume     # continue after a crash
      karuta practice --bot-vs-bot 2,4 --seed 7 --log m.jsonl --json
      karuta practice --host                     # online: prints the code to join with
      karuta practice --join 192.168.1.20 --code 123456
    """
    from reader.reading.voices import make_voice
    from reader.practice import headless
    from reader.practice.match import PracticeSettings, Seat

    reading = _reading(rules or "kyogi", joka, ma, yoin, speed, take)
    # the settings a new match is made with (the host's, or the log's on --resume)
    deal = dict(rules=rules, cards=cards, color=color, seed=seed, joka=joka, ma=ma, yoin=yoin,
                speed=speed, take=take)
    online_mode = host_mode or join is not None
    if not online_mode and (port is not None or code is not None or as_seat is not None
                            or sound):
        raise KarutaError("--port, --code, --as and --sound are for online play (--host or "
                          "--join)")
    if host_mode and join is not None:
        raise KarutaError("--host and --join do not go together: one machine hosts, the other "
                          "joins")
    if online_mode and (bot_vs_bot is not None or vs is not None or as_json):
        raise KarutaError("online, the other player is on the other machine: leave out --vs, "
                          "--bot-vs-bot and --json")
    if online_mode:
        local = headless.parse_seat(as_seat) if as_seat is not None else Seat("human")
        if local.kind == "none":
            raise KarutaError("--as none: someone has to play this seat (bot:1-5)")
        if local.kind == "human" and sound:
            raise KarutaError("--sound is for --as bot:LEVEL (the board window always reads "
                              "aloud)")
    if join is not None:
        if code is None:
            raise KarutaError("--join needs --code CODE (the code the host printed)")
        if port is not None:
            raise KarutaError("--port is for --host; join HOST:PORT")
        given = _given_settings(deal, memorize=memorize, resume=resume or None)
        if given:
            raise KarutaError(f"the host sets the match: leave out {_and(given)} when joining")
        address = _netplay().parse_address(join)
        _check_new_log(log_file, hold=False)  # (held once the link is up: a refused join
        if local.kind == "human":              # leaves nothing beside the log's name)
            return _join_window(address, code, voice_spec, log_file, device=device,
                                fullscreen=fullscreen, show_kimariji=show_kimariji,
                                hints=hints)
        return _join(address, code, local, voice_spec, log_file, device if sound else False)
    if host_mode:
        if code is not None and not (4 <= len(code) <= 64 and code.isprintable()
                                     and " " not in code):
            raise KarutaError("--code: 4-64 characters, no spaces")
        vs = "human"  # the seat of the player who joins

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
        if memorize is not None:
            raise KarutaError("--memorize is for a player at the board: bots need no "
                              "memorisation (leave it out with --bot-vs-bot)")
        parts = [p for p in bot_vs_bot.replace(" ", "").split(",")]
        if len(parts) != 2:
            raise KarutaError(f"--bot-vs-bot {bot_vs_bot!r}: give two levels, e.g. 2,4")
        seats = {"A": headless.parse_seat(f"bot:{parts[0]}"),
                 "B": headless.parse_seat(f"bot:{parts[1]}")}
    else:
        seats = {"A": local if host_mode else Seat("human"),
                 "B": headless.parse_seat(vs or "bot:3")}
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
        given = _given_settings(deal)
        if given:
            raise KarutaError(f"--resume continues the logged match: leave out {_and(given)}")
        m = headless.resume(log_file, voice, seats if (bot_vs_bot or vs) else None)
        if host_mode and m.seats["B"].kind != "human":
            raise KarutaError(f"{log_file}: seat B of this match is {m.seats['B'].kind}, not a "
                              "player who joins: resume it without --host")
    else:
        if seed is None:
            seed = pick_seed()
        m = headless.new_match(rules or "kyogi", seats, seed, voice, cards=cards, color=color,
                               reading=reading or None,
                               settings=PracticeSettings(simultaneous_ms=simultaneous))

    if host_mode and local.kind == "human":
        return _host_window(m, code or online.new_code(), port if port is not None
                            else online.DEFAULT_PORT, log_file, new_log=not resume,
                            device=device, claim=claim, fullscreen=fullscreen,
                            show_kimariji=show_kimariji, voice_spec=voice_spec, hints=hints,
                            memorize_s=60.0 * (memorize or 0.0))
    if host_mode:
        claim()  # held while hosting, as a match on one machine
        return _host(m, code or online.new_code(), port if port is not None
                     else online.DEFAULT_PORT, log_file, new_log=not resume,
                     device=device if sound else False, voice_spec=voice_spec,
                     memorize_s=60.0 * (memorize or 0.0))
    if any(s.kind == "human" for s in m.seats.values()):
        if as_json:
            raise KarutaError("--json needs --bot-vs-bot (a window match shows its result)")
        _play_in_window(m, log_file=log_file, hints=hints, device=device, fullscreen=fullscreen,
                   memorize=memorize, show_kimariji=show_kimariji, backend=backend,
                   new_log=not resume, claim=claim,
                   timing_details=timing_details_wanted(timing_details))
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
        backend: str = "sounddevice", on_event=None, new_log: bool = False, claim=None,
        timing_details: bool = False):
    """``karuta practice`` with a human seat: open the output (a missing device is one line,
    before any window and before anything is written), write a new log's deal (``new_log``),
    open the stats database, and play the match in the board window.  ``timing_details``:
    the window's frame rate, input polling and "get ready" figures at the end too."""
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
    from reader.cli import command_clock
    from reader.drills.stats import StatsDB

    with StatsDB() as db:
        sid = _stats_session(db, m, key, calib)
        w = BoardWindow(m, output, log_file=log_file, hints=hints, memorize_min=memorize,
                        calibration_ms=calib or 0.0, show_kimariji=show_kimariji,
                        fullscreen=fullscreen, on_event=on_event, db=db, session_id=sid,
                        clock=command_clock())
        w.run()
        w.record_stats()
    from reader.match import log as matchlog

    click.echo(matchlog.report(m.match))
    for line in w.end_lines()[3:]:
        click.echo(line)
    for p, skill in sorted(m.skill.items()):  # its form this match (reader.practice.bot)
        click.echo(f"bot {m.seats[p].level} ({p}) played this match like a {skill:.1f}")
    if timing_details:  # (a developer's figures: --timing-details)
        click.echo(w.stats())
        if w.ready_line() is not None:
            click.echo(w.ready_line())
    return m


def _stats_session(db, m, key: str, calib, **more) -> str:
    """A practice session in the stats database (``karuta stats`` learns from its takes)."""
    from reader.cli import command_clock

    return db.start_session("practice", command_clock().now(), {
        "rules": m.rules, "seats": {p: s.kind for p, s in m.seats.items()},
        "seed": m.extra.get("seed"), "device": key, "calibration_ms": calib, **more})


def _record_online(w) -> None:
    """This machine's player's takes and faults of an online match, into the stats database
    (the other player's are theirs)."""
    from reader.drills.calibrate import device_key
    from reader.drills.stats import StatsDB

    t = w.table
    with StatsDB() as db:
        t.db, t.session_id = db, _stats_session(db, w.m, device_key(t.output),
                                                t.calibration_ms, online=t.local)
        t.record_stats()


def _check_new_log(log_file, hold: bool = True) -> None:
    """A new online log: never over a file (``claim_log``), held while the match runs
    (``hold=False``: the check alone; a guest holds it once the host has welcomed it)."""
    if log_file is None:
        return
    from reader.cli import claim_log

    claim_log(log_file, "a practice log", new=True, hold=hold)


def _netplay():
    from reader.practice import netplay

    return netplay


def _sound_for(m, voice_spec, timeline_of, offset_of, device, wait: bool = True,
               start: bool = True):
    """The reading heard in sync, in a process of its own (``netsound.SoundProcess``),
    started (unless ``start`` is False: the window starts it); ``None`` for ``device`` False
    (a bot's seat without ``--sound``).  ``wait``: until it plays (else its ``error`` says
    later why not)."""
    if device is False:
        return None
    from reader.practice.netsound import SoundProcess

    s = SoundProcess(m.log_text(), online.plan_digest(m.plan), voice_spec, timeline_of,
                     offset_of, device=device)
    if start:
        s.start(wait=wait)
    return s


def _sound_line(s) -> None:
    if s is not None:
        s.stop()
        click.echo(f"audio: {s.underruns} underruns, {s.late} buffers without their speech "
                   f"in time, {s.cuts} starts heard too late"
                   + (f" (at worst {s.cut_ms} ms cut)" if s.cuts else ""))


def _host(m, code: str, port: int, log_file, new_log: bool, device=False,
          voice_spec=None, memorize_s: float = 0.0) -> None:
    """``--host``: serve the match until it is over; the log is saved after every read."""
    from reader.practice import headless
    from reader.match import log as matchlog

    if new_log and log_file is not None:
        headless.save(m, log_file)  # the deal is on disk before anyone joins

    def event(name, data):
        if name == "done":
            if log_file is not None:
                headless.save(m, log_file)
            click.echo(host.session.status)
        elif name in ("tries", "silent", "refused"):  # wrong codes, a silent link, bad touches
            warn(data)

    host = online.Host(m, code, on_event=event, memorize_s=memorize_s)

    def listening(p):
        click.echo(f"hosting on port {p}, code {code}: on the other machine run "
                   f"karuta practice --join THIS-MACHINE:{p} --code {code}")

    sound = _sound_for(m, voice_spec, lambda: host.timeline, lambda: 0.0, device)

    def own_sound(now):  # this machine's sound stalled or heard a start too late: said
        line = None if sound is None else host.local_sound(sound.underruns, sound.cut_ms)
        if line is not None:
            warn(line)

    try:
        _netplay().run(_netplay().run_host(host, port, on_listen=listening, warn=warn,
                                           on_tick=own_sound))
    finally:
        _sound_line(sound)
    click.echo(matchlog.report(m.match))
    _say_seed(m)


def _join(address, code: str, local, voice_spec, log_file, device=False) -> None:
    """``--join``: play the host's match (a bot in this seat: ``--as``)."""
    from reader.practice import headless
    from reader.match import log as matchlog

    build = _build_guest_match(voice_spec)

    def event(name, data):
        if name == "closed" and data is not None and data.result is not None:
            if log_file is not None:
                headless.save(guest.m, log_file)
            took = data.event.took
            click.echo(f"read {data.index + 1}: {data.poem} · "
                       + ({"A": "A took it", "B": "B took it",
                           "both": "simultaneous: to the owner"}.get(took, "nobody took it")))
        elif name == "warn":
            warn(f"the host says: {data}")
        elif name == "welcome" and guest.rejoins:
            warn(f"joined again: the match goes on from read {data.index + 1}")
        elif name == "welcome":
            _check_new_log(log_file)  # the link is up: the log is this karuta's now
        if name == "welcome" and sound[0] is None and device is not False:
            sound[0] = _sound_for(data, voice_spec, lambda: guest.timeline,
                                  lambda: guest.offset, device, wait=False)  # (in the loop)

    sound = [None]

    def status(now):  # the sound's stalls, told to the host (it says what it makes of them)
        s = sound[0]
        if s is not None and s.error is not None:
            raise s.error  # (the sound device would not open: one line, as on the host)
        return [] if s is None else guest.sound_status(s.underruns, s.cut_ms)

    guest = online.Guest(code, build, on_event=event)
    players = [status]
    if local.kind == "bot":
        bot = online.GuestBot(guest, local.level,
                              lambda m, seats: headless.resume_text(m.log_text(), "the match",
                                                                    m.voice, seats))
        players.append(bot.tick)
    try:
        _netplay().run(_netplay().run_guest(guest, address, players=players, warn=warn))
    finally:
        _sound_line(sound[0])
        _clock_line(guest)
    click.echo(matchlog.report(guest.m.match))


def _clock_line(guest) -> None:
    c = guest.clock
    if c.offset is not None:
        click.echo(f"clock: the host's minus this machine's {c.offset * 1000:+.3f} ms (best "
                   f"round trip {c.rtt * 1000:.1f} ms), {c.jumps} jumps")


def _build_guest_match(voice_spec):
    """``build`` for ``online.Guest``: the host's match from its log, the plan checked."""
    return lambda text, digest: online.match_of_log(text, digest, voice_spec)


def _window_ready(device=False):
    """Before anything is opened or written: a display, and unless ``device`` is False the
    sound device (one line if either is missing; the device is opened once the window is
    up)."""
    from audio.output.devices import resolve_device
    from reader.base.errors import DeviceError
    from reader.practice.window import NO_DISPLAY
    from reader.ui.window import display_available

    if not display_available():
        raise DeviceError(NO_DISPLAY)
    if device is not False:
        resolve_device(device)


def _calibration(sound) -> float:
    from reader.drills.calibrate import CalibrationStore, device_key

    key = device_key(sound)
    calib = CalibrationStore().offset_ms(key)
    if calib is None:
        warn(f"no calibration for {key}: reactions are uncalibrated (run `karuta calibrate`)")
    return calib or 0.0


def _wait_for(event, transport) -> None:
    """Until ``event`` is set or the transport ended (its error raised here, one line)."""
    while not event.wait(0.05):
        if transport.done.is_set():
            break
    if transport.error is not None:
        raise transport.error
    if not event.is_set():
        raise KarutaError("the link ended before the match began")


def _end_window(w, transport, sound) -> None:
    """The window is closed: the transport stopped, its error said (one line), else the
    report."""
    from reader.match import log as matchlog

    transport.stop()
    _sound_line(sound)
    _record_online(w)
    error = transport.error or getattr(sound, "error", None)
    if error is not None and not w.over:
        if w.table.log_file is not None and isinstance(error, KarutaError):
            raise type(error)(f"{error} (the match so far is kept in {w.table.log_file})")
        raise error
    click.echo(matchlog.report(w.m.match))
    for line in w.end_lines()[3:]:
        click.echo(line)
    click.echo(w.stats())


def _host_window(m, code: str, port: int, log_file, *, new_log: bool, device, claim,
                 fullscreen: bool, show_kimariji: bool, voice_spec=None,
                 hints: bool = False, memorize_s: float = 0.0) -> None:
    """``--host`` with this machine's player in the board window."""
    import threading

    from reader.practice import headless
    from reader.practice.netwindow import Locked, OnlineWindow, Transport

    _window_ready(device)
    host = online.Host(m, code, ready=False,  # (ready once the window is open)
                       memorize_s=memorize_s)
    sound = _sound_for(m, voice_spec, lambda: host.timeline, lambda: 0.0, device, start=False)
    transport = None
    try:
        claim()  # the log is held from now on
        if new_log and log_file is not None:
            headless.save(m, log_file)  # the deal is on disk before anyone joins
        lock = threading.Lock()
        listening = threading.Event()

        def listen(p):
            click.echo(f"hosting on port {p}, code {code}: on the other machine run "
                       f"karuta practice --join THIS-MACHINE:{p} --code {code}")
            listening.set()

        net = _netplay()
        transport = Transport(lambda: net.run_host(Locked(host, lock), port, on_listen=listen,
                                                   warn=warn))
        _wait_for(listening, transport)
        w = OnlineWindow(host, host.local, lock, sound, transport=transport, say=warn,
                         log_file=log_file, calibrate=_calibration, hints=hints,
                         show_kimariji=show_kimariji, fullscreen=fullscreen)
        w.run()
    except BaseException:
        if transport is not None:
            transport.stop()
        sound.stop()
        raise
    _end_window(w, transport, sound)
    _say_seed(m)


def _join_window(address, code: str, voice_spec, log_file, *, device, fullscreen: bool,
                 show_kimariji: bool, hints: bool = False) -> None:
    """``--join`` with this machine's player in the board window."""
    import threading

    from reader.practice.netwindow import Locked, OnlineWindow, Transport

    _window_ready()  # (the sound device once the host has said yes: a refused join is that)
    welcomed = threading.Event()
    guest = online.Guest(code, _build_guest_match(voice_spec),
                         on_event=lambda name, data: welcomed.set() if name == "welcome" else None)
    guest.ready = False  # (ready once the window is open)
    lock = threading.Lock()
    window = [None]
    net = _netplay()
    transport = Transport(lambda: net.run_guest(
        Locked(guest, lock), address, warn=warn,
        players=[lambda now: window[0].table.drain(now) if window[0] is not None else []]))
    sound = None
    try:
        _wait_for(welcomed, transport)
        _window_ready(device)
        _check_new_log(log_file)  # the link is up: the log is this karuta's now
        with lock:
            m = guest.m
            if log_file is not None:
                from reader.practice import headless

                headless.save(m, log_file)
        sound = _sound_for(m, voice_spec, lambda: guest.timeline, lambda: guest.offset,
                           device, start=False)
        with lock:
            w = window[0] = OnlineWindow(guest, guest.me, lock, sound, transport=transport,
                                         say=warn, hints=hints,
                                         log_file=log_file, calibrate=_calibration,
                                         show_kimariji=show_kimariji, fullscreen=fullscreen)
        w.run()
    except BaseException:
        transport.stop()
        if sound is not None:
            sound.stop()
        raise
    _end_window(w, transport, sound)
    _clock_line(guest)


def _given_settings(deal: dict, **more) -> list[str]:
    """The options of ``deal`` (and ``more``) the user gave, as typed: a match whose settings
    come from elsewhere (the host, the log) names exactly these in its refusal."""
    names = {"joka": "--joka/--no-joka"}
    return [names.get(k, "--" + k.replace("_", "-"))
            for k, v in {**deal, **more}.items() if v is not None]


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
