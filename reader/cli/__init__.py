"""The ``karuta`` command: a thin click layer (parse, call, print).

Subcommands live in their own modules and are imported only when invoked, so that
``karuta --help`` stays fast (no numpy, no synthesis engine at start-up).

Errors: every ``KarutaError`` and every usage error (unknown option, bad value) becomes one
line on stderr and exit status 1.  A traceback is a bug.
"""
from __future__ import annotations

import importlib
import sys

import click

from reader.base.errors import KarutaError

# command name -> "module:attribute", loaded on first use
_COMMANDS = {
    "read": ("reader.cli.read:read", "Read aloud: jo-ka, then the shuffled poems (live, on a sound device)."),
    "render": ("reader.cli.read:render", "Render the same reading to a file (WAV, or MP3/OGG with ffmpeg)."),
    "plan": ("reader.cli.read:plan", "Print the reading plan (order and timed segments)."),
    "poems": ("reader.cli.poems:poems", "List the 100 poems with colour and kimariji."),
    "kimariji": ("reader.cli.poems:kimariji_cmd", "Kimariji of the unread poems after some were read."),
    "match": ("reader.cli.match:match", "Score matches: keep score of a real match, replay a match log."),
    "voice": ("reader.cli.voice:voice", "Voice packs: list, add (import recordings), check, use."),
    "drill": ("reader.cli.drill:drill", "Drills: memory (pick the card; FSRS), speed (tap when you know)."),
    "stats": ("reader.cli.stats:stats", "Your drill results per poem: table, JSON, CSV, plot."),
    "calibrate": ("reader.cli.calibrate:calibrate", "Measure this device's delay by tapping along to clicks."),
    "tournament": ("reader.cli.tournament:tournament", "A goshiki competition day: blocks, rounds, results, standings, finals."),
    "table": ("reader.cli.table:table", "Role-playing tables: 現幻 with the karuta deck, playing-card judgements."),
    "practice": ("reader.cli.practice:practice", "A practice match on a board: against a bot, a second player, or alone."),
}


def hold_while_running(path, what: str) -> None:
    """Hold ``path``'s lock until this command ends (``reader.base.files.hold``): a second
    karuta on the same log or session is one line, exit 1, nothing written."""
    from reader.base.files import hold

    click.get_current_context().call_on_close(hold(path, what).release)


def claim_log(path, kind: str, *, new: bool, hold: bool = True) -> None:
    """The log this command plays (``match keep``, ``practice``; ``kind``: "a match log"):
    a ``new`` one is never started over a file that is there (``check_output``: its own kind
    is "continue it with --resume", another is named), and one karuta plays a log at a time
    (held until the command ends; checked again once held, as another may have begun it).
    ``hold=False``: the check alone (a command that writes nothing, not even a lock,
    before its sound device has opened calls this again then)."""
    import os

    from reader.base.statefiles import check_output

    def refuse_a_file_there():
        if new:
            check_output(path, "--log", same_kind=kind, resume="--resume")

    refuse_a_file_there()  # before the lock (a file beside the log where locks are files)
    if not hold:
        return
    if new or os.path.exists(path):  # (a log to resume that is not there: said when read)
        hold_while_running(path, "the " + kind.removeprefix("a "))
    refuse_a_file_there()


def command_clock():
    """The clock this command runs on (a ``reader.base.clock.Clock``): the one ``main`` was
    given (``SYSTEM_CLOCK`` unless a test hands in its fake), so every date a command writes
    or shows — a session's start, a log's default name, a calibration's date, the projector
    page's time — comes from it."""
    from reader.base.clock import SYSTEM_CLOCK

    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return obj if obj is not None else SYSTEM_CLOCK


def warn(message: str) -> None:
    """The one way a command tells the user something went wrong or is missing: one line
    ``karuta: message`` on stderr (errors end the same way, through ``main``)."""
    from reader.base.limits import bounded

    click.echo(f"karuta: {bounded(message)}", err=True)


class LazyGroup(click.Group):
    """A click group whose subcommands are imported only when invoked.

    ``table``: name -> ("module:attribute", short help).  ``--help`` lists the short help from
    the table, so listing commands imports nothing.
    """

    def __init__(self, *args, table: dict[str, tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.table = table if table is not None else {}

    def list_commands(self, ctx):
        return list(self.table) + [n for n in self.commands if n not in self.table]

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        if name not in self.table:
            return None
        module, attr = self.table[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, help_) for name, (_, help_) in self.table.items()]
        rows += [(n, c.get_short_help_str()) for n, c in self.commands.items() if n not in self.table]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, table=_COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="karuta")
