"""``karuta stats``: per-poem practice statistics from the stats database.

Thin: parse options, read ``StatsDB.per_poem()``, print a table / JSON / CSV, or draw a plot
(per poem, and progress over sessions from ``StatsDB.per_session()``).  The table is followed
by each player of the matches played on a page (``StatsDB.per_player()``).
matplotlib (and numpy) are imported only for ``--plot``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from reader.base.errors import KarutaError
from reader.cli.options import replace_option
from reader.ui.term import pad


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _table(rows) -> str:
    head = f"{'no':>3} {'kimariji':<12} {'color':<6} {'taps':>4} {'median':>6} {'best':>6} {'ant':>3} " \
           f"{'flt':>3} {'rev':>4} {'ok':>3}  memory"
    out = [head]
    for r in rows:
        mem = r.memory_state
        if r.due:
            mem += f" due {r.due[:16].replace('T', ' ')}Z"
        if r.stability is not None:
            mem += f" S={r.stability:.1f}d"
        # kimariji are full-width: pad by display width, not by characters
        kim = pad(r.kimariji, 12)
        out.append(f"{r.poem:>3} {kim} {r.color:<6} {r.taps:>4} {_ms(r.median_reaction_ms):>6} "
                   f"{_ms(r.best_reaction_ms):>6} {r.anticipations:>3} {r.faults:>3} {r.reviews:>4} "
                   f"{r.reviews_correct:>3}  {mem}")
    return "\n".join(out)


def _players(players) -> str:
    """Each named player of the matches played on a phone's or tablet's page, and the takes
    of an uncalibrated device left out of their reaction times."""
    out = ["players (matches on a phone or tablet):"]
    for p in players:
        line = (f"  {pad(p.name, 24)} {p.taps:>4} taps · {p.takes} taken · {p.faults} faults · "
                f"median {_ms(p.median_reaction_ms)} ms ({p.timed} timed)")
        if p.uncalibrated:
            line += (f" · {p.uncalibrated} take{'s' if p.uncalibrated != 1 else ''} of an "
                     "uncalibrated device left out")
        out.append(line)
    return "\n".join(out)


def _player_json(p) -> dict:
    """A player's figures for ``--json``, beside the poems' objects: ``{"player": name, "taps",
    "takes", "faults", "median_reaction_ms", "timed", "uncalibrated"}`` (the text line's)."""
    d = p.to_dict()
    return {"player": d.pop("name"), **d}


def _japanese_font() -> None:
    """Japanese labels on a fresh machine: matplotlib-fontja's IPAex Gothic, else the system's."""
    try:
        import matplotlib_fontja  # noqa: F401  (registers IPAexGothic and selects it)
        return
    except ImportError:
        pass
    import matplotlib
    from matplotlib import font_manager

    from reader.ui.window import font_path

    path = font_path()
    if path is None:
        raise KarutaError("no Japanese font for the plot: pip install matplotlib-fontja")
    font_manager.fontManager.addfont(path)
    matplotlib.rc("font", family=font_manager.FontProperties(fname=path).get_name())


_COLOR_RGB = {"blue": "#2f6db5", "pink": "#e58fb0", "yellow": "#e3c02b", "green": "#3f9b54",
              "orange": "#ee8a2a"}


def figure(rows, sessions=()):
    """The plot as a matplotlib figure (the caller closes it): reaction times per poem (median
    bar, best dot), FSRS stability per poem, and progress over sessions (``sessions``:
    ``StatsDB.per_session()``): each session's median reaction (left axis) and its accuracy,
    taps and memory answers apart (right axis, %)."""
    try:
        import matplotlib
    except ImportError:
        raise KarutaError("--plot needs matplotlib: pip install matplotlib matplotlib-fontja") from None
    matplotlib.use("Agg")
    _japanese_font()
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.median_reaction_ms is not None]
    known = [r for r in rows if r.stability is not None]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 10.5), dpi=100)
    for ax, data, title in ((ax1, timed, "反応時間（中央値の棒・最速の点）"),
                            (ax2, known, "記憶の安定度（FSRS、五色の色）")):
        ax.set_title(title)
        if not data:
            _no_data(ax)
            continue
        xs = range(len(data))
        labels = [f"{r.poem} {r.kimariji}" for r in data]
        colors = [_COLOR_RGB.get(r.color, "#888888") for r in data]
        if ax is ax1:
            ax.bar(xs, [r.median_reaction_ms for r in data], color=colors)
            ax.plot(xs, [r.best_reaction_ms for r in data], "k.", markersize=8)
            ax.set_ylabel("ミリ秒")
        else:
            ax.bar(xs, [r.stability for r in data], color=colors)
            ax.set_ylabel("日")
        ax.set_xticks(list(xs), labels, rotation=90, fontsize=8 if len(data) > 40 else 10)
    _progress(ax3, list(sessions))
    fig.tight_layout()
    return fig


def _no_data(ax) -> None:
    ax.text(0.5, 0.5, "データなし", ha="center", va="center", transform=ax.transAxes, fontsize=16)
    ax.set_xticks([])
    ax.set_yticks([])


#: the progress panel's title (tests find the panel by it)
PROGRESS_TITLE = "上達の記録（セッションごと：反応時間の中央値・正答率）"


