"""The table of every ``karuta`` command and option, with absurd values for each (issue 12).

Used by tests/test_faults_values.py.  Each case is (id, argv, stdin); the base arguments make
the command otherwise valid and quick (tone voice, one card, a sound device that does not
exist, so an accepted value ends at "no such device" rather than playing).
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import signal
import sys
from pathlib import Path

import click
import pytest

LONG = "x" * 300
NOT_UTF8 = b"\xff\xfe\xfd".decode("utf-8", "surrogateescape")

FLOAT_VALUES = ["nan", "inf", "-inf", "1e308", "-1", "", "x", "1e-320"]
INT_VALUES = ["1e308", str(10 ** 30), "-1", "", "x", "nan"]
TEXT_VALUES = ["", LONG, NOT_UTF8, "-", ",,,", "0"]
PATH_VALUES = ["", LONG + ".wav", "/", "/nonexistent/folder/x.json", NOT_UTF8]

NO_DEVICE = "karuta-no-such-device"

T_FILE = "{tmp}/t.sqlite"

#: command path -> base argv (after "karuta"), before the option under test
BASES: dict[tuple[str, ...], list[str]] = {
    ("read",): ["read", "--voice", "tone", "--cards", "1", "--device", NO_DEVICE],
    ("render",): ["render", "--voice", "tone", "--cards", "1", "--out", "{tmp}/out.wav"],
    ("plan",): ["plan", "--voice", "tone", "--cards", "1"],
    ("poems",): ["poems"],
    ("kimariji",): ["kimariji"],
    ("match", "keep"): ["match", "keep", "--rules", "kyogi", "--log", "{tmp}/new-match.jsonl"],
    ("match", "replay"): ["match", "replay", "{tmp}/match.jsonl"],
    ("voice", "add"): ["voice", "add", "{tmp}/source"],
    ("voice", "check"): ["voice", "check", "tone"],
    ("voice", "list"): ["voice", "list"],
    ("voice", "record"): ["voice", "record", "mine", "--device", NO_DEVICE, "--play-device", NO_DEVICE],
    ("voice", "use"): ["voice", "use", "synth"],
    ("drill", "memory"): ["drill", "memory", "--count", "1"],
    ("drill", "speed"): ["drill", "speed", "--voice", "tone", "--cards", "1", "--device", NO_DEVICE],
    ("stats",): ["stats"],
    ("calibrate",): ["calibrate", "--device", NO_DEVICE],
    # karuta tournament: {tmp}/t.sqlite has round 1 paired (table 2's result in),
    # {tmp}/fresh.sqlite has no round yet (made by _populate)
    ("tournament", "new"): ["tournament", "new", "-f", "{tmp}/new.sqlite",
                            "--players", "{tmp}/players.csv", "--seed", "1"],
    ("tournament", "status"): ["tournament", "status", "-f", T_FILE],
    ("tournament", "players"): ["tournament", "players", "-f", T_FILE],
    ("tournament", "add"): ["tournament", "add", "新人", "-f", T_FILE],
    ("tournament", "withdraw"): ["tournament", "withdraw", "山田", "-f", T_FILE],
    ("tournament", "pair"): ["tournament", "pair", "-f", "{tmp}/fresh.sqlite",
                             "--out", "{tmp}/pages"],
    ("tournament", "unpair"): ["tournament", "unpair", "-f", "{tmp}/fresh.sqlite"],
    ("tournament", "tables"): ["tournament", "tables", "-f", T_FILE],
    ("tournament", "result"): ["tournament", "result", "1", "9", "7", "-f", T_FILE],
    ("tournament", "undo"): ["tournament", "undo", "-f", T_FILE],
    ("tournament", "standings"): ["tournament", "standings", "-f", T_FILE],
    ("tournament", "sheets"): ["tournament", "sheets", "-f", T_FILE, "--out", "{tmp}/pages"],
    ("tournament", "page"): ["tournament", "page", "-f", T_FILE],
    ("tournament", "export"): ["tournament", "export", "-f", T_FILE, "--out", "{tmp}/all.json"],
    ("tournament", "read"): ["tournament", "read", "-f", T_FILE, "--voice", "tone",
                             "--device", NO_DEVICE],
    ("tournament", "desk"): ["tournament", "desk", "-f", T_FILE],
    # karuta table: {tmp}/g.json (one composed poem) and {tmp}/c.json (made by _populate)
    ("table", "genkan", "new"): ["table", "genkan", "new", "{tmp}/new-g.json", "--seed", "1",
                                 "--player", "小町:4"],
    ("table", "genkan", "play"): ["table", "genkan", "play", "--save", "{tmp}/play-g.json",
                                  "--seed", "1", "--player", "小町:4", "--voice", "tone",
                                  "--device", NO_DEVICE],
    ("table", "genkan", "do"): ["table", "genkan", "do", "{tmp}/g.json", "kagaku 小町 4"],
    ("table", "genkan", "show"): ["table", "genkan", "show", "{tmp}/g.json"],
    ("table", "genkan", "log"): ["table", "genkan", "log", "{tmp}/g.json"],
    ("table", "genkan", "recite"): ["table", "genkan", "recite", "{tmp}/g.json", "1",
                                    "--voice", "tone", "--device", NO_DEVICE],
    ("table", "cards", "new"): ["table", "cards", "new", "{tmp}/new-c.json", "--seed", "1",
                                "--player", "tenjo:♠"],
    ("table", "cards", "play"): ["table", "cards", "play", "--save", "{tmp}/play-c.json",
                                 "--seed", "1", "--player", "tenjo:♠", "--voice", "tone",
                                 "--device", NO_DEVICE],
    ("table", "cards", "do"): ["table", "cards", "do", "{tmp}/c.json", "draw tenjo 1"],
    ("table", "cards", "show"): ["table", "cards", "show", "{tmp}/c.json"],
    ("table", "cards", "log"): ["table", "cards", "log", "{tmp}/c.json"],
    ("practice",): ["practice", "--bot-vs-bot", "1,1", "--seed", "1", "--cards", "1",
                    "--voice", "tone", "--device", NO_DEVICE],
}

#: options not fed absurd values, and why
SKIP = {
    "--window": "a flag", "--help": "click's", "--list-devices": "a flag",
}


def _values(param: click.Parameter) -> list[str]:
    t = param.type
    if isinstance(t, click.Choice):
        return ["", "nonsense", LONG]
    if isinstance(t, (click.types.IntParamType, click.IntRange)):
        return INT_VALUES
    if getattr(t, "name", "") == "float" or isinstance(t, click.FloatRange):
        return FLOAT_VALUES
    if isinstance(t, click.Path):
        if t.dir_okay and not t.file_okay:
            # a folder to write into: "/" would be a valid answer that writes into the real
            # root (the tests run as root), outside the test's folder
            return [v for v in PATH_VALUES if v != "/"]
        return PATH_VALUES
    return TEXT_VALUES


def cases() -> list[tuple[str, list[str]]]:
    from reader.cli import cli

    ctx = click.Context(cli)
    out: list[tuple[str, list[str]]] = []

    def walk(cmd, path: tuple[str, ...]):
        if isinstance(cmd, click.Group):
            for n in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, n), path + (n,))
            return
        base = BASES[path]
        n_arg = 0
        for p in cmd.params:
            if getattr(p, "is_flag", False) or isinstance(p.type, click.types.BoolParamType):
                continue
            if isinstance(p, click.Argument):
                at = len(path) + n_arg  # the base gives the arguments first, in order
                n_arg += 1
                for v in _values(p):
                    argv = base[:at] + [v] + base[at + 1:]
                    out.append((f"{' '.join(path)} <{p.name}>={_show(v)}", argv))
                continue
            opt = max(p.opts, key=len)
            if opt in SKIP:
                continue
            for v in _values(p):
                argv = _without(base, opt) + [opt, v]
                out.append((f"{' '.join(path)} {opt}={_show(v)}", argv))

    walk(cli, ())
    return out


def _without(base: list[str], opt: str) -> list[str]:
    """``base`` without ``opt`` and its value (the case gives its own)."""
    out, skip = [], False
    for a in base:
        if skip:
            skip = False
            continue
        if a == opt:
            skip = True
            continue
        out.append(a)
    return out


def _show(v: str) -> str:
    if v == LONG:
        return "long300"
    if v == LONG + ".wav":
        return "long300.wav"
    if v == NOT_UTF8:
        return "not-utf8"
    return repr(v)


# ---------------------------------------------------------------------------- harness
#: folders of files made once per test process (``made_once``), by name
_MADE: dict[str, Path] = {}


def made_once(dest: Path, make) -> None:
    """The files ``make(folder)`` makes, copied into ``dest``: made in a folder of their own
    the first time this test process asks (SQLite files and their fsyncs take a tenth of a
    second to make; a copy takes a millisecond, and some tables run their cases a thousand
    times), a byte-for-byte copy each later time."""
    key = f"{make.__module__}.{make.__qualname__}"
    if key not in _MADE:
        import atexit
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="karuta-test-made-"))
        atexit.register(shutil.rmtree, root, True)
        make(root)
        _MADE[key] = root
    shutil.copytree(_MADE[key], dest, dirs_exist_ok=True)


def _populate(tmp: Path) -> None:
    """The user's files a careless command could damage, in ``tmp`` (``made_once``)."""
    made_once(tmp, _make_files)


