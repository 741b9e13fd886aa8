"""Writing to the terminal for front ends below the CLI (no click there): one echo."""
from __future__ import annotations

import sys


def echo(text: str = "", nl: bool = True, err: bool = False) -> None:
    """Write ``text`` (and a newline unless ``nl=False``) to stdout or stderr, flushed."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + ("\n" if nl else ""))
    stream.flush()
