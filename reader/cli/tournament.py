"""``karuta tournament``: a goshiki competition day (thin click layer over
``reader.tournament``).  Every command takes ``--json`` (one JSON object on stdout) and
``--file`` (the tournament file, default ``<data folder>/tournament/tournament.sqlite``).
After every change the projector page (``<file stem>-pages/standings.html``) is rewritten.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from reader.base.errors import KarutaError
from reader.base.seeds import pick_seed
from reader.cli.bounds import MAX_MEMORIZE_MIN, UTF8, finite_range
from reader.cli.options import replace_option

#: a round or table number (any larger is a typo; SQLite integers stop at 2**63)
NUMBER = click.IntRange(1, 99_999)


def _default_file() -> Path:
    from reader.base.dirs import data_dir

    return data_dir() / "tournament" / "tournament.sqlite"


def _common(f):
    @click.option("--file", "-f", "file", type=click.Path(dir_okay=False), default=None,
                  help="The tournament file (default: the data folder's tournament/tournament.sqlite).")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @functools.wraps(f)
    def wrapper(*a, **kw):
        import sqlite3

        try:
            return f(*a, **kw)
        except sqlite3.Error as e:  # (the store says what it knows; this is the rest)
            from reader.tournament.integrity import sql_error

            raise sql_error(Path(kw["file"]) if kw.get("file") else _default_file(), e) from None

    return wrapper


def _now() -> str:
    from reader.cli import command_clock

    return command_clock().now().astimezone().strftime("%H:%M:%S")  # (local time)


def _open(file, reading: bool = False):
    """The tournament in ``file``, to use in a ``with`` block (its connection is closed at the
    end); after every change it rewrites the projector page.  ``reading``: the command only
    reads it, so a file in a read-only folder or disk is shown as it is."""
    from reader.tournament.store import Tournament

    path = Path(file) if file else _default_file()
    t = Tournament.open(path, reading=reading)
    t.on_change = lambda tt: _projector(tt, "the change is saved")
    return t


def _projector(t, saved: str) -> Path | None:
    """Rewrite the projector page after a change that is already stored: a page that cannot
    be written is one warning line saying so (exit 0: a retry would enter the change twice)."""
    from reader.cli import warn
    from reader.tournament import pages

    try:
        return pages.write_projector(t, _now())
    except KarutaError as e:
        warn(f"{saved}, but the projector page was not written ({e}): "
             "`karuta tournament page` writes it again")
        return None


def _out_folder(out: str | None) -> Path | None:
    """--out for pages: an existing folder, or a new one in an existing folder (checked before
    anything is changed, so a bad --out leaves the tournament as it was)."""
    if not out:
        return None
    p = Path(out)
    try:
        if p.exists() and not p.is_dir():
            raise KarutaError(f"--out {out}: not a folder")
        if not p.exists() and not p.parent.is_dir():
            raise KarutaError(f"--out {out}: folder {p.parent} does not exist")
    except OSError as e:
        raise KarutaError(f"--out {out}: {e.strerror or e}") from None
    return p


def _emit(as_json: bool, data, text: str | None = None) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
    elif text is not None:
        click.echo(text)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def tournament():
    """Run a goshiki (五色百人一首) competition day: players and blocks, six preliminary
    rounds, standings, semi-finals and final, the reading, paper and a projector page.

    \b
    A day:
      karuta tournament new --players players.csv --blocks 8 --seed 7
      karuta tournament pair                 # round 1: pairing list + score sheets (HTML, A4)
      karuta tournament read                 # the round's goshiki reading (30 s memorisation)
      karuta tournament result 12 9 7        # table 12: 9 cards to 7 (seat order)
      karuta tournament result 5 山田=8 佐藤=8 --fault 佐藤
      karuta tournament undo                 # take back the last entry
      karuta tournament standings
      karuta tournament pair                 # ... round 6, then semi-finals, then the final
      karuta tournament export --csv all.csv --out all.json
    Everything is saved after every entry: after a crash, `karuta tournament new --resume`
    (or any command) goes on from the file.
    """


def _settings_text(t) -> str:
    s = t.status().to_json()
    blocks = ", ".join(f"{b} {n}" for b, n in s["blocks"].items())
    colours = (f"colour {t.settings.colors[0]} all day"
               if t.settings.color_policy == "one" else "colours " + ", ".join(
                   dict.fromkeys(t.settings.colors[:t.settings.rounds])))
    lines = [f"{s['title']}: {s['players']} players in {len(s['blocks'])} blocks ({blocks}); "
             f"{s['rounds']} preliminary rounds, {s['reads']} cards read, {colours}; "
             f"seed {s['seed']}; file {s['file']}"]
    if s["round"]:
        miss = s["missing"]
        lines.append(f"round {s['round']} ({s['stage']}, {s['color']}): " +
                     (f"waiting for table{'s' if len(miss) > 1 else ''} "
                      f"{', '.join(map(str, miss))}" if miss else "all results in"))
        earlier: dict[int, list[int]] = {}
        for m in s["missing_all"]:
            if m["round"] != s["round"]:
                earlier.setdefault(m["round"], []).append(m["table"])
        for r, ts in earlier.items():
            lines.append(f"round {r}: no result for table{'s' if len(ts) > 1 else ''} "
                         f"{', '.join(map(str, ts))} (enter it before the next pairing: "
                         f"`karuta tournament result {ts[0]} ... --round {r}`)")
    else:
        lines.append("no round paired yet: `karuta tournament pair`")
    for b, name in s["champions"].items():
        lines.append(f"block {b} winner: {name}")
    return "\n".join(lines)


@tournament.command()
@_common
@click.option("--players", "players_csv", type=click.Path(dir_okay=False), default=None,
              help="CSV with name, group, block columns (UTF-8 or Shift_JIS).")
@click.option("--blocks", type=click.IntRange(1, 64), default=None,
              help="Number of blocks; players without a block are balanced over them.")
@click.option("--rounds", type=int, default=6, show_default=True, help="Preliminary rounds.")
@click.option("--colors", type=UTF8, default=None, metavar="C1,C2,...",
              help="The colour of each round in order, or one colour for the whole day "
                   "(default: one seeded colour all day: from round 2 on each table plays on "
                   "the 20 cards the players before laid out).")
@click.option("--color-each-round", is_flag=True,
              help="A different colour each round (a seeded order of the five) instead.")
@click.option("--reads", type=click.IntRange(1, 20), default=17, show_default=True,
              help="Cards read in a match (seed 004: 17 of the colour's 20); a result's cards "
                   "add up to at most this (plus tie-break cards in a knock-out match).")
@click.option("--seed", type=int, default=None,
              help="Seed for blocks, pairings, lots and readings (printed when not given).")
@click.option("--mix-groups/--no-mix-groups", default=True, show_default=True,
              help="Keep players of one group/class apart where possible.")
@click.option("--third-place", is_flag=True, help="Play a third-place match per block.")
@click.option("--title", type=UTF8, default="五色百人一首大会", show_default=True, help="Printed on every page.")
@click.option("--resume", is_flag=True, help="Go on with the tournament already in --file.")
def new(file, as_json, players_csv, blocks, rounds, colors, color_each_round, reads, seed,
        mix_groups, third_place, title, resume):
    """Start a tournament from a players' CSV (or --resume the one in the file)."""
    from reader.tournament import pages
    from reader.tournament.players import read_csv
    from reader.tournament.store import Settings, Tournament

    path = Path(file) if file else _default_file()
    if not resume:  # any other file there is said as such (a tournament: the store's line)
        from reader.base.statefiles import check_output, state_file_kind

        if state_file_kind(path) != "a karuta tournament file":
            check_output(path, "--file", same_kind="a karuta tournament file", resume="--resume")
    if resume:
        with _open(path) as t:
            pages.write_projector(t, _now())
            _emit(as_json, t.status().to_json(), _settings_text(t))
        return
    if not players_csv:
        raise KarutaError("give the players: --players FILE.csv (columns name, group, block), "
                          "or --resume to go on with the tournament in the file")
    from reader.base.limits import TITLE_MAX, check_name

    # (as the file is read back: a title it would call damaged is not written)
    check_name(title, "title", limit=TITLE_MAX)
    rows = read_csv(players_csv)
    if seed is None:
        seed = pick_seed()
    if not file:
        from reader.base.dirs import make_folder

        make_folder(path.parent, "the tournament folder")
    color_list = tuple(c for c in (colors or "").replace("、", ",").split(",") if c.strip())
    if color_list and color_each_round:
        raise KarutaError("--colors gives the colours: leave out --color-each-round")
    policy = "each-round" if color_each_round else "one"
    with Tournament.create(path, rows, Settings(rounds=rounds, colors=color_list,
                                                mix_groups=mix_groups, third_place=third_place,
                                                seed=seed, title=title, reads=reads,
                                                color_policy=policy), blocks=blocks) as t:
        out = _projector(t, f"the tournament is saved in {path}")
        data = dict(t.status().to_json(), projector=str(out) if out else None)
        _emit(as_json, data, _settings_text(t) + (f"\nprojector page: {out}" if out else ""))


