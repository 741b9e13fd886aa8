"""The results desk: one line per sheet as they come in (``karuta tournament desk``).

Each line is one command; a bad line is answered with one ``karuta: ...`` line and changes
nothing, and the desk goes on (the file is committed after every entry, so closing the
laptop or a crash loses nothing: start the desk again and carry on).

::

    12 9 7            table 12: seat A took 9, seat B 7 (three numbers: a three-player table)
    12 山田=9 佐藤=7   the same by name (write 山田太郎 for 山田 太郎: a line splits at spaces)
    12 9 7 !佐藤       ... and 佐藤 faulted (! before each name that faulted)
    3 9 8 +1          a knock-out match: 1 tie-break card was read after a tie
    c 12 8 8          correct table 12's result
    u                 undo the last entry      u 12   undo table 12's last entry
    m                 tables still without a result
    s                 standings (top four of each block)
    p                 pair the next round (when every result is in) and write its pairing
                      list and score sheets, as ``karuta tournament pair`` does
    ?                 this help             q   quit

``handle(t, line)`` returns ``(data, text)``: the JSON answer and its human form.
"""
from __future__ import annotations

import unicodedata

from reader.base.errors import KarutaError
from reader.base.limits import shown

__all__ = ["handle", "HELP", "Quit", "round_text", "lots_text", "pair_text", "result_line"]

HELP = ("12 9 7 = table 12: A took 9, B 7 · 12 山田=9 佐藤=7 · !NAME = faulted · +N = N "
        "tie-break cards read · c 12 8 8 = "
        "correct · u [TABLE] = undo · m = missing · s = standings · p = pair next round and "
        "write its pairing list and score sheets · q = quit")


class Quit(Exception):
    pass


def _int(tok: str) -> int:
    try:
        return int(tok)
    except ValueError:
        raise KarutaError(f"{shown(tok)} is not a number of cards") from None


#: the largest table number (as ``karuta tournament result`` takes it)
MAX_TABLE = 99_999


def _table(tok: str) -> int:
    try:
        n = int(tok)
    except ValueError:
        raise KarutaError(f"unknown command {shown(tok)} (? for help)") from None
    if not 1 <= n <= MAX_TABLE:
        raise KarutaError(f"table {tok}: tables are numbered 1-{MAX_TABLE}")
    return n


def result_line(r: dict) -> str:
    """A table's result as entered (``Table.to_json``), with the faults it saved."""
    return (f"round {r['round']} table {r['table']}: " +
            ", ".join(f"{n} {c} ({o})" for n, c, o in zip(r["players"], r["cards"], r["result"]))
            + (f"; faulted (お手つき): {', '.join(r['faults'])}" if r.get("faults") else ""))


def round_text(info: dict) -> str:
    """A round's tables, one line a table (``Round.to_json``)."""
    lines = [f"round {info['round']} ({info['stage_name']}), colour {info['color']}:"]
    for tb in info["tables"]:
        names = "  v  ".join(tb["players"])
        res = ""
        if tb["cards"] is not None:
            res = "   " + "-".join(map(str, tb["cards"]))
        kind = "" if tb["kind"] == "prelim" else f" [{tb['kind']}]"
        lines.append(f"  table {tb['table']:>3}  {tb['block']:>2}{kind}  {names}{res}")
    return "\n".join(lines)


def lots_text(t, lots: list[dict]) -> list[str]:
    """One line per tie a lot decided when the knock-out round was paired: who drew what,
    and who that put through (``lots``: ``Lot.to_json`` of the lots just drawn)."""
    if not lots:
        return []
    st = t.standings()
    out = []
    groups: dict[str, list[dict]] = {}
    for x in lots:
        groups.setdefault(x["seed"], []).append(x)
    for group in groups.values():
        block = group[0]["block"]
        active = [r for r in st[block] if not r.withdrawn]
        through = 4 if len(active) >= 4 else 2
        place = {r.name: i for i, r in enumerate(active, 1)}
        row = next(r for r in active if r.name == group[0]["name"])
        went = {x["name"]: place[x["name"]] <= through for x in group}
        what = ("who goes on" if len(set(went.values())) > 1 else "the order")
        out.append(f"block {block}: a lot decided {what} ({row.wins} wins, {row.cards} cards "
                   "each): " + ", ".join(
                       f"{x['name']} drew {x['number']} ("
                       + (f"place {place[x['name']]}" if went[x["name"]] else "out") + ")"
                       for x in sorted(group, key=lambda x: x["number"])))
    return out


def pair_text(t, info: dict, paths: dict) -> str:
    """What pairing a round says: its tables (one line a table), the lots it drew, and
    where its pairing list and score sheets are."""
    return "\n".join([round_text(info), *lots_text(t, info.get("lots", [])),
                      f"pairing list: {paths['pairings']}",
                      f"score sheets: {paths['sheets']}"])


