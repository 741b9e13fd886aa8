"""The audio line every command that plays prints at its end: ``audio: no underruns``, or
(on stderr, as a warning) ``karuta: audio: N underruns (gaps of silence in the sound: ...)``;
nothing about underruns when the user stopped the sound (``stopped``)."""
from __future__ import annotations

import click


def say_underruns(output, *, stopped: bool = False) -> None:
    from audio.output import underrun_line

    line = underrun_line(output, stopped=stopped)
    if line:
        click.echo(line, err=line.startswith("karuta: "))