@tournament.command()
@_common
def status(file, as_json):
    """Where the day stands: the round, its colour, tables still without a result."""
    with _open(file, reading=True) as t:
        _emit(as_json, t.status().to_json(), _settings_text(t))


@tournament.command()
@_common
def players(file, as_json):
    """List the players by block."""
    with _open(file, reading=True) as t:
        ps = t.players()
    text = "\n".join(f"{p.block:>3}  {p.name}  {p.group}"
                     + (f"  (withdrawn before round {p.withdrawn_round})" if p.withdrawn else "")
                     + (f"  (joined at round {p.joined_round})" if p.joined_round > 1 else "")
                     for p in ps)
    _emit(as_json, {"players": [p.to_json() for p in ps]}, text)


@tournament.command()
@_common
@click.argument("name", type=UTF8)
@click.option("--group", type=UTF8, default="", help="Group/class.")
@click.option("--block", type=UTF8, default=None, help="Block (default: the smallest).")
def add(file, as_json, name, group, block):
    """Add a player on the day (plays from the next round paired)."""
    with _open(file) as t:
        p = t.add_player(name, group, block)
    _emit(as_json, {"name": p.name, "group": p.group, "block": p.block,
                    "plays_from_round": p.joined_round},
          f"added {p.name} to block {p.block}: plays from round {p.joined_round}")