def _progress(ax, sessions) -> None:
    """Progress over time: one x position a session (oldest left, labelled with its date and
    kind), its median reaction as a line on the left axis, its accuracy on a twin right axis
    (taps: speed drill and practice; answers: memory drill)."""
    ax.set_title(PROGRESS_TITLE)
    if not sessions:
        _no_data(ax)
        return
    xs = list(range(len(sessions)))
    kind_ja = {"speed": "スピード", "memory": "記憶", "practice": "練習試合"}
    labels = [f"{s.started.astimezone().strftime('%m-%d %H:%M')}\n{kind_ja.get(s.kind, s.kind)}"
              for s in sessions]
    rt = [(x, s.median_reaction_ms) for x, s in zip(xs, sessions) if s.median_reaction_ms is not None]
    lines = []
    if rt:
        lines += ax.plot([x for x, _ in rt], [v for _, v in rt], "o-", color="#333333",
                         label="反応時間（中央値、ミリ秒）")
    ax.set_ylabel("ミリ秒")
    # from 0, as the bars above; the top third is the legend's (one row across)
    ax.set_ylim(0, 1.45 * max([v for _, v in rt], default=1000))
    right = ax.twinx()
    for attr, colour, label in (("tap_accuracy", "#ee8a2a", "取りの正答率（％）"),
                                ("review_accuracy", "#2f6db5", "記憶ドリルの正答率（％）")):
        pts = [(x, getattr(s, attr)) for x, s in zip(xs, sessions) if getattr(s, attr) is not None]
        if pts:
            lines += right.plot([x for x, _ in pts], [100 * v for _, v in pts], "s--",
                                color=colour, label=label)
    right.set_ylim(0, 145)
    right.set_yticks(range(0, 101, 20))
    right.set_ylabel("％")
    step = -(-len(xs) // 30)  # at most 30 labels: every step-th session is named
    ax.set_xticks(xs[::step], labels[::step], rotation=90 if len(xs) > 12 else 0,
                  fontsize=8 if len(xs) > 20 else 9)
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.legend(lines, [ln.get_label() for ln in lines], loc="upper left", ncol=3, fontsize=9)


def plot(rows, path: Path, sessions=()) -> None:
    """``figure`` drawn whole, then written to ``path`` (the file is the whole picture or the
    one before)."""
    import io

    import matplotlib.pyplot as plt

    from reader.base.files import atomic_write_bytes
    from reader.base.statefiles import OUTPUT_MARK

    fig = figure(rows, sessions)
    try:
        png = io.BytesIO()
        fig.savefig(png, format="png", metadata={"Software": OUTPUT_MARK})
    finally:
        plt.close(fig)
    atomic_write_bytes(path, png.getvalue())


@click.command("stats")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON: one object per poem (\"poem\": its number), then one per "
                   "player of the matches on a phone or tablet (\"player\": the name).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw reaction times and memory stability per poem, and progress over "
                   "sessions (reaction, accuracy), to FILE.png.")
@click.option("--export", type=click.Choice(["csv"]), default=None, help="Export the per-poem table.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --export: write to FILE instead of stdout.")
@click.option("--all", "all_poems", is_flag=True, help="All 100 poems, not only those with data.")
@replace_option()
def stats(as_json, plot_path, export, out, all_poems, replace):
    """Per-poem practice statistics: taps, reaction times, anticipations, faults, memory state.

    \b
    Reaction times count right taps that were not anticipations (ms from the kimariji).
    Matches played on a phone or tablet (practice --web) add each player by name; a take
    of a device never calibrated has no reaction time (left out, and counted).
    The data lives in the per-user data folder (KARUTA_DATA_DIR overrides it).

    \b
    Examples:
      karuta stats
      karuta stats --json --all
      karuta stats --plot progress.png
      karuta stats --export csv --out stats.csv
    """
    from reader.drills.stats import StatsDB

    if out is not None and export is None:
        raise click.UsageError("--out goes with --export")
    if plot_path is not None and plot_path.suffix.lower() != ".png":
        raise click.UsageError(f"--plot writes PNG: give a FILE.png, not {plot_path.name}")
    from reader.base.statefiles import check_distinct, check_output

    for opt, path in (("--out", out), ("--plot", plot_path)):
        if path is not None:  # before the database is opened: the stats database itself too
            check_output(path, opt, replace=replace)
    check_distinct(("--out", out), ("--plot", plot_path))  # the plot would replace the CSV
    with StatsDB(reading=True) as db:
        # found damaged now (kept aside, what could be read copied into a new one): what was
        # read is shown, and the command ends with that one line and exit 1
        damaged = db.notice
        rows = db.per_poem(only_with_data=not all_poems)
        players = db.per_player() if as_json or not (export or plot_path) else []
        sessions = db.per_session() if plot_path is not None else ()
        if export == "csv":
            if out is None:
                db.export_csv(sys.stdout, only_with_data=not all_poems)
            else:  # whole or not at all: a failure leaves the file as it was
                import io

                from reader.base.statefiles import write_output_text

                buf = io.StringIO()
                db.export_csv(buf, only_with_data=not all_poems)
                write_output_text(out, buf.getvalue())
                click.echo(f"wrote {len(rows)} poems to {out}", err=True)
    if plot_path is not None:
        plot(rows, plot_path, sessions)
        click.echo(f"wrote {plot_path}", err=True)
    if export or (plot_path and not as_json):
        pass
    elif as_json:
        click.echo(json.dumps([r.to_dict() for r in rows] + [_player_json(p) for p in players],
                              ensure_ascii=False, indent=1))
    elif rows:
        click.echo(_table(rows))
        if players:
            click.echo(_players(players))
    elif not damaged:
        kept = sorted(p.name for p in db.path.parent.glob(db.path.name + ".corrupt-*")
                      if p.name[-1].isdigit())
        click.echo("no answers recorded yet: try 'karuta drill memory'" +
                   (f" (a damaged database is kept beside it: {', '.join(kept)})" if kept else ""))
    if damaged:
        raise KarutaError(damaged)
