"""Paper and screens: print-ready HTML (A4) and the projector page.

- ``pairings.html``: the pairing list of a round (per block: table, seats A/B/C, group, wins);
- ``sheets.html``: one score sheet per table, four to an A4 page, to cut and hand out;
- ``standings.html``: standings per block and the knock-out bracket for a projector; it
  reloads itself every few seconds (``<meta http-equiv="refresh">``) and the app rewrites it
  after every entry (atomically: a reload never sees half a file).

Pages use IPAex Gothic through CSS (installed by scripts/setup), so names in kanji print in
a proper Japanese font; jinja2 escapes every name.  Printing: open the file in a browser and
print (A4 is set by ``@page``), or ``chromium --headless --print-to-pdf``.
The time shown on the projector is passed in (``updated``): nothing here reads the clock.
"""
from __future__ import annotations

from pathlib import Path

import jinja2
import poems

from reader.base.files import atomic_write_text

__all__ = ["render_pairings", "render_sheets", "render_projector", "write_round",
           "write_projector", "pages_dir", "round_paths", "ready_folder", "REFRESH_S"]

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
    return ROUND_JA[stage].format(n=round_no)


def _common(t, round_no: int) -> dict:
    info = t.round_info(round_no)
    return {"title": t.settings.title, "round_title": _round_title(t, round_no),
            "color": info["color"], "color_ja": poems.COLOR_JA[info["color"]],
            "reads": 17}


def render_pairings(t, round_no: int) -> str:
    tables = t.tables(round_no)
    by_block: dict[str, list] = {}
    for tb in tables:
        by_block.setdefault(tb.block, []).append(tb)
    groups = {p["id"]: p["group"] for p in t.players()}
    wins = {}
    for rows in t.standings().values():
        for r in rows:
            wins[r.id] = r.wins
    return _env.get_template("pairings.html").render(
        **_common(t, round_no), tables=tables, by_block=sorted(by_block.items()), groups=groups,
        wins=wins, players=sum(len(tb.seats) for tb in tables))


def render_sheets(t, round_no: int) -> str:
    return _env.get_template("sheets.html").render(**_common(t, round_no),
                                                  tables=t.tables(round_no))


def render_projector(t, updated: str = "") -> str:
    st = t.standings()
    cur = t.current_round()
    if cur:
        info = t.round_info(cur)
        missing = len(t.missing_results(cur))
        total = len(t.tables(cur))
        status = (f"{_round_title(t, cur)}（{poems.COLOR_JA[info['color']]}） · 結果 "
                  f"{total - missing}/{total} 卓")
    else:
        status = "組み合わせ前"
    bracket = {b: [] for b in st}
    for b, ms in t.knockout().items():
        bracket[b] = ms
    champions = t.champions()
    return _env.get_template("projector.html").render(
        title=t.settings.title, status_line=status, updated=updated, refresh=REFRESH_S,
        standings=list(st.items()),
        lots_shown={b: any(r.lot is not None for r in rows) for b, rows in st.items()},
        bracket=bracket, champions={b: champions.get(b) for b in st}, kind_ja=KIND_JA)


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
        check_output(f, "the page")
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