@tournament.command()
@_common
@click.argument("name", type=UTF8)
def withdraw(file, as_json, name):
    """Withdraw a player: not paired from the next round on (results so far stay)."""
    with _open(file) as t:
        p = t.withdraw(name)
    _emit(as_json, {"name": p.name, "not_paired_from_round": p.withdrawn_round},
          f"{p.name} withdrawn: not paired from round {p.withdrawn_round} on")


def _round_text(info: dict) -> str:
    from reader.tournament.desk import round_text

    return round_text(info)


@tournament.command()
@_common
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for the pairing list and score sheets (default: the pages folder).")
@click.option("--color", default=None, metavar="COLOUR",
              help="This round's colour instead of the one set at the start.")
@click.option("--tables", "tables_csv", type=click.Path(dir_okay=False), default=None,
              help="A preliminary round paired by hand: a CSV with table, name (one row per "
                   "player, seats in row order).")
def pair(file, as_json, out, color, tables_csv):
    """Pair the next round (preliminary, then semi-finals, then the final) and write its
    pairing list and score sheets."""
    from reader.tournament import desk, pages

    folder = _out_folder(out)
    with _open(file) as t:
        try:
            info, text = desk.pair(t, color, tables_csv, folder)
        except pages.PagesNotWritten as e:
            _emit(as_json, e.info, e.text)
            raise KarutaError(str(e)) from None
    _emit(as_json, info, text)


