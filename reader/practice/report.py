"""The end of a practice match as text: the score, and a table of every read that touched the
board (card, kimariji at read time, who took it, each player's first reaction, faults).

The window's end screen draws ``end_rows``; ``karuta practice`` prints ``end_lines`` (from the
fourth line: the table) after the match report.  Both come from one ``reads`` table.
"""
from __future__ import annotations

from reader.ui.term import table

__all__ = ["end_lines", "end_rows", "reads", "table_players"]

#: the verdicts that count as a reaction (the first one of a player on a read)
REACTIONS = ("take", "fault", "miss", "dead")


def table_players(m) -> tuple[str, ...]:
    """The players with a column in the end tables (alone: only A)."""
    return ("A",) if m.state.solo else tuple(m.players)


def reads(m) -> list[dict]:
    """Per closed read that someone took or reacted to (a take, fault, miss or dead touch;
    a read whose touches all came too early, too late or during a send has no row): ``poem``, ``kimariji``, ``took`` (or None),
    ``react`` (player -> first reaction, ms), ``faults`` (players who faulted, in touch
    order, once each)."""
    out = []
    for c in m.closed:
        touches = c.timing.get("touches", []) if c.timing else []
        took = c.event.took
        if not touches and took is None:
            continue
        react: dict[str, float] = {}
        for t in touches:
            if t["player"] not in react and t["verdict"] in REACTIONS:
                react[t["player"]] = t["reaction_ms"]
        faults = list(dict.fromkeys(t["player"] for t in touches if t["verdict"] == "fault"))
        if not react and not faults and took is None:
            continue  # only touches that did nothing (early, late, during a send): no row
        out.append({"poem": c.poem, "kimariji": c.timing.get("kimariji", "") if c.timing else "",
                    "took": took, "react": react, "faults": faults})
    return out


def end_lines(m) -> list[str]:
    """The score (two lines), a blank line, then the table as text."""
    out = m.outcome()
    st = m.state
    lines = []
    if st.solo:
        taken, missed, faults = st.solo_score()
        lines.append(f"alone: {taken} taken, {missed} missed, {faults} fault"
                     f"{'s' if faults != 1 else ''} ({len(m.closed)} reads)")
    elif out is not None:
        lines.append(f"winner: {out.winner}" if out.winner != "draw" else "draw")
    else:
        lines.append(f"not finished ({len(m.closed)} reads)")
    if st.solo:
        second = f"left on the board: {m.game.left_alone(st, m.deal)}"
    else:
        second = f"{'left on the board' if m.game.territories else 'taken'}: " + ", ".join(
            f"{p} {st.count(p)}" for p in m.players)
    # a bot's form this match (reader.practice.bot.match_skill), told once it is over
    forms = [f"bot {m.seats[p].level} played like a {x:.1f}" for p, x in sorted(m.skill.items())]
    lines.append(" · ".join([second] + forms))
    lines.append("")
    # columns by display width (reader.ui.term): a kimariji is kana, two columns a sound
    lines += table(_text_rows(m), align=">" + "<" + ">" + ">" * len(table_players(m)) + "<")
    return lines


def _text_rows(m) -> list[tuple[str, ...]]:
    """The printed table's cells: a header, then a row per read of ``reads``."""
    players = table_players(m)
    out = [("card", "kimariji", "took", *players, "faults")]
    for r in reads(m):
        out.append((str(r["poem"]), r["kimariji"], r["took"] or "-",
                    *(f"{r['react'][p] / 1000:+.2f}s" if p in r["react"] else "-"
                      for p in players),
                    " ".join(r["faults"])))
    return out


def end_rows(m) -> list[tuple[str, ...]]:
    """The end screen's table: a header, then a row per read of ``reads``."""
    players = table_players(m)
    out = [("card", "kimariji", "took", *(f"{p} react" for p in players), "faults")]
    for r in reads(m):
        out.append((str(r["poem"]), r["kimariji"], r["took"] or "—",
                    *(f"{r['react'][p] / 1000:+.2f} s" if p in r["react"] else "—"
                      for p in players),
                    ("× " + " ".join(sorted(r["faults"]))) if r["faults"] else ""))
    return out
