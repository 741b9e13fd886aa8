"""Every command's every option fed absurd values: nan, inf, huge, empty, very long, not
UTF-8 (issue 12, items 4 and 7).

Promised for each: exit status 1 with ONE line ``karuta: ...`` on stderr and no traceback,
and the user's files (a saved session, a default-voice setting, a match log) unchanged — or,
for the few values that mean something, a documented acceptance (``ACCEPTED`` below, each with
its reason).  The table comes from click's own list of commands and options
(tests/faults_table.py), so a new option is fed absurd values without anyone writing a case.

The ~600 cases run in-process through ``reader.cli.main`` (a subprocess each would take
minutes on the shared machine); a sample runs through the real entry point too
(``test_sample_through_the_entry_point``).  Nothing here can play sound: the device named is
one that does not exist.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import karuta_argv

from audio_fixtures import REPO
from faults_table import _populate, cases, inproc, snapshot  # noqa: F401 (fixture)

CASES = cases()

#: values that are accepted on purpose (exit 0), by case id prefix -> why
ACCEPTED = {
    "--seed='1000000000000000000000000000000'": "any integer is a seed",
    "--seed='-1'": "any integer is a seed",
    "--ma='1e-320'": "a tiny pause rounds to 0 ms, a valid pause",
    "--yoin='1e-320'": "a tiny pause rounds to 0 ms, a valid pause",
    "--take='1e-320'": "a tiny pause rounds to 0 ms, a valid pause",
    "--gap='1e-320'": "a tiny pause rounds to 0 ms, a valid pause",
    "--joka-gap='1e-320'": "a tiny pause rounds to 0 ms, a valid pause",
    "render --plan-out=''": "an empty --plan-out means no plan file",
    "render --plan-out=not-utf8": "a file name in bytes is a file name",
    "kimariji --read=''": "no card read yet",
    "poems --poems=''": "an empty selection lists all 100 (a listing; nothing is played)",
    "poems --poems=',,,'": "an empty selection lists all 100 (a listing; nothing is played)",
    "kimariji --read=',,,'": "no card read yet",
    "kimariji --among=''": "no restriction",
    "kimariji --among=',,,'": "no restriction",
    "kimariji --color=''": "no restriction",
    "match keep --log=''": "an empty --log means the default log name",
    "match keep --log=not-utf8": "a file name in bytes is a file name",
    "match keep --voice=": "--voice only matters with --read (not given here)",
    "match keep --device=": "--device only matters with --read (not given here)",
    # karuta tournament
    "tournament new --file=''": "an empty --file means the default tournament file",
    "--file=not-utf8": "a file name in bytes is a file name",
    "tournament new --colors=''": "no colours given: a different colour each round",
    "tournament new --colors=',,,'": "no colours given: a different colour each round",
    "tournament new --title=": "the title is free text, printed on the pages",
    "tournament add <name>=": "a player's name is free text (a duplicate is refused)",
    "tournament add --group=": "a group/class is free text (only used to keep players apart)",
    "tournament add --block=''": "an empty --block means the smallest block",
    "tournament pair --out=''": "an empty --out means the pages folder",
    "tournament sheets --out=''": "an empty --out means the pages folder",
    "tournament pair --out=not-utf8": "a folder name in bytes is a folder name",
    "tournament sheets --out=not-utf8": "a folder name in bytes is a folder name",
    "tournament result <counts>='0'": "0 cards taken is a count",
    "tournament result --log=''": "an empty --log means none: the counts are given",
    "tournament result --csv=''": "an empty --csv means none: the counts are given",
    "tournament standings --block=''": "an empty --block means every block",
    "tournament export --csv=''": "an empty --csv means no CSV file",
    "tournament export --out=''": "an empty --out means no JSON file (printed to stdout)",
    "tournament export --csv=not-utf8": "a file name in bytes is a file name",
    "tournament export --out=not-utf8": "a file name in bytes is a file name",
    # karuta table
    " new <save>=not-utf8": "a file name in bytes is a file name",
    " play --save=not-utf8": "a file name in bytes is a file name",
    " --player=": "a player's name is free text (the table's own notes)",
    " --npc=": "an NPC's name is free text (the table's own notes)",
    "genkan new --key=''": "no key cards",
    "genkan new --key=',,,'": "no key cards",
    "genkan play --key=''": "no key cards",
    "genkan play --key=',,,'": "no key cards",
    "genkan new --categories=''": "an empty --categories means the shipped categories",
    "genkan play --categories=''": "an empty --categories means the shipped categories",
    " play --voice=": "--voice only matters when a poem is recited (none is, stdin is empty)",
    " play --device=": "--device only matters when a poem is recited (none is, stdin is empty)",
    # karuta practice
    "practice --log=not-utf8": "a file name in bytes is a file name",
    "practice --simultaneous='1e-320'": "a tiny window rounds to 0 ms, a valid window",
    "practice --device=": "--device only matters in window play (not with --bot-vs-bot)",
    "practice --memorize='1e-320'": "a tiny memorisation time rounds to 0, a valid time",
}


def _accepted(case_id: str) -> str | None:
    for k, why in ACCEPTED.items():
        if k in case_id:
            return why
    return None


def _check(case_id: str, rc: int, err: str, before: dict, after: dict) -> None:
    assert "Traceback" not in err, f"{case_id}: {err}"
    why = _accepted(case_id)
    if rc == 0 and why:
        return
    lines = err.strip().splitlines()
    assert rc == 1, f"{case_id}: exit {rc}, stderr {err!r}"
    assert len(lines) == 1 and lines[0].startswith("karuta: "), f"{case_id}: {err!r}"
    assert len(lines[0]) < 600, f"{case_id}: a 'line' of {len(lines[0])} characters"
    assert before == after, f"{case_id}: files changed: " + repr(
        {k for k in set(before) | set(after) if before.get(k) != after.get(k)})


def _command(case_id: str) -> str:
    return case_id.split(" -")[0].split(" <")[0]


#: the cases by command ("read", "tournament add", ...): one test each
BY_COMMAND: dict[str, list[tuple[str, list[str]]]] = {}
for _case in CASES:
    BY_COMMAND.setdefault(_command(_case[0]), []).append(_case)


def _paths(root: Path) -> set[str]:
    """Every file and folder under ``root`` (``snapshot`` hashes files; this also sees a folder
    made or a SQLite side file left behind)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _fresh(root: Path) -> None:
    """``root`` back to the user's files and nothing else, as a new case's folder starts."""
    for p in root.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    _populate(root)