@tournament.command()
@_common
def unpair(file, as_json):
    """Take back the newest round's pairing (only while it has no results)."""
    with _open(file) as t:
        r = t.unpair()
    _emit(as_json, {"round": r, "unpaired": True}, f"round {r} unpaired")


@tournament.command()
@_common
@click.option("--round", "round_no", type=NUMBER, default=None, help="Which round (default: the current).")
def tables(file, as_json, round_no):
    """Show a round's tables and the results entered."""
    with _open(file, reading=True) as t:
        info = t.round(round_no or t.current_round()).to_json()
    _emit(as_json, info, _round_text(info))


@tournament.command()
@_common
@click.argument("table", type=NUMBER, required=False)
@click.argument("counts", type=UTF8, nargs=-1)
@click.option("--fault", "faults", type=UTF8, multiple=True, metavar="NAME",
              help="A player who faulted (repeatable; for the record).")
@click.option("--round", "round_no", type=NUMBER, default=None, help="Round (default: the current).")
@click.option("--correct", is_flag=True, help="Replace the result the table already has.")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="A finished `karuta match keep` goshiki log for TABLE (seats A, B, C).")
@click.option("--csv", "csv_file", type=click.Path(dir_okay=False), default=None,
              help="Many tables at once: a CSV with table, name, cards (and fault, tiebreak) "
                   "columns.")
@click.option("--tiebreak", type=click.IntRange(0, 19), default=0, metavar="N",
              help="A knock-out match: the tie-break cards read in it after a tie (the cards "
                   "add up to at most the cards read plus these).")
def result(file, as_json, table, counts, faults, round_no, correct, log_file, csv_file,
           tiebreak):
    """Enter a table's result: cards taken, in seat order (A B [C]) or NAME=N.

    \b
      karuta tournament result 12 9 7
      karuta tournament result 5 山田=8 佐藤=8 --fault 佐藤
      karuta tournament result 3 9 8 --tiebreak 1    # a final, one card read after 8-8
      karuta tournament result 7 --log table7.jsonl
      karuta tournament result --csv round3.csv
    """
    if csv_file:
        if table is not None or counts or log_file or tiebreak:
            raise KarutaError("--csv enters many tables: give no TABLE, counts, --log or "
                              "--tiebreak with it (a tiebreak column gives those)")
        with _open(file) as t:
            done = [x.to_json() for x in t.enter_csv(csv_file, round_no, correct)]
        _emit(as_json, {"tables": done}, "\n".join(_table_line(x) for x in done))
        return
    if table is None:
        raise KarutaError("which table? e.g. `karuta tournament result 12 9 7`")
    if log_file and (counts or tiebreak):
        raise KarutaError("--log gives the counts and the tie-break cards: give no counts or "
                          "--tiebreak with it")
    with _open(file) as t:
        if log_file:
            r = t.enter_log(table, log_file, round_no, correct).to_json()
        else:
            from reader.tournament.desk import enter_tokens

            r = enter_tokens(t, table, counts, faults, round_no, correct,
                             tiebreak).to_json()
    _emit(as_json, r, _table_line(r))


def _table_line(r: dict) -> str:
    from reader.tournament.desk import result_line

    return result_line(r)


@tournament.command()
@_common
@click.option("--table", "table_no", type=NUMBER, default=None, help="Undo that table's last entry.")
@click.option("--round", "round_no", type=NUMBER, default=None)
def undo(file, as_json, table_no, round_no):
    """Undo the last result entered (a corrected result goes back to the one before)."""
    with _open(file) as t:
        r = t.undo(table_no, round_no).to_json()
    u = r["undone"]
    now = r["table"]
    text = (f"undone: round {u['round']} table {u['table']} {'-'.join(map(str, u['cards']))}; "
            + ("now " + "-".join(map(str, now["cards"])) if now["cards"] else "no result now"))
    _emit(as_json, r, text)


