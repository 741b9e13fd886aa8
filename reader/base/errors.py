"""One exception tree.  Anything a user can cause ends as a ``KarutaError``.

``reader.cli.main`` turns it into one line on stderr (``karuta: <message>``) and exit status 1.
Code below the CLI raises these and never prints.
"""


class KarutaError(Exception):
    """An error the user caused or can fix (bad option, bad file, no device)."""


class SelectionError(KarutaError):
    """An unknown poem, colour or group, or more cards than poems."""


class DeviceError(KarutaError):
    """No usable sound device (or display)."""


class AudioFileError(KarutaError):
    """A missing, unreadable or corrupt audio file."""


class OutputError(KarutaError):
    """An output file that cannot be written."""


class LogError(KarutaError):
    """A bad match log or save file (the message names the line)."""
