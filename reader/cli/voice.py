"""``karuta voice``: list, add, check and choose voices (built-in and recorded packs).

Thin click layer over ``audio.pack``; heavy imports happen inside the commands.
"""
from __future__ import annotations

import click

from reader.base.errors import KarutaError
from reader.cli.bounds import finite_range


@click.group("voice")
def voice():
    """Voices: the built-in synthesized voice, and packs of a reader's recordings.

    \b
    Examples:
      karuta voice add ~/wasuramoti/inaba     # import a folder of recordings
      karuta voice check inaba                # what is missing or wrong in it
      karuta voice use inaba                  # read with it from now on
      karuta read --voice synth               # or choose per reading
    """


@voice.command("list")
def list_cmd():
    """List the voices: built-in ones and imported packs (* = the default)."""
    from audio.pack import BUILTIN, VoicePack, default_voice_name, list_packs

    default = default_voice_name() or "synth"
    rows = [("", "name", "clips", "reader", "source")]
    builtin_desc = {"synth": "built-in synthesized voice", "tone": "test tones (no speech)"}
    for b in BUILTIN:
        rows.append(("*" if b == default else "", b, "-", "", builtin_desc[b]))
    for p in list_packs():
        if isinstance(p, VoicePack):
            n = len(p.clip_keys())
            rows.append(("*" if p.name == default else "", p.name, f"{n}/202", p.reader,
                         p.source or p.meta.get("layout", "")))
        else:
            rows.append(("", p.name, "?", "", "damaged: add it again"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        click.echo("  ".join(f"{c:<{w}}" for c, w in zip(r, widths)).rstrip())


@voice.command("add")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--name", help="Pack name (default: from voice.toml, else the reader's name).")
@click.option("--no-align", is_flag=True, help="Skip the mora alignment (timelines are proportional).")
@click.option("--replace", is_flag=True,
              help="Replace an installed pack of the same name that came from another folder.")
def add_cmd(path, name, no_align, replace):
    """Import a folder of recordings as a voice pack.

    \b
    Layouts: <reader>/<reader>_NNN_1.ogg and _2 (Wasuramoti), NNN_1.mp3 and NNN_2.mp3
    (karuta-tools), name_000.mp3 ... name_100.mp3 (one file per poem, split at the pause
    where the alignment of the poem ends the 上の句).
    NNN 000 is the jo-ka.  Formats: wav, flac, ogg, opus, mp3, m4a/aac (ffmpeg).
    Adding a folder again re-imports it (after editing its voice.toml, say).
    """
    from audio.pack import format_problems, import_pack
    from reader.cli.progress import LineProgress

    with LineProgress("importing", "files") as bar:
        pack = import_pack(path, name=name, reference=False if no_align else None,
                           progress=bar.update, replace=replace)
    problems = pack.problems()
    n = len(pack.clip_keys())
    click.echo(f"added voice {pack.name!r}: {n} of 202 clips ({pack.meta.get('layout')} layout) in {pack.folder}")
    for line in pack.notes():
        click.echo(line)
    if problems:
        click.echo(format_problems(problems))
        click.echo(f"voice {pack.name!r}: {tally(problems)}: 'karuta voice check "
                   f"{pack.name}' checks it again")
    click.echo(f"use it with: karuta voice use {pack.name}   (or --voice {pack.name})")


def tally(problems) -> str:
    """What a list of problems holds, counted the way ``voice check`` judges it: "5 listed:
    1 problem, 4 notes (not aligned, low confidence: they do not fail the check)" (``voice
    add`` listed 5 rows and ``voice check`` then said "has 1 problem")."""
    bad = [p for p in problems if p.kind not in INFO_ONLY]
    notes = [p for p in problems if p.kind in INFO_ONLY]
    parts = [f"{len(bad)} problem{'' if len(bad) == 1 else 's'}"]
    if notes:
        kinds = ", ".join(dict.fromkeys(p.kind for p in notes))
        parts.append(f"{len(notes)} note{'' if len(notes) == 1 else 's'} ({kinds}: "
                     f"{'it does' if len(notes) == 1 else 'they do'} not fail the check)")
    return f"{len(problems)} listed: " + ", ".join(parts)


@voice.command("check")
@click.argument("spec", required=False, metavar="[NAME|PATH]")
def check_cmd(spec):
    """Report missing, unreadable, silent, clipped, too short/long clips and unsure timelines.

    NAME is an imported pack (default: the current voice), PATH a pack folder or a folder of
    recordings (checked without installing it).
    """
    from audio.pack import BUILTIN, check_pack, default_voice_name, format_problems

    if spec is None:
        spec = default_voice_name()
        if spec is None or spec in BUILTIN:
            raise KarutaError("no voice pack to check: name one (karuta voice check NAME|PATH)")
    if spec in BUILTIN:
        raise KarutaError(f"{spec!r} is a built-in voice, not a pack: nothing to check")
    pack, problems = check_pack(spec)
    n = len(pack.clip_keys())
    for line in pack.notes():
        click.echo(line)
    if problems:
        click.echo(format_problems(problems))
    for line in _swapped_lines(pack):
        click.echo(line)
    bad = [p for p in problems if p.kind not in INFO_ONLY]
    n -= len({p.clip for p in bad if p.kind in ("damaged", "missing") and pack.has(*_clip_key(p.clip))})
    click.echo(f"voice {pack.name!r}: {n} of 202 clips usable"
               + (f"; {tally(problems)}" if problems else ", no problems"))
    if bad:  # a pack with problems is not a pass (scripts can test the exit status)
        notes = len(problems) - len(bad)
        raise KarutaError(f"voice {pack.name!r} has {len(bad)} problem"
                          f"{'' if len(bad) == 1 else 's'} (listed above"
                          + ((f"; the other {notes} rows are notes)" if notes > 1 else
                              "; the other row is a note)") if notes else ")"))


def _swapped_lines(pack) -> list[str]:
    """"003 sounds like poem 4 ..." for each clip whose timeline fits a neighbouring poem's
    text clearly better than its own (found on import: ``audio.align.sounds_like``)."""
    out = []
    for key, part in pack.clip_keys():
        t = pack.timeline(key, part) if key.isdigit() else None
        if t is not None and t.sounds_like:
            out.append(f"{int(key):03d} ({'上の句' if part == 'kami' else '下の句'}) sounds like poem "
                       f"{t.sounds_like}: are the files swapped or misnumbered?")
    return out


#: problems ``voice check`` lists without failing: a choice made on import, not damage
INFO_ONLY = ("not aligned", "excluded", "low confidence", "partial")


def _clip_key(label: str) -> tuple[str, str]:
    """("12", "kami") from a problem's clip label "12 kami" (("", "") for other labels)."""
    from audio.pack import KEYS

    parts = label.split()
    key = {"序歌": "joka", "jo-ka": "joka"}.get(parts[0], parts[0]) if parts else ""
    part = parts[1] if len(parts) > 1 else ""
    return (key, part) if key in KEYS and part in ("kami", "shimo") else ("", "")


@voice.command("use")
@click.argument("name")
def use_cmd(name):
    """Read with NAME from now on (synth, tone, or an imported pack)."""
    from pathlib import Path

    from audio.pack import BUILTIN, VoicePack, import_pack, is_pack_folder, set_default_voice, voices_dir

    if name not in BUILTIN:
        __import__("audio.pack").pack.checked_spec(name)
        if (voices_dir() / name).is_dir() and "/" not in name:
            name = VoicePack(voices_dir() / name).folder.name
        elif Path(name).is_dir():
            path = Path(name)
            pack = VoicePack(path) if is_pack_folder(path) else import_pack(path)
            if pack.folder.parent.resolve() != voices_dir().resolve():
                raise KarutaError(f"{name}: a pack outside {voices_dir()}; add it with 'karuta voice add'")
            name = pack.folder.name
        else:
            from audio.pack import _unknown_voice_message

            raise KarutaError(_unknown_voice_message(name))
    path = set_default_voice(name)
    click.echo(f"default voice: {name} (saved in {path})")


@voice.command("record")
@click.argument("name")
@click.option("--device", "device", default=None, metavar="IN",
              help="Microphone: an input device's number or name (default: the default input).")
@click.option("--poems", "spec", default=None, metavar="SPEC",
              help="Record these only (5, 1-20, blue, むすめふさほせ ...; 'joka' for the jo-ka). "
                   "Default: the jo-ka and all 100.")
@click.option("--only-missing", is_flag=True, help="Walk only the clips that have no take yet.")
@click.option("--stop-after", type=finite_range(0, 3600), default=2.0, show_default=True,
              metavar="SECONDS", help="Stop a take after this much silence (0: only on a key).")
@click.option("--play-device", default=None, metavar="OUT", help="Where 'p' plays a take (default output).")
@click.option("--no-align", is_flag=True, help="Build the pack without the mora alignment (faster).")
def record_cmd(name, device, spec, only_missing, stop_after, play_device, no_align):
    """Record your own reader: the jo-ka and the 100 poems, 上の句 and 下の句, one take each.

    \b
    Shows each ku in kanji and kana with a level meter.  Keys:
      space/Enter  start / stop a take (it also stops after --stop-after s of silence)
      r            retake (the new take replaces the old)     p  play the take
      n or →       next clip        b or ←  previous clip     q  quit
    Every take is trimmed and saved at once (FLAC, 48 kHz mono) under
    $KARUTA_DATA_DIR/recordings/NAME; on quit the pack NAME is built from them.  Run the
    command again to continue at the first clip with no take.
    \b
    Examples:
      karuta voice record mine                     # everything, from the first missing clip
      karuta voice record mine --poems 1-10,joka
      karuta voice record mine --only-missing --device 2
    """
    from audio.pack import format_problems
    from audio.record import Microphone, Player
    from reader.voices.recorder import RecordSession, clip_order, parse_poems, run_terminal

    joka, nos = parse_poems(spec)
    session = RecordSession(name, clip_order(nos, joka), only_missing=only_missing)
    session.check_pack_owner()
    if session.done:
        click.echo(f"voice {name!r}: every chosen clip has a take already "
                   f"(record without --only-missing to redo one)")
    else:
        with Microphone(device) as mic:
            session.prepare()
            from reader.cli import hold_while_running

            # one recorder a voice at a time (a second one would interleave its takes)
            hold_while_running(session.folder, f"voice {name!r}'s recordings folder")
            run_terminal(session, mic, stop_after=stop_after, player=Player(play_device))
    rescued, rescue = session.save_unsaved()
    if rescued:  # said first: building the pack may still fail
        n = len(rescued)
        kept = (f"{n} take{'' if n == 1 else 's'} could not be saved in {session.folder}: "
                f"{'it is' if n == 1 else 'they are'} in {rescue} ({', '.join(c.filename for c in rescued)}); "
                f"move {'it' if n == 1 else 'them'} there and run the command again")
        click.echo(kept)
    have, total = session.counts()
    click.echo(f"{session.saved_now} take{'' if session.saved_now == 1 else 's'} saved this session; "
               f"{have} of {total} clips have a take ({session.folder})")
    if session.saved_now or session.pack_stale():
        from reader.cli.progress import LineProgress

        with LineProgress("building the pack", "clips") as bar:
            pack = session.refresh_pack(align=not no_align, progress=bar.update)
        if pack is not None:
            bad = [p for p in pack.problems() if p.kind not in ("missing", "partial")]  # clips not recorded yet
            click.echo(f"voice {pack.name!r}: {len(pack.clip_keys())} of 202 clips in {pack.folder}")
            if bad:
                click.echo(format_problems(bad))
    missing = session.missing()
    if missing:
        click.echo(f"{len(missing)} clip{'' if len(missing) == 1 else 's'} still to record, next: "
                   f"{missing[0].label}; continue with: karuta voice record {name} --only-missing")
    if rescued:
        raise KarutaError(kept)
