"""Files in and out besides the tournament file itself (no SQL): results typed from the
score sheets into a spreadsheet, a round paired by hand, and the export (JSON and CSV).

Reading a CSV checks what the file alone can say (numbers are numbers, no name twice, a
name at the table it is written at); the store checks the rest inside its transaction.
"""
from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from reader.tournament import scoring
from reader.tournament.errors import TournamentError
from reader.tournament.players import clean_name, read_text, sheet_rows
from reader.tournament.rows import Player, Table

__all__ = ["RESULT_COLUMNS", "PAIRING_COLUMNS", "SheetResult", "read_results", "read_tables",
           "export_json", "export_csv", "table_no"]

RESULT_COLUMNS = {"table": ("table", "卓", "卓番号", "テーブル"),
                  "name": ("name", "名前", "氏名", "選手名"),
                  "cards": ("cards", "枚数", "取り札", "取り札数"),
                  "fault": ("fault", "faulted", "お手つき"),
                  "tiebreak": ("tiebreak", "tie-break", "読み足し", "延長")}
PAIRING_COLUMNS = {k: RESULT_COLUMNS[k] for k in ("table", "name")}
_YES = ("1", "yes", "y", "true", "○", "〇", "x", "有", "あり")


def table_no(cell: str, where: str) -> int:
    try:
        n = int(clean_name(cell))
    except ValueError:
        raise TournamentError(f"{where}: table {cell!r} is not a number") from None
    if n < 1:
        raise TournamentError(f"{where}: table {n} (tables are numbered from 1)")
    return n


def _twice(where: str, nm: str, seen: dict, tno: int) -> None:
    if nm in seen:
        t0, r0 = seen[nm]
        raise TournamentError(f"{where}: {nm} is in two tables ({t0} on row {r0} and {tno})"
                              if t0 != tno else f"{where}: {nm} is twice in table {tno}")


@dataclass(frozen=True)
class SheetResult:
    """One table's rows of a results CSV: cards by name, and who faulted."""

    table: int
    named: dict
    faults: tuple[str, ...]
    #: tie-break cards read in this (knock-out) match: the largest written in its rows
    tiebreak: int = 0


def read_results(path: str | Path, tables: dict[int, Table], round_no: int) -> list[SheetResult]:
    """Results typed from the sheets: columns table, name, cards (optional fault = 1/yes/○),
    one row per player, checked against the round's ``tables``."""
    p = Path(path)
    rows = sheet_rows(read_text(p), str(p), RESULT_COLUMNS, ("table", "name", "cards"))
    by_table: dict[int, dict[str, int]] = {}
    faults: dict[int, list[str]] = defaultdict(list)
    tiebreak: dict[int, int] = defaultdict(int)
    seen: dict[str, tuple[int, int]] = {}
    for i, cell in rows:
        tno = table_no(cell["table"], f"{p} row {i}")
        if tno not in tables:
            raise TournamentError(f"{p} row {i}: round {round_no} has no table {tno} "
                                  f"(tables 1-{len(tables)})")
        nm = clean_name(cell["name"])
        _twice(f"{p} row {i}", nm, seen, tno)
        seen[nm] = (tno, i)
        if nm not in tables[tno].names:
            raise TournamentError(f"{p} row {i}: {nm} did not play at table {tno} "
                                  f"({', '.join(tables[tno].names)})")
        try:
            n = int(clean_name(cell["cards"]))
        except ValueError:
            raise TournamentError(f"{p} row {i}: {cell['cards']!r} cards is not a "
                                  "number") from None
        by_table.setdefault(tno, {})[nm] = n
        if cell["fault"].casefold() in _YES:
            faults[tno].append(nm)
        if clean_name(cell["tiebreak"]):
            try:
                tiebreak[tno] = max(tiebreak[tno], int(clean_name(cell["tiebreak"])))
            except ValueError:
                raise TournamentError(f"{p} row {i}: {cell['tiebreak']!r} tie-break cards is "
                                      "not a number") from None
    return [SheetResult(tno, named, tuple(faults[tno]), tiebreak[tno])
            for tno, named in by_table.items()]


