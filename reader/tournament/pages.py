"""Paper and screens: print-ready HTML (A4) and the projector page.

- ``pairings.html``: the pairing list of a round (per block: table, seats A/B/C, group, wins);
- ``sheets.html``: one score sheet per table, four to an A4 page, to cut and hand out;
- ``standings.html``: standings per block and the knock-out bracket for a projector; it
  reloads itself every few seconds (``<meta http-equiv="refresh">``) and the app rewrites it
  after every entry (atomically: a reload never sees half a file).

Pages use IPAex Gothic through CSS (installed by scripts/setup), so names in kanji print in
a proper Japanese font; jinja2 escapes every name.  Printing: open the file in a browser and
print (A4 is set by ``@page``), or ``chromium --headless --no-pdf-header-footer --print-to-pdf``.
The time shown on the projector is passed in (``updated``): nothing here reads the clock.
"""
from __future__ import annotations

from pathlib import Path

import jinja2
import poems

from reader.base.errors import KarutaError
from reader.base.files import atomic_write_text

__all__ = ["highlighted", "render_pairings", "render_sheets", "render_projector", "write_round",
           "write_projector", "pages_dir", "round_paths", "ready_folder", "pair_and_write",
           "PagesNotWritten", "REFRESH_S"]

REFRESH_S = 10
ROUND_JA = {"prelim": "予選 第{n}回戦", "semi": "準決勝", "final": "決勝"}
KIND_JA = {"semi": "準決勝", "final": "決勝", "third": "3位決定戦", "prelim": "予選"}

_env = jinja2.Environment(loader=jinja2.PackageLoader("reader.tournament", "templates"),
                          autoescape=True, trim_blocks=True, lstrip_blocks=True)


def pages_dir(db_path: Path) -> Path:
    """Where a tournament's pages go: ``<file stem>-pages/`` beside the tournament file."""
    return db_path.with_name(db_path.stem + "-pages")


def _round_title(t, round_no: int) -> str:
    stage = t.stage_of(round_no)
    kinds = {tb.kind for tb in t.tables(round_no)}
    if stage == "final" and "third" in kinds:
        return "決勝・3位決定戦"
    if stage == "semi" and kinds == {"final"}:  # blocks of 2-3: the top two meet at once
        return KIND_JA["final"]
    return ROUND_JA[stage].format(n=round_no)


FRESH = "札：20枚をよくきって10枚ずつに分け、ジャンケンに勝った方がどちらかを選ぶ。"
LAID = "札：前の試合の後に並べてある20枚のまま始める（札は選べません）。"
LAY_OUT = "終わったら札をよくきり、10枚ずつ並べておく。"


def _cards_notes(t, round_no: int, color_ja: str) -> dict[str, str]:
    """Per table kind, what the sheet says about the cards (seed 004: the players of round 1
    and of the final shuffle and choose; from round 2 the preliminaries play on the cards the
    players before laid out, so with one colour all day the reader reads that colour)."""
    info = t.round_info(round_no)
    prev = t.round_info(round_no - 1) if round_no > 1 else None
    one = len(set(t.settings.colors[:t.settings.rounds])) == 1
    prelim = (LAID if prev is not None and prev.stage == "prelim"
              and prev.color == info.color else FRESH)
    if one and info.color == t.settings.colors[0]:
        prelim += f"予選は全回戦 {color_ja}。"
    if round_no < t.settings.rounds:
        prelim += LAY_OUT
    return {"prelim": prelim, "semi": FRESH, "final": FRESH, "third": FRESH}


def _common(t, round_no: int) -> dict:
    info = t.round_info(round_no)
    color_ja = poems.COLOR_JA[info.color]
    round_title = _round_title(t, round_no)
    return {"title": t.settings.title, "round_title": round_title,
            "color": info.color, "color_ja": color_ja, "reads": t.settings.reads,
            "kind_title": dict(KIND_JA, prelim=round_title),
            "cards_note": _cards_notes(t, round_no, color_ja)}


def render_pairings(t, round_no: int) -> str:
    tables = t.tables(round_no)
    by_block: dict[str, list] = {}
    for tb in tables:
        by_block.setdefault(tb.block, []).append(tb)
    groups = {p.id: p.group for p in t.players()}
    wins = {}
    for rows in t.standings().values():
        for r in rows:
            wins[r.id] = r.wins
    common = _common(t, round_no)
    notes = list(dict.fromkeys(common["cards_note"][k] for k in
                               dict.fromkeys(tb.kind for tb in tables)))
    return _env.get_template("pairings.html").render(
        **common, tables=tables, by_block=sorted(by_block.items()), groups=groups,
        wins=wins, players=sum(len(tb.seats) for tb in tables), notes=notes,
        knockout=any(tb.knockout for tb in tables))


