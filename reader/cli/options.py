"""Options several commands share, defined once: the same name, type and help everywhere.

Each is a click decorator; ``stack(*decorators)`` applies several in the order listed.
"""
from __future__ import annotations

import click

BACKENDS = click.Choice(["sounddevice", "pygame"])


def stack(*decorators):
    """Apply ``decorators`` so that ``--help`` lists them in the order given."""
    def wrap(f):
        for d in reversed(decorators):
            f = d(f)
        return f

    return wrap


def poems_option(**kw):
    return click.option("--poems", "poems_spec", default=None, metavar="SPEC",
                        help="Which poems: 1-20, 5,9, blue, むすめふさほせ, 2ji, あさ (union).", **kw)


def colors_option(**kw):
    return click.option("--color", "colors", multiple=True, metavar="COLOUR",
                        help="A goshiki colour: blue pink yellow green orange (repeatable).", **kw)


def replace_option():
    """``--replace``: write over an existing output file karuta did not write (one it wrote,
    an earlier export, page, plot or render, is replaced without it; ``check_output``)."""
    return click.option("--replace", is_flag=True,
                        help="Write over an existing output file that karuta did not write.")


def seed_option(help: str = "Shuffle seed; the same seed gives the same order (printed when not given)."):
    return click.option("--seed", type=int, default=None, help=help)


def voice_option(help: str = "synth (built-in), tone (test tones), or a voice pack name or folder."):
    return click.option("--voice", "voice_spec", default=None, metavar="NAME|PATH", help=help)


def device_option(help: str = "Sound device name or number (see karuta read --list-devices)."):
    return click.option("--device", default=None, help=help)


def backend_option(help: str = "Audio output library (sounddevice times taps best)."):
    return click.option("--backend", type=BACKENDS, default="sounddevice", show_default=True,
                        help=help)


def joka_option(help: str = "Read the jo-ka (goshiki: the announcement and karafuda poem)."):
    return click.option("--joka/--no-joka", default=None, help=help)


def timing_details_option():
    """``--timing-details``: the developer's figures at the end of a window or drill (input
    polling, frame rate, the "get ready" wait); ``KARUTA_TIMING_DEBUG=1`` turns them on too."""
    return click.option("--timing-details", "timing_details", is_flag=True,
                        help="At the end, also print how input was timed: polling, the "
                             "window's frame rate, the get-ready wait (for developers; "
                             "KARUTA_TIMING_DEBUG=1 does too).")


def timing_details_wanted(flag: bool) -> bool:
    """Whether to print the timing figures: ``--timing-details``, or ``KARUTA_TIMING_DEBUG``
    set to anything but 0 (the variable that adds the drill log's ``debug`` objects)."""
    import os

    return flag or os.environ.get("KARUTA_TIMING_DEBUG", "") not in ("", "0")


#: the port a phone's page is served on when ``--port`` is not given (``reader.web.server``'s
#: ``DEFAULT_PORT``; written here so that ``--help`` imports nothing of the web host)
WEB_PORT = 47_101


def web_options(web_help: str, port_help: str | None = None):
    """``--web``, ``--address`` and ``--port``: the command served to a phone's or tablet's
    browser on the LAN (``reader.web.server``), declared once for ``drill speed`` and
    ``practice``.  ``port_help``: when ``--port`` means more than the page's port (practice:
    the online host's too)."""
    return stack(
        click.option("--web", is_flag=True, help=web_help),
        click.option("--address", default=None, metavar="HOST",
                     help="--web: the address to serve on and print (default: this "
                          "machine's on the LAN, served on all)."),
        click.option("--port", type=click.IntRange(0, 65535), default=None,
                     help=port_help or f"--web: the port (default {WEB_PORT}; 0: any free "
                                       "one)."))