def cli():
    """karuta: a 小倉百人一首 (Ogura Hyakunin Isshu) karuta reader, grab timer and match scorer.

    \b
    Examples:
      karuta read                     # a kyogi reading in the built-in voice
      karuta read --rules goshiki --color blue
      karuta render --out reading.wav --seed 7
      karuta kimariji --read 21 --json
    """


def main(argv: list[str] | None = None, clock=None) -> None:
    """Run ``karuta ARGS``; ``clock``: the ``reader.base.clock.Clock`` its commands read
    (``command_clock``; None: ``SYSTEM_CLOCK``)."""
    _one_blas_thread()
    import audio.quiet

    audio.quiet.ENABLED = True  # C libraries' noise kept off stderr (see audio/quiet.py)
    from reader.base import interrupt

    interrupt.install()  # SIGTERM/SIGHUP clean up like Ctrl-C
    escaped = _escape_what_stdout_cannot_show()
    try:
        _main(argv, clock)
    finally:
        if escaped and escaped[0]:
            warn(f"this terminal's encoding ({escaped[0]}) cannot show all of the output: what "
                 "it cannot show was written as \\u escapes; use a UTF-8 locale (e.g. "
                 "LANG=C.UTF-8)")


def _one_blas_thread() -> None:
    """numpy's OpenBLAS, left to itself, runs a matrix product on a thread per core, and those
    threads spin for a while after each one waiting for the next.  The app's products are
    small (an alignment's frames by 8-40 cepstra, mel filterbanks), so the threads only burn
    CPU, beside a live reading's audio callback and the synthesis processes: measured, an
    alignment took 2-10 times the CPU with them (scripts/bench_blas_threads.py).  One thread,
    unless the user set OPENBLAS_NUM_THREADS; before numpy is loaded (it reads the variable
    then), and inherited by the processes the command starts (synthesis workers)."""
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _escape_what_stdout_cannot_show() -> list | None:
    """Standard output in an encoding that is not UTF-8 (a Latin-1 locale, PYTHONIOENCODING):
    what it cannot show is written as ``\\uXXXX`` escapes (JSON output stays valid JSON)
    rather than ending the command in a traceback after its change was saved.  Returns a list
    that holds the encoding once an escape was written (for one line at the end), or None."""
    import codecs
    import io

    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper):
        return None
    try:
        if codecs.lookup(stream.encoding).name.startswith("utf"):
            return None
    except LookupError:
        return None
    used: list = [None]

    def escape(e):
        used[0] = stream.encoding
        return codecs.backslashreplace_errors(e)

    codecs.register_error("karuta-escape", escape)
    try:
        stream.reconfigure(errors="karuta-escape")
    except (ValueError, OSError):
        return None
    return used


def _main(argv: list[str] | None, clock) -> None:
    try:
        # (not ``cli.main``: click's main prints an empty line on Ctrl-C before raising Abort;
        # our one line is all a user should see)
        args = list(sys.argv[1:] if argv is None else argv)
        with cli.make_context("karuta", args, obj=clock) as ctx:
            cli.invoke(ctx)
    except KarutaError as e:
        warn(str(e))
        sys.exit(1)
    except click.exceptions.Abort:
        warn("interrupted")
        sys.exit(130)
    except click.UsageError as e:
        where = e.ctx.command_path if e.ctx else "karuta"
        msg = " ".join(e.format_message().split())
        warn(f"{msg} (see '{where} --help')")
        sys.exit(1)
    except click.ClickException as e:
        warn(" ".join(e.format_message().split()))
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        warn("interrupted")
        sys.exit(130)
    except RuntimeError as e:
        if not _stopped_in_a_lock(e):
            raise
        warn("interrupted")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


def _stopped_in_a_lock(e: BaseException) -> bool:
    """An interrupt (Ctrl-C, SIGTERM, SIGHUP: ``KeyboardInterrupt``) raised while a thread
    pool's condition was releasing its lock surfaces as "cannot release un-acquired lock",
    the interrupt as its context (seen once in ~27 SIGHUPs to a render): the same stop, and the
    ``finally`` blocks on its way out have run."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, KeyboardInterrupt):
            return True
        e, seen = e.__context__, seen + 1
    return False


if __name__ == "__main__":
    main()
