"""The players' list: a CSV from a spreadsheet, and blocks balanced automatically.

Columns (a header row, names in English or Japanese, any order, any case):

    name   (名前, 氏名, 選手名)      required
    group  (class, club, 組, クラス, 学級, 所属, 学校)   optional: mixed apart in pairing
    block  (ブロック)                optional: empty or absent = balanced automatically

Encodings: UTF-8 with or without a BOM, and Shift_JIS (cp932, as Excel on Japanese Windows
saves "CSV").  A bad file is one ``TournamentError`` naming the row: a missing name column, an
empty name, the same name twice (names are how results are entered and printed).
"""
from __future__ import annotations

import csv
import io
import random
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from reader.base import limits
from reader.base.limits import NAME_MAX  # noqa: F401  (re-exported: the tournament's bound)
from reader.tournament.errors import TournamentError

__all__ = ["PlayerRow", "read_csv", "parse_csv", "balance_blocks", "block_names", "clean_name",
           "check_blocks", "check_name", "NAME_MAX"]

_COLUMNS = {
    "name": ("name", "名前", "player", "氏名", "選手名", "選手"),
    "group": ("group", "組", "class", "club", "team", "school", "クラス", "学級", "所属", "学校",
              "チーム"),
    "block": ("block", "ブロック", "ﾌﾞﾛｯｸ"),
}


@dataclass(frozen=True)
class PlayerRow:
    name: str
    group: str = ""
    block: str = ""
    #: the row in the file (1 = the header), for messages
    row: int = 0


def clean_name(s: str) -> str:
    """NFKC (full-width letters and digits, half-width kana made standard), spaces squeezed.
    Two spellings of one name (全角/半角 spaces) are then one name."""
    return " ".join(unicodedata.normalize("NFKC", s).split())


