"""Wiring of ``karuta practice``: a match made or resumed, then played in one of its modes —
two bots with no window (``play_bots``), a player at the board window (``play_window``), an
online host with a bot in its seat (``host``) or a player at its window (``host_window``),
a guest likewise (``join``, ``join_window``).  Options in (the CLI has checked how they go
together: ``reader.cli.practice``), lines out through ``Env``.

Like ``reader.club.run``: no click here, and nothing of the drills' room — the CLI hands in
the calibration and the stats database (``Env``).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reader.base.errors import KarutaError
from reader.practice import online


@dataclass(frozen=True)
class Env:
    """What the modes need from the command around them.

    ``echo(line)``: a line on stdout; ``warn(line)``: a ``karuta: ...`` line on stderr;
    ``aside(line)``: a plain line on stderr;
    ``claim_log(path, kind, new=, hold=)``: the CLI's one-karuta-per-log claim;
    ``clock``: the command's clock; ``calibration(output) -> (device key, offset ms or None)``;
    ``stats()``: the stats database, as a context manager."""

    echo: Callable[[str], None]
    warn: Callable[[str], None]
    aside: Callable[[str], None]
    claim_log: Callable[..., None]
    clock: Any
    calibration: Callable[[Any], tuple[str, float | None]]
    stats: Callable[[], Any]


# --- the match --------------------------------------------------------------------------------

def new_or_resumed(env: Env, *, rules: str, seats: dict | None, seed: int | None, voice_spec,
                   cards, color, reading: dict, simultaneous: float, log_file, resume: bool,
                   tomo: bool = False):
    """The match to play: the one in ``log_file`` (``resume``; ``seats`` replace the logged
    seats when given), else a new one (a seed picked when none is given).  The log is checked
    (never a new one over a file; one karuta per log) before the voice is made."""
    from reader.base.seeds import pick_seed
    from reader.practice import headless
    from reader.practice.match import PracticeSettings
    from reader.reading.voices import make_voice

    if log_file is not None:  # now; held once the sound device is open (window) or before a save
        env.claim_log(log_file, "a practice log", new=not resume, hold=False)
    voice = make_voice(voice_spec)
    if resume:
        return headless.resume(log_file, voice, seats)
    return headless.new_match(rules, seats, pick_seed(seed), voice, cards=cards, color=color,
                              reading=reading or None, tomo=tomo,
                              settings=PracticeSettings(simultaneous_ms=simultaneous))


def has_player(m) -> bool:
    """A human seat: the match is played at the board window."""
    return any(s.kind == "human" for s in m.seats.values())


def say_seed(env: Env, m) -> None:
    """After the match (never before an error line): the seed that repeats it."""
    seed = m.extra.get("seed")
    if seed is not None:
        env.echo(f"seed {seed}: the same deal, order and bots again with --seed {seed}")


def _claim(env: Env, log_file, *, new: bool, hold: bool = True) -> None:
    if log_file is not None:
        env.claim_log(log_file, "a practice log", new=new, hold=hold)


# --- two bots, no window ----------------------------------------------------------------------

def play_bots(env: Env, m, *, log_file, resume: bool, as_json: bool, again: str) -> None:
    """Bots in every seat: the whole match with no window and no sound, the log saved after
    every read; the report (or ``--json``'s summary) at the end.  ``again``: the options that
    continue it after a Ctrl-C (said then)."""
    import json

    from reader.match import log as matchlog
    from reader.practice import headless

    _claim(env, log_file, new=not resume)

    def after(match, closed):
        if log_file is not None:
            headless.save(match, log_file)

    try:
        if log_file is not None and not resume:
            headless.save(m, log_file)  # the deal is on disk before the first read
        headless.play(m, on_read=after)
    except KeyboardInterrupt:  # (Ctrl-C, SIGTERM, SIGHUP) every read before it is saved
        if log_file is not None and os.path.exists(log_file):
            env.aside(f"log saved to {log_file}; continue with: karuta practice --resume "
                      f"--log {log_file} {again}".rstrip())
        raise
    if as_json:
        env.echo(json.dumps(matchlog.summary(m.match), ensure_ascii=False))
    else:
        env.echo(matchlog.report(m.match))
        say_seed(env, m)


# --- a player at the board window -------------------------------------------------------------

def play_window(env: Env, m, *, log_file=None, hints: bool = False, device=None,
                fullscreen: bool = False, memorize: float | None = None,
                show_kimariji: bool = False, backend: str = "sounddevice", on_event=None,
                new_log: bool = False, timing_details: bool = False):
    """A human seat: open the output (a missing device is one line, before any window and
    before anything is written), write a new log's deal (``new_log``), open the stats
    database, and play the match in the board window.  ``timing_details``: the window's
    frame rate, input polling and "get ready" figures at the end too."""
    from reader.base.errors import DeviceError
    from reader.match import log as matchlog
    from reader.practice.window import NO_DISPLAY, BoardWindow
    from reader.reading.player import open_output
    from reader.ui.window import display_available

    if memorize is not None and not 0 <= memorize <= 120:
        raise KarutaError(f"--memorize {memorize:g} is out of range: 0-120 minutes")
    if not display_available():
        raise DeviceError(NO_DISPLAY)
    output = open_output(backend, device, m.plan.sample_rate)
    try:
        _claim(env, log_file, new=new_log)  # the log is held from now on (``claim_log``)
        if new_log and log_file is not None:
            from reader.practice import headless

            headless.save(m, log_file)  # the deal is on disk before the first read
    except KarutaError:
        output.stop()
        raise
    key, calib = env.calibration(output)
    if calib is None:
        env.warn(f"no calibration for {key}: reactions are uncalibrated (run `karuta calibrate`)")
    with env.stats() as db:
        sid = _stats_session(env, db, m, key, calib)
        w = BoardWindow(m, output, log_file=log_file, hints=hints, memorize_min=memorize,
                        calibration_ms=calib or 0.0, show_kimariji=show_kimariji,
                        fullscreen=fullscreen, on_event=on_event, db=db, session_id=sid,
                        clock=env.clock)
        w.run()
        w.record_stats()
    env.echo(matchlog.report(m.match))
    for line in w.end_lines()[3:]:
        env.echo(line)
    for p, skill in sorted(m.skill.items()):  # its form this match (reader.practice.bot)
        env.echo(f"bot {m.seats[p].level} ({p}) played this match like a {skill:.1f}")
    if timing_details:  # (a developer's figures: --timing-details)
        env.echo(w.stats())
        if w.ready_line() is not None:
            env.echo(w.ready_line())
    say_seed(env, m)
    return m


def _stats_session(env: Env, db, m, key: str, calib, **more) -> str:
    """A practice session in the stats database (``karuta stats`` learns from its takes)."""
    return db.start_session("practice", env.clock.now(), {
        "rules": m.rules, "seats": {p: s.kind for p, s in m.seats.items()},
        "seed": m.extra.get("seed"), "device": key, "calibration_ms": calib, **more})


def _calibration(env: Env, output) -> float:
    key, calib = env.calibration(output)
    if calib is None:
        env.warn(f"no calibration for {key}: reactions are uncalibrated (run `karuta calibrate`)")
    return calib or 0.0


def _record_online(env: Env, w) -> None:
    """This machine's player's takes and faults of an online match, into the stats database
    (the other player's are theirs)."""
    t = w.table
    with env.stats() as db:
        key, _ = env.calibration(t.output)
        t.db, t.session_id = db, _stats_session(env, db, w.m, key, t.calibration_ms,
                                                online=t.local)
        t.record_stats()


def _record_web(env: Env, board) -> None:
    """A page's match into the stats database, each player under their name; the takes of
    an uncalibrated device said (they are kept out of the reaction figures)."""
    from reader.practice.record import timed

    if not any(j.player in board.here for c in board.m.closed for j in c.touches):
        return
    with env.stats() as db:
        n = board.record_players(db, env.clock.now())
    untimed = sum(1 for c in board.m.closed for j in c.touches
                  if j.player in board.here and j.verdict == "take" and not timed(j))
    env.echo(f"karuta stats: {n} touch{'es' if n != 1 else ''} filed, each player's under "
             "their name" + (f" ({untimed} take{'s' if untimed != 1 else ''} of an "
                             "uncalibrated device: no reaction time)" if untimed else ""))


# --- online -----------------------------------------------------------------------------------

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


def _sound_line(env: Env, s) -> None:
    if s is not None:
        s.stop()
        env.echo(f"audio: {s.underruns} underruns, {s.late} buffers without their speech "
                 f"in time, {s.cuts} starts heard too late"
                 + (f" (at worst {s.cut_ms} ms cut)" if s.cuts else ""))


def _clock_line(env: Env, guest) -> None:
    c = guest.clock
    if c.offset is not None:
        env.echo(f"clock: the host's minus this machine's {c.offset * 1000:+.3f} ms (best "
                 f"round trip {c.rtt * 1000:.1f} ms), {c.jumps} jumps")


def _build_guest_match(voice_spec):
    """``build`` for ``online.Guest``: the host's match from its log, the plan checked."""
    return lambda text, digest: online.match_of_log(text, digest, voice_spec)


def _listening_line(port: int, code: str) -> str:
    return (f"hosting on port {port}, code {code}: on the other machine run "
            f"karuta practice --join THIS-MACHINE:{port} --code {code}")


def host(env: Env, m, code: str, port: int, log_file, *, new_log: bool, device=False,
         voice_spec=None, memorize_s: float = 0.0, watchers: int = 0) -> None:
    """``--host --as bot:N``: serve the match until it is over; the log is saved after every
    read."""
    from reader.match import log as matchlog
    from reader.practice import headless

    _claim(env, log_file, new=new_log)  # held while hosting, as a match on one machine
    if new_log and log_file is not None:
        headless.save(m, log_file)  # the deal is on disk before anyone joins

    def event(name, data):
        if name == "done":
            if log_file is not None:
                headless.save(m, log_file)
            env.echo(the_host.session.status)
        elif name in ("tries", "silent", "refused"):  # wrong codes, a silent link, bad touches
            env.warn(data)

    the_host = online.Host(m, code, on_event=event, memorize_s=memorize_s, watchers=watchers)
    sound = _sound_for(m, voice_spec, lambda: the_host.timeline, lambda: 0.0, device)

    def own_sound(now):  # this machine's sound stalled or heard a start too late: said
        line = None if sound is None else the_host.local_sound(sound.underruns, sound.cut_ms)
        if line is not None:
            env.warn(line)

    try:
        _netplay().run(_netplay().run_host(the_host, port,
                                           on_listen=lambda p: env.echo(_listening_line(p, code)),
                                           warn=env.warn, on_tick=own_sound))
    finally:
        _sound_line(env, sound)
    env.echo(matchlog.report(m.match))
    say_seed(env, m)


def join(env: Env, address, code: str, local, voice_spec, log_file, device=False) -> None:
    """``--join --as bot:N``: a bot plays the host's match in this machine's seat; ``local``
    None: this machine watches (``--watch`` with no window: each read's result printed)."""
    from reader.match import log as matchlog
    from reader.practice import headless

    _claim(env, log_file, new=True, hold=False)  # (held once the link is up)

    def event(name, data):
        if name == "closed" and data is not None and data.result is not None:
            if log_file is not None:
                headless.save(guest.m, log_file)
            took = data.event.took
            env.echo(f"read {data.index + 1}: {data.poem} · "
                     + ({"A": "A took it", "B": "B took it",
                         "both": "simultaneous: to the owner"}.get(took, "nobody took it")))
        elif name == "warn":
            env.warn(f"the host says: {data}")
        elif name == "welcome" and guest.rejoins:
            env.warn(f"joined again: the match goes on from read {data.index + 1}")
        elif name == "welcome":
            _claim(env, log_file, new=True)  # the link is up: the log is this karuta's now
        if name == "welcome" and sound[0] is None and device is not False:
            sound[0] = _sound_for(data, voice_spec, lambda: guest.timeline,
                                  lambda: guest.offset, device, wait=False)  # (in the loop)

    sound = [None]

    def status(now):  # the sound's stalls, told to the host (it says what it makes of them)
        s = sound[0]
        if s is not None and s.error is not None:
            raise s.error  # (the sound device would not open: one line, as on the host)
        return [] if s is None else guest.sound_status(s.underruns, s.cut_ms)

    guest = online.Guest(code, _build_guest_match(voice_spec), on_event=event,
                         watch=local is None)
    players = [status]
    if local is not None:
        bot = online.GuestBot(guest, local.level,
                              lambda m, seats: headless.resume_text(m.log_text(), "the match",
                                                                    m.voice, seats))
        players.append(bot.tick)
    try:
        _netplay().run(_netplay().run_guest(guest, address, players=players, warn=env.warn))
    finally:
        _sound_line(env, sound[0])
        _clock_line(env, guest)
    env.echo(matchlog.report(guest.m.match))


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


def _wait_for(event, transport) -> None:
    """Until ``event`` is set or the transport ended (its error raised here, one line)."""
    while not event.wait(0.05):
        if transport.done.is_set():
            break
    if transport.error is not None:
        raise transport.error
    if not event.is_set():
        raise KarutaError("the link ended before the match began")


def _end_window(env: Env, w, transport, sound) -> None:
    """The window is closed: the transport stopped, its error said (one line), else the
    report."""
    from reader.match import log as matchlog

    transport.stop()
    _sound_line(env, sound)
    _record_online(env, w)
    error = transport.error or getattr(sound, "error", None)
    if error is not None and not w.over:
        if w.table.log_file is not None and isinstance(error, KarutaError):
            raise type(error)(f"{error} (the match so far is kept in {w.table.log_file})")
        raise error
    env.echo(matchlog.report(w.m.match))
    for line in w.end_lines()[3:]:
        env.echo(line)
    env.echo(w.stats())


def host_window(env: Env, m, code: str, port: int, log_file, *, new_log: bool, device,
                fullscreen: bool, show_kimariji: bool, voice_spec=None,
                hints: bool = False, memorize_s: float = 0.0, watchers: int = 0) -> None:
    """``--host`` with this machine's player in the board window."""
    import threading

    from reader.practice import headless
    from reader.practice.netwindow import Locked, OnlineWindow, Transport

    _window_ready(device)
    the_host = online.Host(m, code, ready=False,  # (ready once the window is open)
                           memorize_s=memorize_s, watchers=watchers)
    sound = _sound_for(m, voice_spec, lambda: the_host.timeline, lambda: 0.0, device,
                       start=False)
    transport = None
    try:
        _claim(env, log_file, new=new_log)  # the log is held from now on
        if new_log and log_file is not None:
            headless.save(m, log_file)  # the deal is on disk before anyone joins
        lock = threading.Lock()
        listening = threading.Event()

        def listen(p):
            env.echo(_listening_line(p, code))
            listening.set()

        net = _netplay()
        transport = Transport(lambda: net.run_host(Locked(the_host, lock), port,
                                                   on_listen=listen, warn=env.warn))
        _wait_for(listening, transport)
        w = OnlineWindow(the_host, the_host.local, lock, sound, transport=transport,
                         say=env.warn, log_file=log_file,
                         calibrate=lambda output: _calibration(env, output), hints=hints,
                         show_kimariji=show_kimariji, fullscreen=fullscreen)
        w.run()
    except BaseException:
        if transport is not None:
            transport.stop()
        sound.stop()
        raise
    _end_window(env, w, transport, sound)
    say_seed(env, m)


def join_window(env: Env, address, code: str, voice_spec, log_file, *, device,
                fullscreen: bool, show_kimariji: bool, hints: bool = False,
                watch: bool = False) -> None:
    """``--join`` with this machine's player in the board window (``watch``: the board of a
    match this machine watches, no seat)."""
    import threading

    from reader.practice.netwindow import Locked, OnlineWindow, Transport

    _claim(env, log_file, new=True, hold=False)  # (held once the link is up: a refused join
    _window_ready()  # leaves nothing beside the log's name; the sound device once the host
    welcomed = threading.Event()  # has said yes: a refused join is that)
    guest = online.Guest(code, _build_guest_match(voice_spec), watch=watch,
                         on_event=lambda name, data: welcomed.set() if name == "welcome" else None)
    guest.ready = False  # (ready once the window is open)
    lock = threading.Lock()
    window = [None]
    net = _netplay()
    transport = Transport(lambda: net.run_guest(
        Locked(guest, lock), address, warn=env.warn,
        players=[lambda now: window[0].table.drain(now) if window[0] is not None else []]))
    sound = None
    try:
        _wait_for(welcomed, transport)
        _window_ready(device)
        _claim(env, log_file, new=True)  # the link is up: the log is this karuta's now
        with lock:
            m = guest.m
            if log_file is not None:
                from reader.practice import headless

                headless.save(m, log_file)
        sound = _sound_for(m, voice_spec, lambda: guest.timeline, lambda: guest.offset,
                           device, start=False)
        with lock:
            w = window[0] = OnlineWindow(guest, guest.me, lock, sound, transport=transport,
                                         say=env.warn, hints=hints, log_file=log_file,
                                         calibrate=lambda output: _calibration(env, output),
                                         show_kimariji=show_kimariji, fullscreen=fullscreen)
        w.run()
    except BaseException:
        transport.stop()
        if sound is not None:
            sound.stop()
        raise
    _end_window(env, w, transport, sound)
    _clock_line(env, guest)


def play_web(env: Env, m, *, log_file, new_log: bool, address: str | None, port: int | None,
             store=None, devices: bool = False, memorize: float | None = None,
             hints: bool = False):
    """``--web``: the match (seat A: the player at a phone's or tablet's page, B: a bot, or a
    second player at the same tablet's far half) served
    to one browser page over the LAN (``reader.web``): the address and a QR code printed, the
    page plays the reading and takes the touches, this machine judges through the practice
    session and writes the log after every read; at the end (or Ctrl-C) each player's takes
    go into the stats database under their name.  ``store``: the devices' calibrations (the
    pages' tap-along keeps them); ``devices``: each player at a page of their own (two
    phones or tablets: ``--vs device``); more pages watch.  ``new_log`` False: a resumed
    match (``--resume``), played on from the 間 before its current read.  ``memorize``:
    minutes (``--memorize``; default the rules'), counted down on the pages, the cards
    dragged meanwhile; ``hints``: ``--hints``."""
    from reader.match import log as matchlog
    from reader.practice.session import memorize_minutes
    from reader.web.board import WebBoard
    from reader.web.server import DEFAULT_PORT, qr_text, serve

    if m.seats["A"].kind != "human" or m.seats["B"].kind not in ("bot", "human"):
        raise KarutaError(("" if new_log else f"{log_file}: its seats are "
                           f"{m.seats['A'].kind} and {m.seats['B'].kind}; ") +
                          "--web plays a player at the page against a bot or a second player "
                          "at the same tablet: --vs bot:LEVEL or --vs human")
    if m.current() is None and m.owed_send() is None:
        raise KarutaError(f"{log_file}: the match is over: nothing to resume")
    _claim(env, log_file, new=new_log)
    if new_log and log_file is not None:
        from reader.practice import headless

        headless.save(m, log_file)  # the deal is on disk before the first read
    board = WebBoard(m, m.voice, online.new_code(), devices=devices, log_file=log_file,
                     store=store, clock=env.clock, echo=env.echo, hints=hints,
                     memorize_s=60.0 * memorize_minutes(m.game, m.index, memorize))
    import threading

    # the cards' images drawn while the device joins (each is drawn once; the page asks for
    # them as soon as it draws the board: scripts/bench_web_cards.py times it)
    threading.Thread(target=board.images.render_all, name="karuta-cards", daemon=True).start()
    b = m.seats["B"]
    env.echo(f"practice on the web · {m.game.name} · " + (
        f"bot {b.level}" if b.kind == "bot" else "a device for each player" if devices
        else "two players at one tablet") + (
        f" · resumed at read {m.index + 1}" if m.index > 0 else ""))

    def show(url):
        env.echo(qr_text(url))
        env.echo(f"open on the phone or tablet (same Wi-Fi): {url}")
        if devices:
            env.echo("each player opens it on a phone or tablet of their own (the first two "
                     "take seats A and B); more pages watch")
        env.echo("Ctrl-C stops (the log is saved after every read: --resume goes on)")

    try:
        serve(board, address or "0.0.0.0", DEFAULT_PORT if port is None else port,
              clock=env.clock, echo=env.echo, on_url=show, show_host=address)
    finally:
        board.close()
        _record_web(env, board)  # (Ctrl-C too: the reads played are filed; --resume files the rest)
    if board.session.over:
        env.echo(matchlog.report(m.match))
    say_seed(env, m)
    return m