def _make_files(tmp: Path) -> None:
    (tmp / "source").mkdir()
    (tmp / "match.jsonl").write_text('{"rules": "kyogi", "A": [1, 2, 3], "B": [4, 5, 6]}\n')
    sessions = tmp / "data" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "last.json").write_text('{"kind": "karuta-club-session", "keep": "me"}')
    (tmp / "config").mkdir()
    (tmp / "config" / "voice.toml").write_text('default = "synth"\n')
    _populate_tournament(tmp)
    _populate_table(tmp)


PLAYERS = [("山田", "1組"), ("佐藤", "1組"), ("鈴木", "2組"), ("田中", "2組")]


def _populate_tournament(tmp: Path) -> None:
    """players.csv; fresh.sqlite (no round yet); t.sqlite (round 1 paired, table 2's result in)."""
    from reader.tournament.desk import enter_tokens
    from reader.tournament.players import read_csv
    from reader.tournament.store import Settings, Tournament

    csv = tmp / "players.csv"
    csv.write_text("名前,組,ブロック\n" + "".join(f"{n},{g},\n" for n, g in PLAYERS),
                   encoding="utf-8")
    for name in ("fresh.sqlite", "t.sqlite"):
        t = Tournament.create(tmp / name, read_csv(str(csv)),
                              Settings(rounds=3, seed=1, title="テスト"), blocks=1)
        if name == "t.sqlite":
            t.pair(None, None)
            enter_tokens(t, 2, ("9", "7"), (), None, False)
        t.close()


