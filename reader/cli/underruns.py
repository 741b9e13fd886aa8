"""The audio line every command that plays prints at its end: ``audio: no underruns``, or
(on stderr, as a warning) ``karuta: audio: N underruns (gaps of silence in the sound)``."""
from __future__ import annotations

import click


def say_underruns(output) -> None:
    from audio.output import underrun_line

    line = underrun_line(output)
    if line:
        click.echo(line, err=line.startswith("karuta: "))