def read_tables(path: str | Path, players: Sequence[Player], round_no: int) -> list:
    """A round's tables from a CSV (one row per player: table, name; seats in row order).
    Every player due to play in ``round_no`` must be at exactly one table of 2 or 3 players
    of one block; the first bad row or table is one line.  Returns ``(block, "prelim",
    seats)`` per table."""
    p = Path(path)
    rows = sheet_rows(read_text(p), str(p), PAIRING_COLUMNS, ("table", "name"))
    by_name = {x.name: x for x in players}
    active = {x.id for x in players if x.plays_in(round_no)}
    seats: dict[int, list[int]] = {}
    seen: dict[str, tuple[int, int]] = {}
    for i, cell in rows:
        where = f"{p} row {i}"
        tno = table_no(cell["table"], where)
        nm = clean_name(cell["name"])
        if nm not in by_name:
            raise TournamentError(f"{where}: no player called {nm}")
        _twice(where, nm, seen, tno)
        seen[nm] = (tno, i)
        if by_name[nm].id not in active:
            raise TournamentError(f"{where}: {nm} does not play in round {round_no} "
                                  "(withdrawn)")
        seats.setdefault(tno, []).append(by_name[nm].id)
    by_id = {x.id: x for x in players}
    left = [by_id[x].name for x in sorted(active - {by_name[n].id for n in seen})]
    if left:
        raise TournamentError(f"{p}: no table for {', '.join(left[:5])}"
                              + (f" and {len(left) - 5} more" if len(left) > 5 else ""))
    gap = [n for n in range(1, len(seats) + 1) if n not in seats]
    if gap:
        raise TournamentError(f"{p}: tables are numbered 1-{len(seats)}: no table {gap[0]} "
                              f"but a table {max(seats)}")
    out = []
    for tno in sorted(seats):
        ids = seats[tno]
        if not 2 <= len(ids) <= 3:
            raise TournamentError(f"{p}: table {tno} has {len(ids)} player"
                                  f"{'s' if len(ids) != 1 else ''} (2 or 3 play at a table)")
        blocks = sorted({by_id[x].block for x in ids})
        if len(blocks) > 1:
            raise TournamentError(f"{p}: table {tno} mixes blocks {' and '.join(blocks)}")
        out.append((blocks[0], "prelim", tuple(ids)))
    return out


def export_json(t) -> dict:
    """Everything a tournament holds, as one JSON object (``karuta tournament export``)."""
    s = t.settings
    return {"title": s.title, "seed": s.seed,
            "settings": {"rounds": s.rounds, "colors": list(s.colors),
                         "color_policy": s.color_policy, "reads": s.reads,
                         "mix_groups": s.mix_groups, "third_place": s.third_place},
            "players": [p.to_json() for p in t.players()],
            "rounds": [t.round(r).to_json() for r in range(1, t.current_round() + 1)],
            "standings": {b: [r.to_json() for r in rows] for b, rows in t.standings().items()},
            "lots": [x.to_json() for x in t.lots()], "champions": t.champions()}


#: the byte order mark Excel looks for: without it, Excel on a Japanese PC reads a CSV as
#: Shift_JIS and shows UTF-8 names garbled (our own CSV readers take it either way)
BOM = "\ufeff"


def export_csv(t, bom: bool = True) -> str:
    """Every result, one row per player per table (``karuta tournament export --csv``),
    headed by a byte order mark (``bom``) so that Excel opens it as UTF-8."""
    buf = io.StringIO()
    if bom:
        buf.write(BOM)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["round", "stage", "color", "table", "block", "kind", "seat", "name",
                "group", "cards", "result", "faulted"])
    groups = {p.id: p.group for p in t.players()}
    for r in range(1, t.current_round() + 1):
        rnd = t.round(r)
        for tb in rnd.tables:
            for i, (pid, nm) in enumerate(zip(tb.seats, tb.names)):
                w.writerow([r, rnd.stage, rnd.color, tb.no, tb.block, tb.kind,
                            scoring.SEATS[i], nm, groups[pid],
                            "" if tb.counts is None else tb.counts[i],
                            "" if tb.outcome is None else tb.outcome[i],
                            int(pid in tb.faults)])
    return buf.getvalue()