def _populate_table(tmp: Path) -> None:
    """g.json: a genkan table with one composed poem; c.json: a cards table with one PC."""
    from reader.table.commands import parse
    from reader.table.store import Table

    g = Table("genkan", {}, 7)
    g.push(parse("genkan", "player 小町 4"))
    d = g.push(parse("genkan", "compose solo 小町"))["drawn"]
    g.push(parse("genkan", "place " + " ".join(f"{c}.{i}" for i, c in enumerate(d[:5], 1))))
    g.save(tmp / "g.json")
    c = Table("cards", {}, 7)
    c.push(parse("cards", "player tenjo ♠"))
    c.save(tmp / "c.json")


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.endswith(("-wal", "-shm")):
            out[str(p.relative_to(root))] = hashlib.sha1(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def inproc(tmp_path, monkeypatch):
    """Run ``karuta ARGV`` in this process: (exit status, stdout, stderr).  An exception
    other than SystemExit escaping ``main`` is a traceback a user would see: it propagates."""
    import audio.quiet
    from reader.cli import main

    _populate(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KARUTA_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("DISPLAY", raising=False)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    devnull = open(os.devnull)
    monkeypatch.setattr(sys, "stdin", devnull)

    def run(argv: list[str]) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
        rc = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            finally:
                audio.quiet.ENABLED = False
                for s, h in saved.items():
                    signal.signal(s, h)
        return rc, out.getvalue(), err.getvalue()

    run.root = tmp_path
    yield run
    devnull.close()