def _standings_text(st: dict) -> str:
    lines = []
    for block, rows in st.items():
        lot = any(r["lot"] is not None for r in rows)
        lines.append(f"block {block}")
        lines.append(f"  {'rank':>4}  {'W':>2} {'D':>2} {'L':>2} {'cards':>5}"
                     + ("  lot" if lot else "") + "  name")
        for r in rows:
            rank = f"{r['rank']}{'=' if r['tied'] else ''}"
            lines.append(f"  {rank:>4}  {r['wins']:>2} {r['draws']:>2} {r['losses']:>2} "
                         f"{r['cards']:>5}" + (f"  {r['lot'] if r['lot'] else '':>3}" if lot else "")
                         + f"  {r['name']}" + ("  (withdrawn)" if r["withdrawn"] else ""))
    return "\n".join(lines)


@tournament.command()
@_common
@click.option("--block", type=UTF8, default=None, help="Only this block.")
def standings(file, as_json, block):
    """Standings per block: wins, then cards taken, then the lot (drawn when needed)."""
    with _open(file, reading=True) as t:
        st = {b: [r.to_json() for r in rows] for b, rows in t.standings(block).items()}
        if block and not st:
            raise KarutaError(f"no block {block} (blocks: {', '.join(t.blocks())})")
        ko = {b: [m.to_json() for m in ms] for b, ms in t.knockout().items()}
        data = {"standings": st, "knockout": ko, "lots": [x.to_json() for x in t.lots()],
                "champions": t.champions()}
    text = _standings_text(st)
    for b, ms in ko.items():
        if block and b != block:
            continue
        for m in ms:
            text += (f"\n{b} {m['kind']} (table {m['table']}): " + " v ".join(m["players"])
                     + (f"  {'-'.join(map(str, m['cards']))}" if m["cards"] else ""))
    _emit(as_json, data, text)


@tournament.command()
@_common
@click.option("--round", "round_no", type=NUMBER, default=None, help="Round (default: the current).")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Folder (default: the pages folder).")
def sheets(file, as_json, round_no, out):
    """Write a round's pairing list and score sheets again (print-ready HTML, A4)."""
    from reader.tournament import pages

    folder = _out_folder(out)
    with _open(file, reading=True) as t:
        r = round_no or t.current_round()
        t.round(r)  # one-line error for a round that is not paired
        paths = pages.write_round(t, r, folder)
    _emit(as_json, {k: str(v) for k, v in paths.items()},
          f"pairing list: {paths['pairings']}\nscore sheets: {paths['sheets']}")


@tournament.command()
@_common
def page(file, as_json):
    """Write the projector page (standings and bracket; it reloads itself) and print its path."""
    from reader.tournament import pages

    with _open(file, reading=True) as t:
        p = pages.write_projector(t, _now())
    _emit(as_json, {"projector": str(p), "refresh_s": pages.REFRESH_S},
          f"{p}  (open it in a browser on the projector; it reloads every {pages.REFRESH_S} s)")


@tournament.command()
@_common
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False), default=None,
              help="All results, one row per player per table.")
@click.option("--out", "json_out", type=click.Path(dir_okay=False), default=None,
              help="All results, players, standings and lots as JSON.")
@click.option("--bom/--no-bom", default=True, show_default=True,
              help="Begin the CSV with a byte order mark, so that Excel opens it as UTF-8 "
                   "(without it Excel on a Japanese PC shows the names garbled).")
