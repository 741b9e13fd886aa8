"""The tournament's one-line errors (``reader.cli.main`` prints them as ``karuta: ...``)."""
from reader.base.errors import KarutaError


class TournamentError(KarutaError):
    """Bad input for the tournament (a CSV row, a result, a table) or a step out of order.
    Raised before anything is written: the tournament file is unchanged."""