def check_name(nm: str, what: str, where: str) -> str:
    """``nm`` (already ``clean_name``d) as a player's ``what`` ("name", "group"), or one
    ``TournamentError`` line naming ``where`` it came from (``reader.base.limits.check_name``:
    at most ``NAME_MAX`` characters, no control or format characters)."""
    return limits.check_name(nm, what, where, TournamentError)


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (BOM or not), else Shift_JIS (cp932); anything with control characters (a
    spreadsheet's .xlsx, an image) is refused: it would decode as nonsense."""
    bad = TournamentError(f"{name}: neither UTF-8 nor Shift_JIS text (save the sheet as "
                          "CSV UTF-8)")
    text = None
    for enc in ("utf-8-sig", "cp932"):
        try:
            text = data.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    if text is None or any(unicodedata.category(c) == "Cc" and c not in "\t\r\n"
                           for c in text):
        raise bad from None
    return text


def read_csv(path: str | Path) -> list[PlayerRow]:
    return parse_csv(read_text(path), str(path))


def read_text(path: str | Path) -> str:
    """A spreadsheet's CSV as text (``decode_text``); one-line errors for a missing file."""
    path = Path(path)
    try:
        from reader.base.files import read_bounded

        data = read_bounded(path)
    except FileNotFoundError:
        raise TournamentError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TournamentError(f"{path}: is a folder, not a CSV file") from None
    except OSError as e:
        raise TournamentError(f"{path}: cannot read ({e.strerror})") from None
    return decode_text(data, str(path))


def _column(header: list[str], aliases: Sequence[str]) -> int | None:
    wanted = {unicodedata.normalize("NFKC", w).casefold() for w in aliases}
    for i, h in enumerate(header):
        if unicodedata.normalize("NFKC", h).strip().casefold() in wanted:
            return i
    return None


def sheet_rows(text: str, name: str, columns: dict[str, Sequence[str]],
               required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The rows below a header as ``(row number, {column: cell})``, cells stripped (absent
    columns give ""); columns are found by any of their ``columns`` names, in any order;
    comma, semicolon or tab separated.  Every CSV the tournament reads comes through here:
    players, results, pairings.  A missing required column is one line naming the header."""
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as e:
        raise TournamentError(f"{name}: not a CSV file ({e})") from None
    rows = [(i, r) for i, r in enumerate(rows, 1) if any(c.strip() for c in r)]
    expect = ", ".join(f"{k} ({columns[k][1]})" if len(columns[k]) > 1 else k for k in columns)
    if not rows:
        raise TournamentError(f"{name}: empty (the first row names the columns: {expect})")
    head_row, header = rows[0]
    cols = {k: _column(header, aliases) for k, aliases in columns.items()}
    for k in required:
        if cols[k] is None:
            shown = ", ".join(h.strip() for h in header if h.strip()) or "nothing"
            raise TournamentError(f"{name} row {head_row}: no {k} column (the header has "
                                  f"{shown}; expected {expect})")
    out = []
    for i, r in rows[1:]:
        out.append((i, {k: (r[j].strip() if j is not None and j < len(r) else "")
                        for k, j in cols.items()}))
    return out


def parse_csv(text: str, name: str = "<csv>") -> list[PlayerRow]:
    out: list[PlayerRow] = []
    seen: dict[str, int] = {}
    for i, cell in sheet_rows(text, name, _COLUMNS, ("name",)):
        nm = clean_name(cell["name"])
        if not nm:
            raise TournamentError(f"{name} row {i}: no name")
        if nm in seen:
            raise TournamentError(f"{name} row {i}: {nm} is already on row {seen[nm]} (names "
                                  f"must differ: add the class, e.g. {nm} (2-1))")
        seen[nm] = i
        check_name(nm, "name", f"{name} row {i}")
        grp = check_name(clean_name(cell["group"]), "group", f"{name} row {i}")
        out.append(PlayerRow(nm, grp, check_name(clean_name(cell["block"]), "block",
                                                 f"{name} row {i}"), i))
    if not out:
        raise TournamentError(f"{name}: no players below the header")
    return out


def block_names(n: int) -> list[str]:
    """A, B, … Z, then AA, AB, …"""
    out = []
    for i in range(n):
        s = ""
        i += 1
        while i:
            i, r = divmod(i - 1, 26)
            s = chr(65 + r) + s
        out.append(s)
    return out


def balance_blocks(rows: Sequence[PlayerRow], blocks: int | None,
                   rng: random.Random) -> list[PlayerRow]:
    """Fill in the blocks left empty.  Given blocks stay as given; the others are dealt so
    that block sizes differ by at most one where possible, each group spread over the blocks
    (a class's players dealt round the blocks in turn), the order within a group from ``rng``.
    ``blocks``: how many blocks (default: the blocks named in the file, else 1)."""
    named = sorted({r.block for r in rows if r.block})
    if blocks is None:
        names = named or ["A"]
    else:
        if blocks < 1:
            raise TournamentError(f"--blocks {blocks}: at least one block")
        names = list(named)
        for b in block_names(blocks + len(named)):
            if len(names) >= blocks:
                break
            if b not in names:
                names.append(b)
        if len(names) > blocks:
            raise TournamentError(f"the file names {len(named)} blocks ({', '.join(named)}), "
                                  f"more than --blocks {blocks}")
    size = Counter(r.block for r in rows if r.block)
    free = [r for r in rows if not r.block]
    by_group: dict[str, list[PlayerRow]] = defaultdict(list)
    for r in free:
        by_group[r.group].append(r)
    order: list[PlayerRow] = []
    for g in sorted(by_group, key=lambda g: (-len(by_group[g]), g)):
        members = by_group[g]
        rng.shuffle(members)
        order.extend(members)
    assigned: dict[int, str] = {}
    last_block_of_group: dict[str, list[str]] = defaultdict(list)
    for r in order:
        # the smallest block; among equals, one this group has fewest players in
        def key(b):
            return (size[b], last_block_of_group[r.group].count(b), names.index(b))
        b = min(names, key=key)
        size[b] += 1
        last_block_of_group[r.group].append(b)
        assigned[id(r)] = b
    return [r if r.block else PlayerRow(r.name, r.group, assigned[id(r)], r.row) for r in rows]


def check_blocks(rows: Sequence[PlayerRow]) -> None:
    """Every block needs two players to pair (refused at ``new``, not at the first ``pair``)."""
    if len(rows) < 2:
        raise TournamentError(f"{len(rows)} player{'' if len(rows) == 1 else 's'}: a tournament "
                              "needs at least two")
    sizes: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        sizes[r.block].append(r.name)
    small = sorted(b for b, names in sizes.items() if len(names) < 2)
    if small:
        b = small[0]
        raise TournamentError(f"block {b} would have one player ({sizes[b][0]}): a block needs "
                              "at least two (fewer --blocks, or move players in the CSV's "
                              "block column)")
