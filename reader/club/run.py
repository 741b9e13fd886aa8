"""Wiring of the club session for ``karuta read --live / --window / --resume / --show-log``:
options and the saved session in, a ``ClubSession`` on an output, a front end, lines out."""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import DeviceError, KarutaError
from reader.base.seeds import pick_seed
from reader.club.session import ClubSession, format_log
from reader.club.store import (SessionError, SessionFile, default_session_path, keep_previous,
                               load_session)
from reader.club.terminal import run_terminal
from reader.club.timer import parse_signals
from reader.reading.settings import settings_from_dict
from reader.reading.voices import build_reading
from reader.ui.keys import DEFAULT_KEYS, KeyBindings


def open_club(reading: tuple | None, *, resume: bool, session_path, memorize: float | None,
              signals: str | None, auto: bool, device, backend: str, window: bool,
              echo: Callable[[str], None], bindings: KeyBindings | None = None,
              on_built: Callable | None = None, claim: Callable | None = None,
              clock: Clock = SYSTEM_CLOCK) -> int:
    """Run a club session from the CLI; returns the number of cards read.  ``reading``:
    (settings, seed or None, voice spec) from the command line (with ``resume`` the saved
    session's settings and seed are used, and its voice unless ``--voice`` names one).  ``on_built(plan, voice)`` runs once both exist.  ``bindings``: the
    next/back keys (``--next-keys`` / ``--back-keys``), saved with the session; None: the
    saved session's keys on ``--resume``, else the default keys.  ``claim()`` runs once the
    sound device is open, before the session is written (the CLI holds the session there).
    ``clock``: the session's (its memorisation timer, its dates)."""
    if window:
        from reader.ui.window import require_display

        require_display()
    if resume:
        sf, saved = load_session(session_path)
        # the session's voice, not today's default; --voice given now wins
        given_voice = reading[2] if reading is not None else None
        settings, seed, voice_spec = (settings_from_dict(saved["reading"]), saved["seed"],
                                      given_voice or saved.get("voice_spec") or saved.get("voice"))
        position, log, started = saved["position"], saved["log"], saved.get("started")
        auto = bool(saved.get("auto", auto))
        if bindings is None and saved.get("keys") is not None:
            bindings = KeyBindings.from_dict(saved["keys"])  # (checked when loaded)
    else:
        sf = SessionFile(session_path or default_session_path())
        position, log, started = 0, [], None
        settings, seed, voice_spec = reading
        seed = pick_seed(seed)  # fixed now: the session must rebuild the same order
    from reader.reading.player import open_output

    try:
        plan, voice = build_reading(settings, seed, voice_spec)
    except KarutaError as e:
        if not resume:
            raise
        raise SessionError(f"session {sf.path}: {e}; it was left as it is") from None
    if on_built is not None:
        on_built(plan, voice)
    if resume and list(plan.order) != list(saved["order"]):
        raise SessionError(f"session {sf.path}: the order rebuilt from seed {saved['seed']} does not "
                           "match the saved one (another karuta version?); it was left as it is")
    bindings = DEFAULT_KEYS if bindings is None else bindings
    if memorize is None:
        from reader.reading.settings import reading_of

        memorize = 0.0 if resume else reading_of(plan.rules).memorize_min
    if memorize < 0:
        raise KarutaError("--memorize must not be negative")
    signals_s = parse_signals(signals, memorize) if memorize > 0 else ()
    output = open_output(backend, device, plan.sample_rate)  # before the last session is moved
    if claim is not None:
        try:
            claim()
        except BaseException:
            output.stop()
            raise
    message = ""
    if not resume and sf.path.exists():
        aside = keep_previous(sf.path)
        if aside:  # said, not silent: the unfinished one is there to go back to
            echo(aside)
            message = "the last session was set aside: karuta read --list-sessions"
    if resume:
        message = (f"resuming at card {position + 1}/{len(plan.order)}" if position < len(plan.order)
                   else f"this session is finished: all {len(plan.order)} cards were read")
        echo(message)
    session = ClubSession(plan, voice, output, voice_spec=voice_spec, session=sf, auto=auto,
                          memorize_s=memorize * 60.0, signals_s=signals_s, position=position,
                          log=log, started=started, message=message,
                          keys=None if bindings == DEFAULT_KEYS else bindings.to_dict(),
                          echo=None if (not window and sys.stdout.isatty()) else echo,
                          clock=clock)
    echo(f"{plan.rules} reading · {len(plan.order)} cards · seed {plan.seed} · session {sf.path}")
    if window:
        from reader.club.window import run_window

        run_window(session, bindings=bindings)
    else:
        run_terminal(session, bindings=bindings)
    say_the_end(session, output, echo)
    return session.position


def say_the_end(session: ClubSession, output, echo: Callable[[str], None]) -> None:
    """What a club reading prints as it ends: the read log, where it stopped, the audio's
    line (none about underruns when the reader quit: ``q`` or Ctrl-C cut the sound on
    purpose).  A device lost mid-reading is one ``DeviceError`` after the log."""
    from audio.output import underrun_line

    for line in format_log(session.log, session.total, session.plan.seed):
        echo(line)
    if session.device_lost and session.phase != "finished":
        raise DeviceError(f"{session.device_lost}; stopped at card "
                          f"{min(session.position + 1, session.total)}/{session.total} (saved): "
                          f"`karuta read --resume` continues")
    if session.phase == "finished":
        echo(f"finished: {session.position} of {session.total} cards read")
    else:
        echo(f"stopped at card {min(session.position + 1, session.total)}/{session.total} "
             f"(saved): `karuta read --resume` continues")
    audio = underrun_line(output, stopped=session.phase == "quit")
    if audio:
        echo(audio)


def list_sessions(session_path, echo: Callable[[str], None]) -> None:
    """The session and those set aside beside it, one line each, newest first, with the
    command that resumes one."""
    from reader.club.store import describe_session, set_aside_sessions

    path = Path(session_path) if session_path else default_session_path()
    found = ([path] if path.is_file() else []) + set_aside_sessions(path)
    if not found:
        echo(f"no saved sessions beside {path}")
        return
    for p in found:
        echo(f"{p}: {describe_session(p)}")
    echo("continue one with: karuta read --resume --session PATH")


def show_log(session_path, echo: Callable[[str], None]) -> None:
    sf, saved = load_session(session_path)
    n = len(saved["order"])
    state = "finished" if saved["position"] >= n else f"next card {saved['position'] + 1}/{n}"
    echo(f"session {sf.path}: {saved.get('rules', '?')}, seed {saved['seed']}, {state}, "
         f"started {saved.get('started', '?')}")
    for line in format_log(saved["log"], n):
        echo(line)