@replace_option()
def export(file, as_json, csv_out, json_out, bom, replace):
    """Export every result (CSV and/or JSON); with neither, the JSON goes to stdout.
    The CSV is UTF-8 with a byte order mark (Excel opens it as it is)."""
    from reader.base.statefiles import check_distinct, check_output, write_output_text
    from reader.tournament import files

    for opt, path in (("--csv", csv_out), ("--out", json_out)):
        if path:
            check_output(path, opt, replace=replace)
    check_distinct(("--csv", csv_out), ("--out", json_out))
    with _open(file, reading=True) as t:
        data = files.export_json(t)
        table_csv = files.export_csv(t, bom) if csv_out else None
    if csv_out:
        write_output_text(csv_out, table_csv)
    if json_out:
        write_output_text(json_out, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    if not csv_out and not json_out:
        click.echo(json.dumps(data, ensure_ascii=False, indent=1))
        return
    written = [p for p in (csv_out, json_out) if p]
    _emit(as_json, {"written": written}, "wrote " + ", ".join(written))


@tournament.command()
@_common
@click.option("--round", "round_no", type=NUMBER, default=None, help="Round (default: the current).")
@click.option("--resume", is_flag=True, help="Continue this round's reading where it stopped.")
@click.option("--tiebreak", type=click.IntRange(1, 3), default=None, metavar="N",
              help="A knock-out tie: read the N-th extra card (with 17 read: the 18th, 19th, "
                   "20th of the order).")
@click.option("--memorize", type=finite_range(0, MAX_MEMORIZE_MIN), default=None, metavar="MIN",
              help="Memorisation minutes (default 0.5 = 30 s, seed 004).")
@click.option("--window", is_flag=True, help="In a large-text window instead of the terminal.")
@click.option("--device", default=None, help="Sound device.")
@click.option("--backend", type=click.Choice(["sounddevice", "pygame"]), default="sounddevice")
@click.option("--voice", "voice_spec", default=None, metavar="NAME|PATH", help="The voice.")
@click.option("--speed", type=finite_range(0.25, 4), default=None, help="Reading pace (goshiki 1.8).")
def read(file, as_json, round_no, resume, tiebreak, memorize, window, device, backend,
         voice_spec, speed):
    """Read the round's goshiki reading for every table at once: its colour, 30 s
    memorisation, 「ご用意よければ 空札一枚」, the karafuda poem, 17 poems (club mode:
    p holds at the next silence while a referee's hand is up, q quits, --resume goes on)."""
    from reader.tournament.reading import run_round_reading

    with _open(file) as t:
        r = run_round_reading(t, round_no, resume=resume, tiebreak=tiebreak, memorize=memorize,
                              window=window, device=device, backend=backend,
                              voice_spec=voice_spec, speed=speed,
                              echo=(lambda s: click.echo(s, err=True)) if as_json
                              else click.echo)
    if as_json:
        click.echo(json.dumps(r, ensure_ascii=False))


@tournament.command()
@_common
def desk(file, as_json):
    """The results desk: type one line per score sheet as they come in (? for help).

    \b
      12 9 7          table 12: A took 9, B 7        12 山田=9 佐藤=7
      12 9 7 !佐藤    ... 佐藤 faulted                c 12 8 8   correct table 12
      u / u 12        undo                           m  tables still missing
      s               standings (top four)
      p               pair the next round and write its pairing list and score sheets
      q               quit (everything is already saved)
    A bad line is answered with one line and changes nothing; the desk goes on.
    With --json every answer is one JSON line.
    """
    with _open(file) as t:
        _desk(t, as_json)


def _desk(t, as_json: bool) -> None:
    import sqlite3
    import sys

    from reader.tournament import desk as dk
    from reader.tournament.pages import PagesNotWritten

    if not as_json:
        click.echo(_settings_text(t))
        click.echo(dk.HELP)
    interactive = sys.stdin.isatty()
    while True:
        try:
            line = input("desk> " if interactive else "")
        except EOFError:
            break
        try:
            try:
                data, text = dk.handle(t, line)
            except sqlite3.Error as e:  # the store's own lines come as KarutaError already
                from reader.tournament.integrity import sql_error

                raise sql_error(t.path, e) from None
        except dk.Quit:
            break
        except PagesNotWritten as e:  # the round is stored: show it, and what is missing
            if as_json:
                click.echo(json.dumps(dict(e.info, error=str(e)), ensure_ascii=False))
            else:
                from reader.cli import warn

                click.echo(e.text)
                warn(str(e))
            continue
        except KarutaError as e:
            if as_json:
                click.echo(json.dumps({"error": str(e)}, ensure_ascii=False))
            else:
                from reader.cli import warn

                warn(str(e))
            continue
        if data is None:
            continue
        if as_json:
            click.echo(json.dumps(data, ensure_ascii=False))
        else:
            click.echo(text)
