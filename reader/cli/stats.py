"""``karuta stats``: per-poem practice statistics from the stats database.

Thin: parse options, read ``StatsDB.per_poem()``, print a table / JSON / CSV, or draw a plot.
matplotlib (and numpy) are imported only for ``--plot``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from reader.base.errors import KarutaError
from reader.cli.options import replace_option


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
        kim = r.kimariji + " " * max(0, 12 - 2 * len(r.kimariji))
        out.append(f"{r.poem:>3} {kim} {r.color:<6} {r.taps:>4} {_ms(r.median_reaction_ms):>6} "
                   f"{_ms(r.best_reaction_ms):>6} {r.anticipations:>3} {r.faults:>3} {r.reviews:>4} "
                   f"{r.reviews_correct:>3}  {mem}")
    return "\n".join(out)


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


def plot(rows, path: Path) -> None:
    """Two panels: reaction times per poem (median bar, best dot) and FSRS stability per poem."""
    try:
        import matplotlib
    except ImportError:
        raise KarutaError("--plot needs matplotlib: pip install matplotlib matplotlib-fontja") from None
    matplotlib.use("Agg")
    _japanese_font()
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.median_reaction_ms is not None]
    known = [r for r in rows if r.stability is not None]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 7), dpi=100)
    try:
        for ax, data, title in ((ax1, timed, "反応時間（中央値の棒・最速の点）"),
                                (ax2, known, "記憶の安定度（FSRS、五色の色）")):
            ax.set_title(title)
            if not data:
                ax.text(0.5, 0.5, "データなし", ha="center", va="center", transform=ax.transAxes,
                        fontsize=16)
                ax.set_xticks([])
                ax.set_yticks([])
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
        fig.tight_layout()
        import io

        from reader.base.files import atomic_write_bytes
        from reader.base.statefiles import OUTPUT_MARK

        png = io.BytesIO()  # drawn whole first: the file is the whole picture or the one before
        fig.savefig(png, format="png", metadata={"Software": OUTPUT_MARK})
    finally:
        plt.close(fig)
    atomic_write_bytes(path, png.getvalue())


@click.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per poem).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw reaction times and memory stability to FILE.png.")
@click.option("--export", type=click.Choice(["csv"]), default=None, help="Export the per-poem table.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --export: write to FILE instead of stdout.")
@click.option("--all", "all_poems", is_flag=True, help="All 100 poems, not only those with data.")
@replace_option()
def stats(as_json, plot_path, export, out, all_poems, replace):
    """Per-poem practice statistics: taps, reaction times, anticipations, faults, memory state.

    \b
    Reaction times count right taps that were not anticipations (ms from the kimariji).
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
        plot(rows, plot_path)
        click.echo(f"wrote {plot_path}", err=True)
    if export or (plot_path and not as_json):
        pass
    elif as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], ensure_ascii=False, indent=1))
    elif rows:
        click.echo(_table(rows))
    elif not damaged:
        kept = sorted(p.name for p in db.path.parent.glob(db.path.name + ".corrupt-*")
                      if p.name[-1].isdigit())
        click.echo("no answers recorded yet: try 'karuta drill memory'" +
                   (f" (a damaged database is kept beside it: {', '.join(kept)})" if kept else ""))
    if damaged:
        raise KarutaError(damaged)