def render_sheets(t, round_no: int) -> str:
    return _env.get_template("sheets.html").render(**_common(t, round_no),
                                                  tables=t.tables(round_no))


def _name_em(name: str) -> float:
    """About how wide a name is, in em (a kanji or kana 1, a Latin letter or space 0.6)."""
    import unicodedata

    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in name)


def _through(active: int) -> int:
    """How many of a block of ``active`` players go on to the knock-out (fewer than four: the
    top two play the final at once, ``scoring.semi_finals``)."""
    return 4 if active >= 4 else 2


def highlighted(rows, knockout) -> set:
    """The ids of a block's standings rows the projector marks: once the knock-out is paired,
    the players in it; before, those whose place within the top four (two in a block of 2-3)
    the results have decided.  Nobody before any result, and never a tie that straddles the
    last place through (4 of 8 players level on 0 are not "the top four")."""
    if knockout:
        first = min(tb.round for tb in knockout)
        return {pid for tb in knockout if tb.round == first for pid in tb.seats}
    active = [r for r in rows if not r.withdrawn]
    if not any(r.played for r in active):
        return set()
    through = _through(len(active))
    return {r.id for r in active[:through]
            if sum(x.key >= r.key for x in active) <= through}


def _match(tb, rank: dict) -> dict:
    """A knock-out table for the bracket: its players with their preliminary place, cards and
    who won."""
    return {"table": tb.no, "kind": tb.kind, "players": [
        {"name": n, "rank": rank.get(pid), "cards": None if tb.counts is None else tb.counts[i],
         "win": tb.outcome is not None and tb.outcome[i] == "win"}
        for i, (pid, n) in enumerate(zip(tb.seats, tb.names))]}


def _bracket(rows, tables) -> dict:
    """A block's knock-out as the projector draws it: semi-finals (1 v 4, 2 v 3), the final
    (before it is paired: a box of ― for the semi-finals' winners), the third-place match, the
    champion."""
    rank = {r.id: r.rank for r in rows}
    by_kind: dict[str, list] = {}
    for tb in tables:
        by_kind.setdefault(tb.kind, []).append(_match(tb, rank))
    final = (by_kind.get("final") or [None])[0]
    semis = by_kind.get("semi", [])
    if final is None and semis:
        final = {"table": None, "kind": "final", "players": [
            {"name": "", "rank": None, "cards": None, "win": False} for _ in semis]}
    champion = next((p["name"] for p in (final or {}).get("players", []) if p["win"]), None)
    return {"semis": semis, "final": final, "third": (by_kind.get("third") or [None])[0],
            "champion": champion}


def _winners(b: dict) -> list[tuple[str, list[str]]]:
    """A finished block's places: 優勝, 準優勝, 3位 (the third-place match's winner, or both
    semi-final losers where none is played)."""
    final = b["final"]["players"]
    out = [("優勝", [p["name"] for p in final if p["win"]]),
           ("準優勝", [p["name"] for p in final if not p["win"]])]
    if b["third"] is not None:
        out.append(("3位", [p["name"] for p in b["third"]["players"] if p["win"]]))
    elif b["semis"]:
        out.append(("3位", [p["name"] for m in b["semis"] for p in m["players"]
                            if not p["win"]]))
    return out


