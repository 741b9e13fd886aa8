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
        for p in cmd.params:
            if getattr(p, "is_flag", False) or isinstance(p.type, click.types.BoolParamType):
                continue
            if isinstance(p, click.Argument):
                for v in _values(p):
                    argv = base[:len(path)] + [v] + base[len(path) + 1:]
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
def _populate(tmp: Path) -> None:
    """The user's files a careless command could damage."""
    (tmp / "source").mkdir()
    (tmp / "match.jsonl").write_text('{"rules": "kyogi", "A": [1, 2, 3], "B": [4, 5, 6]}\n')
    sessions = tmp / "data" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "last.json").write_text('{"kind": "karuta-club-session", "keep": "me"}')
    (tmp / "config").mkdir()
    (tmp / "config" / "voice.toml").write_text('default = "synth"\n')


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