def pair(t, color=None, tables_csv=None, out=None) -> tuple[dict, str]:
    """Pair the next round and write its pages (``pages.pair_and_write``): the JSON answer
    (the round, ``pages``, ``lots`` drawn) and its text.  A round stored whose pages could not
    be written: ``pages.PagesNotWritten``, its ``info`` set to the answer."""
    from reader.tournament import pages

    before = {(x.block, x.name) for x in t.lots()}
    try:
        rnd, paths = pages.pair_and_write(t, color, tables_csv, out)
    except pages.PagesNotWritten as e:
        e.info = dict(e.round.to_json(), lots=[])
        e.text = round_text(e.info)
        raise
    info = rnd.to_json()
    info["lots"] = [x.to_json() for x in t.lots() if (x.block, x.name) not in before]
    info["pages"] = {k: str(v) for k, v in paths.items()}
    return info, pair_text(t, info, paths)


def handle(t, line: str) -> tuple[dict | None, str]:
    """One desk line against tournament ``t``; ``KarutaError`` for a bad one."""
    line = " ".join(unicodedata.normalize("NFKC", line).split())
    if not line:
        return None, ""
    head, *rest = line.split(" ")
    cmd = head.lower()
    if cmd in ("q", "quit", "exit"):
        raise Quit
    if cmd in ("?", "h", "help"):
        return {"help": HELP}, HELP
    if cmd == "m":
        cur = t.current_round()
        miss = t.missing_results(cur) if cur else []
        earlier = [(r, t.missing_results(r)) for r in range(1, cur)]
        earlier = [(r, m) for r, m in earlier if m]
        return ({"round": cur, "missing": miss,
                 "missing_all": [{"round": r, "table": x} for r, m in earlier + [(cur, miss)]
                                 for x in m]},
                f"round {cur}: " + (f"waiting for {', '.join(map(str, miss))}" if miss
                                    else "all results in")
                + "".join(f"; round {r}: no result for {', '.join(map(str, m))}"
                          for r, m in earlier))
    if cmd == "s":
        st = t.standings()
        lines = []
        for b, rows in st.items():
            active = [r for r in rows if not r.withdrawn]
            if not any(r.played for r in active):
                lines.append(f"{b}: no results yet")
                continue
            through = 4 if len(active) >= 4 else 2
            # the top four, and everyone level with the 4th (a lot, not the list, decides)
            last = active[through - 1]
            top = [r for i, r in enumerate(active) if i < through
                   or (r.key == last.key and r.lot is None)]
            level = [r for r in top if r.key == last.key]
            places = through - (len(top) - len(level))
            lines.append(f"{b}: " + " · ".join(f"{r.rank}{'=' if r.tied else ''} {r.name} "
                                                f"{r.wins}勝 {r.cards}枚" for r in top)
                         + (f" ({len(level)} level for {places} place"
                            f"{'s' if places > 1 else ''}"
                            + (": a lot decides when the knock-out is paired)"
                               if t.prelims_done() else " so far)")
                            if len(top) > through else ""))
        return ({b: [r.to_json() for r in rows] for b, rows in st.items()}, "\n".join(lines))
    if cmd == "p":
        if rest:
            raise KarutaError("p pairs the next round: nothing goes after it (a colour or "
                              "tables by hand: `karuta tournament pair`)")
        return pair(t)
    if cmd == "u":
        table = _table(rest[0]) if rest else None
        r = t.undo(table).to_json()
        u, now = r["undone"], r["table"]
        return r, (f"undone round {u['round']} table {u['table']} "
                   f"{'-'.join(map(str, u['cards']))}" +
                   (f"; now {'-'.join(map(str, now['cards']))}" if now["cards"] else ""))
    correct = False
    if cmd == "c":
        if not rest:
            raise KarutaError("c TABLE COUNTS: correct a table's result, e.g. c 12 8 8")
        correct = True
        head, *rest = rest
    table = _table(head)
    faults = [tok[1:] for tok in rest if tok.startswith("!")]
    extra = [tok[1:] for tok in rest if tok.startswith("+")]
    if len(extra) > 1:
        raise KarutaError("one +N (the tie-break cards read) per line")
    counts = [tok for tok in rest if not tok.startswith(("!", "+"))]
    r = enter_tokens(t, table, counts, faults, correct=correct,
                     tiebreak=_int(extra[0]) if extra else 0).to_json()
    return r, result_line(r)


def enter_tokens(t, table: int, tokens, faults=(), round_no: int | None = None,
                 correct: bool = False, tiebreak: int = 0):
    """Enter a result written as tokens: all counts in seat order (``9 7``) or all by name
    (``山田=9 佐藤=7``); ``faults``: names.  The desk and ``karuta tournament result`` both
    come here; returns the table (``rows.Table``)."""

    if not tokens:
        raise KarutaError(f"table {table}: give the cards each player took, e.g. "
                          f"`karuta tournament result {table} 9 7`")
    if any("=" in c for c in tokens):
        if not all("=" in c for c in tokens):
            raise KarutaError("give the counts all in seat order (9 7) or all by name "
                              "(山田=9 佐藤=7)")
        named = {}
        for c in tokens:
            name, _, n = c.rpartition("=")
            named[name] = _int(unicodedata.normalize("NFKC", n))
        return t.enter_named(table, named, faults, round_no, correct, tiebreak)
    nums = [_int(unicodedata.normalize("NFKC", c)) for c in tokens]
    ids = []
    if faults:
        tb = t.table_at(round_no or t.current_round(), table)
        ids = [tb.seat_of(f) for f in faults]
    return t.enter(table, nums, ids, round_no, correct, tiebreak=tiebreak)
