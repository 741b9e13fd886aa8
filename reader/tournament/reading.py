"""``karuta tournament read``: the round's goshiki reading through the club reader.

One reading serves every table of the round at once (seed 004): the round's colour, 30 s of
memorisation (``reader.club``'s goshiki default), 「ご用意よければ 空札一枚」 and the karafuda
poem, then 17 poems (the tournament's --reads) once through without waiting for slow tables.  ``p`` holds at the next
silence while a referee's hand is up, exactly as ``karuta read --rules goshiki --live``.

The reading's seed is the round's (recorded in the tournament file), so the same round always
reads the same order, and its club session is saved beside the tournament's pages
(``round<N>-reading.json``) after every card: ``--resume`` goes on after a crash.

A knock-out tie reads one more card (seed 004: 決勝戦が同数の場合は、最後の１枚を読みます):
``--tiebreak 1`` reads the 18th card of the same order (the order of 20 from the same seed
begins with the 17 read), ``--tiebreak 2`` the 19th, ``--tiebreak 3`` the 20th.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from reader.tournament.errors import TournamentError

__all__ = ["round_settings", "run_round_reading", "session_path"]

READS = 17  # the default; a tournament's own number is ``t.settings.reads``
CARDS = 20


def round_settings(color: str, *, speed: float | None = None, cards: int | None = None,
                   poems_spec: str | None = None, joka: bool | None = None):
    """The reading settings of a goshiki reading of ``color`` (or of ``poems_spec``)."""
    from reader.match.rules.games import GOSHIKI
    from reader.reading.settings import settings_from_options

    return settings_from_options(GOSHIKI.name, poems_spec=poems_spec,
                                 colors=() if poems_spec else (color,), cards=cards,
                                 speed=speed, joka=joka)


def session_path(t, round_no: int, tiebreak: int | None = None) -> Path:
    from reader.tournament.pages import pages_dir

    from reader.base.dirs import make_folder

    folder = make_folder(pages_dir(t.path), "the folder of the round's reading")
    tail = f"-tiebreak{tiebreak}" if tiebreak else ""
    return folder / f"round{round_no}-reading{tail}.json"


def run_round_reading(t, round_no: int | None, *, resume: bool, tiebreak: int | None,
                      memorize: float | None, window: bool, device, backend: str,
                      voice_spec: str | None, speed: float | None,
                      echo: Callable[[str], None]) -> dict:
    from reader.club.run import open_club
    from reader.reading.voices import build_reading
    from reader.ui.keys import DEFAULT_KEYS

    round_no = round_no or t.current_round()
    info = t.round_info(round_no) if round_no else None
    if info is None:
        raise TournamentError("no round is paired yet: `karuta tournament pair` first"
                              if not round_no else f"round {round_no} is not paired")
    color, seed = info.color, info.reading_seed
    reads = t.settings.reads
    settings = round_settings(color, speed=speed, cards=reads)
    if tiebreak:
        if info.stage == "prelim":
            raise TournamentError(f"round {round_no} is a preliminary round: a tie is a draw "
                                  "there (--tiebreak is for the semi-finals and the final)")
        if reads + tiebreak > CARDS:
            raise TournamentError(f"--tiebreak {tiebreak}: {reads} of the colour's {CARDS} "
                                  f"cards are read, so {CARDS - reads} tie-break card"
                                  f"{'' if CARDS - reads == 1 else 's'} at most")
        full, _ = build_reading(round_settings(color, speed=speed, cards=CARDS), seed,
                                voice_spec)
        poem = full.order[reads + tiebreak - 1]
        settings = round_settings(color, speed=speed, cards=1, poems_spec=str(poem), joka=False)
        if memorize is None:
            memorize = 0.0
    echo(f"round {round_no} ({info.stage}): {color} reading, seed {seed}"
         + (f", tie-break card {reads + tiebreak}" if tiebreak else ""))

    again = "`karuta tournament read --resume" + (f" --tiebreak {tiebreak}" if tiebreak else "")
    again += f" --round {round_no}`" if round_no != t.current_round() else "`"

    def _echo(line: str) -> None:
        # the club reader's own hint names `karuta read --resume`: here the round's session
        echo(line.replace("`karuta read --resume`", again))

    sess = session_path(t, round_no, tiebreak)
    read = open_club((settings, seed, voice_spec), resume=resume, session_path=sess, memorize=memorize,
                     signals=None, auto=False, device=device, backend=backend, window=window,
                     echo=_echo, bindings=DEFAULT_KEYS)
    return {"round": round_no, "color": color, "seed": seed, "cards_read": read,
            "session": str(sess), "tiebreak": tiebreak}