def render_projector(t, updated: str = "") -> str:
    """The projector page, one kind of screen after another: at the day's end the winners of
    each block; once the knock-out is paired its bracket; while a preliminary round's results
    are coming in its pairings (who sits where); and the standings per block, titled by the
    stage.  The page's script fits each kind to the screen, every block whole (see
    projector.html)."""
    st = t.standings()
    cur = t.current_round()
    rounds = t.settings.rounds
    stage = t.stage_of(cur) if cur else None
    ko = t.knockout()
    missing = t.missing_results(cur) if cur else []
    champions = t.champions()
    over = bool(cur > rounds and not missing and ko and set(champions) >= set(ko))
    pairings: list = []
    pairings_title = ""
    if cur:
        info = t.round_info(cur)
        tables = t.tables(cur)
        color_ja = poems.COLOR_JA[info.color]
        status = (f"{_round_title(t, cur)}（{color_ja}） · 結果 {len(tables) - len(missing)}"
                  f"/{len(tables)} 卓" + (" · 全試合終了" if over else ""))
        if missing and stage == "prelim":
            by_block: dict[str, list] = {}
            for tb in tables:
                by_block.setdefault(tb.block, []).append(tb)
            pairings = sorted(by_block.items())
            pairings_title = f"{_round_title(t, cur)} 組み合わせ（{color_ja}）"
    else:
        status = "組み合わせ前"
    done = min(cur, rounds)
    if done and t.missing_results(done):
        done -= 1
    if done >= rounds:
        standings_title = "予選 最終順位"
    elif done:
        standings_title = f"予選 順位（第{done}回戦まで）"
    else:
        standings_title = "予選 順位（結果はまだありません）" if cur else "予選 順位"
    top = {b: highlighted(rows, ko.get(b, [])) for b, rows in st.items()}
    places = sorted({_through(sum(not r.withdrawn for r in rows)) for rows in st.values()})
    legend = ("決勝トーナメント進出" if ko else "" if not any(top.values())
              else f"{places[-1]}位以内" + ("（3名以下のブロックは2位以内）" if len(places) > 1
                                            else ""))
    bracket = {b: _bracket(st[b], ko[b]) for b in st if ko.get(b)}
    winners = {b: _winners(x) for b, x in bracket.items()} if over else {}
    name_em = {b: max([4.0] + [_name_em(r.name) for r in rows]) for b, rows in st.items()}
    return _env.get_template("projector.html").render(
        title=t.settings.title, status_line=status, updated=updated, refresh=REFRESH_S,
        standings=list(st.items()), pairings=pairings, pairings_title=pairings_title,
        standings_title=standings_title, legend=legend, top=top, name_em=name_em,
        lots_shown={b: any(r.lot is not None for r in rows) for b, rows in st.items()},
        bracket=sorted(bracket.items()), winners=sorted(winners.items()), kind_ja=KIND_JA,
        bracket_title="決勝トーナメント 結果" if over else "決勝トーナメント")


def round_paths(folder: Path, round_no: int) -> dict[str, Path]:
    return {"pairings": folder / f"round{round_no}-pairings.html",
            "sheets": folder / f"round{round_no}-sheets.html"}


def ready_folder(folder: Path, files: list[Path] = ()) -> Path:
    """Make sure pages can be written in ``folder`` (made if missing), and that none of
    ``files`` is a file karuta keeps; one ``OutputError`` line otherwise.  Called before a
    change, so a page that cannot be written is said before anything is stored."""
    import tempfile

    from reader.base.errors import OutputError
    from reader.base.statefiles import check_output

    try:
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"cannot write the pages in {folder}: it is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".karuta-probe-"):
            pass
    except OSError as e:
        raise OutputError(f"cannot write the pages in {folder}: {e.strerror or e}") from None
    for f in files:
        check_output(f, "the page", replace=None)
    return folder


def write_round(t, round_no: int, out: Path | None = None) -> dict[str, Path]:
    """Write the pairing list and the score sheets of a round; returns their paths."""
    folder = out or pages_dir(t.path)
    paths = round_paths(folder, round_no)
    ready_folder(folder, list(paths.values()))
    atomic_write_text(paths["pairings"], render_pairings(t, round_no))
    atomic_write_text(paths["sheets"], render_sheets(t, round_no))
    return paths


def write_projector(t, updated: str = "", out: Path | None = None) -> Path:
    folder = out or pages_dir(t.path)
    path = folder / "standings.html"
    ready_folder(folder, [path])
    atomic_write_text(path, render_projector(t, updated))
    return path


class PagesNotWritten(KarutaError):
    """A round was paired and saved, but its pairing list or score sheets were not written
    (``round``: the round as stored, so the caller can still show it)."""

    def __init__(self, rnd, cause: Exception):
        super().__init__(f"round {rnd.no} is paired and saved, but its pages were not written "
                         f"({cause}): `karuta tournament sheets` writes them (pairing again "
                         "would pair the next round)")
        self.round = rnd


def pair_and_write(t, color: str | None = None, tables_csv=None,
                   out: Path | None = None) -> tuple:
    """Pair the next round and write its pairing list and score sheets: what
    ``karuta tournament pair`` and the desk's ``p`` both do.  The folder is checked before the
    round is stored (a folder that cannot be written changes nothing); returns ``(round,
    paths)``; ``PagesNotWritten`` if the round is stored but a page could not be written."""
    target = out or pages_dir(t.path)
    ready_folder(target, list(round_paths(target, t.current_round() + 1).values()))
    rnd = t.pair(color, tables_csv)
    try:
        paths = write_round(t, rnd.no, out)
    except KarutaError as e:
        raise PagesNotWritten(rnd, e) from None
    return rnd, paths