@pytest.mark.parametrize("command", sorted(BY_COMMAND))
def test_absurd_option_values(inproc, command):
    """Each of the command's cases (``CASES``), in turn, from the same files: a case that left
    them as they were leaves the next its folder; any other change (a file, a folder, a side
    file) puts the user's files back first.  (A test per case spent more on pytest and on
    making its folder than on the case: 1,280 tests, 12 CPU-s.)  Every case is checked; the
    failure lists each case that broke the promise."""
    root = inproc.root
    ref, ref_paths = snapshot(root), _paths(root)
    found = []
    for case_id, argv in BY_COMMAND[command]:
        try:
            rc, out, err = inproc(argv)
        except Exception as e:  # a traceback the user would see: this case fails, the rest run
            found.append(f"{case_id}: raised {e!r}")
            _fresh(root)
            continue
        after = snapshot(root)
        try:
            if rc == 0 and not _accepted(case_id):
                # a silent acceptance of an absurd value is a finding too
                raise AssertionError(f"{case_id}: accepted (exit 0) without a documented "
                                     f"reason; stdout {out[-200:]!r}")
            _check(case_id, rc, err, ref, after)
        except AssertionError as e:
            found.append(str(e).splitlines()[0] if str(e) else case_id)
        if after != ref or _paths(root) != ref_paths:
            _fresh(root)
    n = len(BY_COMMAND[command])
    assert not found, f"{len(found)} of {n} cases of {command!r}:\n" + "\n".join(found)


def test_the_table_covers_every_command_and_many_cases():
    commands = {c[0].split(" -")[0].split(" <")[0] for c in CASES}
    assert {"read", "render", "plan", "match keep", "match replay", "voice add", "voice check",
            "drill speed", "drill memory", "stats", "calibrate", "voice record"} <= commands
    assert len(CASES) > 400


SAMPLE = ["plan --ma='nan'", "plan --take='1e308'", "render --out=long300.wav",
          "read --memorize='inf'", "voice check <spec>=long300", "drill speed --log=long300.wav",
          "calibrate --interval='nan'", "plan --poems=',,,'"]


@pytest.mark.parametrize("case_id", SAMPLE)
def test_sample_through_the_entry_point(tmp_path, case_id):
    """The same promise through ``python -m reader.cli`` (the installed entry point's code)."""
    matches = [c for c in CASES if c[0].startswith(case_id.split("=")[0]) and
               case_id.split("=", 1)[1] in c[0]]
    if not matches:  # a plain value in the table's spelling
        matches = [c for c in CASES if c[0] == case_id]
    assert matches, case_id
    cid, argv = matches[0]
    _populate(tmp_path)
    env = dict(os.environ, KARUTA_DATA_DIR=str(tmp_path / "data"),
               KARUTA_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(REPO))
    env.pop("DISPLAY", None)
    before = snapshot(tmp_path)
    r = subprocess.run(karuta_argv(*[a.replace("{tmp}", str(tmp_path)) for a in argv]), cwd=tmp_path,
                       env=env, capture_output=True, text=True, errors="replace",
                       stdin=subprocess.DEVNULL, timeout=120)
    _check(cid, r.returncode, r.stderr, before, snapshot(tmp_path))
