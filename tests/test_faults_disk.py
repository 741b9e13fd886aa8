"""A tiny full file system and read-only folders (issue 12, items 5 and 7).

Each full-disk test runs its commands inside a private mount namespace (``unshare -m``) on a
small tmpfs, so nothing is mounted on the machine outside the test; a shell there types the
entries, fills the disk at a chosen moment (``dd``), and copies what is left on the tmpfs out
for the test to inspect.  Skipped, with the reason, where mounting is not allowed.

Promised: one line ``karuta: ...``, exit 1, what was saved said, how to continue said, no
partial files left; a match keeper keeps every read in memory while the disk is full and
saves it once there is room.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import karuta_argv

from audio_fixtures import REPO

SCRIPT = r"""
set -u
D="$1"; OUT="$2"; SIZE="$3"; shift 3
mount -t tmpfs -o size=${SIZE}k tmpfs "$D" || exit 97
cp -a "$OUT/seed/." "$D/" 2>/dev/null
fill() { dd if=/dev/zero of="$D/.filler" bs=4k 2>/dev/null; }
unfill() { rm -f "$D/.filler"; }
# wait (up to 60 s) until the match log on the disk has $1 lines: the reads typed so far saved
saved() { n=0; until [ "$(cat "$D/m.jsonl" 2>/dev/null | wc -l)" -ge "$1" ] || [ $n -ge 1200 ]; do
  sleep 0.05; n=$((n + 1)); done; }
K="$PY -m reader.cli"
eval "$1"; rc=$?
unfill
mkdir -p "$OUT/after"; cp -a "$D/." "$OUT/after/"
exit $rc
"""


def small_disk(tmp_path: Path, size_kb: int, shell: str, seed: dict[str, str] | None = None):
    """Run ``shell`` (sh code; ``$K`` is karuta, ``$D`` the small disk, ``fill``/``unfill``
    fill it up / free it) -> (exit status, stdout, stderr, {name: bytes} left on the disk)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: cannot make a private mount")
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    (out / "seed").mkdir(parents=True)
    for name, text in (seed or {}).items():
        (out / "seed" / name).write_text(text)
    env = dict(os.environ, PY=sys.executable, PYTHONPATH=str(REPO),
               KARUTA_DATA_DIR=str(disk / "data"), KARUTA_CONFIG_DIR=str(disk / "config"),
               KARUTA_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", SCRIPT, "sh",
                        str(disk), str(out), str(size_kb), shell], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=300)
    if r.returncode == 97 or "unshare failed" in r.stderr or "Operation not permitted" in r.stderr:
        pytest.skip(f"mounting a tmpfs is not allowed here: {r.stderr.strip()[:200]}")
    after = out / "after"
    files = {str(p.relative_to(after)): p.read_bytes() for p in after.rglob("*") if p.is_file()}
    return r.returncode, r.stdout, r.stderr, files


def one_line(rc, err, *words):
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), (rc, err)
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_render_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    rc, out, err, files = small_disk(
        tmp_path, 1024, '$K render --voice tone --cards 3 --seed 1 --out "$D/reading.wav"')
    one_line(rc, err, "reading.wav" if "reading.wav" in err else "disk is full")
    assert not files, f"partial files left: {sorted(files)}"


def test_render_flac_and_plan_on_a_full_disk(tmp_path):
    rc, out, err, files = small_disk(
        tmp_path, 256, 'fill; $K render --voice tone --cards 2 --seed 1 --out "$D/r.flac" '
                       '--plan-out "$D/plan.json"')
    one_line(rc, err)
    assert not files


KYOGI_DEAL = json.dumps({"rules": "kyogi", "A": list(range(1, 26)), "B": list(range(26, 51))})


def test_match_keeper_keeps_reads_while_the_disk_is_full_and_saves_when_freed(tmp_path):
    shell = ('( printf "1 a\\n27 b\\n"; saved 3; fill; printf "60\\n2 a\\n"; sleep 1.5; unfill; '
             'printf "28 b\\nq\\n" ) | $K match keep --rules kyogi --deal "$D/deal.json" '
             '--log "$D/m.jsonl"')
    rc, out, err, files = small_disk(tmp_path, 512, shell, {"deal.json": KYOGI_DEAL})
    assert rc == 0, err
    assert "NOT SAVED" in out and "has 2 of 3 reads" in out, out
    log = files["m.jsonl"].decode().splitlines()
    assert [json.loads(x)["read"] for x in log[1:]] == [1, 27, 60, 2, 28], "a read was lost"


def test_match_keeper_quitting_on_a_full_disk_prints_the_unsaved_reads(tmp_path):
    shell = ('( printf "1 a\\n"; saved 2; fill; printf "60\\n2 a\\nq\\n" ) | '
             '$K match keep --rules kyogi --deal "$D/deal.json" --log "$D/m.jsonl"')
    rc, out, err, files = small_disk(tmp_path, 512, shell, {"deal.json": KYOGI_DEAL})
    one_line(rc, err, "m.jsonl has 1 reads", "the 2 after them are printed above", "--resume")
    printed = out.split("reads not saved")[1].splitlines()[1:3]
    assert [json.loads(x)["read"] for x in printed] == [60, 2]
    log = files["m.jsonl"].decode().splitlines()
    assert [json.loads(x)["read"] for x in log[1:]] == [1], "what is on disk is the saved part"


def test_voice_add_on_a_full_disk_removes_its_partial_import(tmp_path):
    import numpy as np
    import soundfile as sf

    src = tmp_path / "src" / "kimura"
    src.mkdir(parents=True)
    t = np.arange(48000 * 3) / 48000
    for n in range(1, 11):
        for half in (1, 2):
            sf.write(src / f"kimura_{n:03d}_{half}.wav",
                     (0.3 * np.sin(2 * np.pi * (200 + 20 * n + half) * t)).astype(np.float32), 48000)
    rc, out, err, files = small_disk(tmp_path, 600, f'$K voice add "{src}" --no-align')
    one_line(rc, err, "disk is full", "nothing was installed")
    assert not [f for f in files if "importing" in f or f.startswith("data/voices/kimura/")], \
        sorted(files)


def test_read_only_folders(tmp_path):
    """A read-only data folder (or disk): one line, exit 1, nothing changed."""
    if os.geteuid() == 0:
        # root ignores file modes: make the folder truly read-only with a read-only bind
        rc, out, err, files = small_disk(
            tmp_path, 256, 'mkdir -p "$D/data/voices" && mount -o remount,ro "$D" && '
                           f'$K voice add "{tmp_path}/src/ro" --no-align; '
                           'r=$?; mount -o remount,rw "$D"; exit $r',
        ) if _make_src(tmp_path / "src" / "ro") else (None, "", "", {})
        one_line(rc, err, "read-only")
        return
    data = tmp_path / "data"
    (data / "voices").mkdir(parents=True)
    data.chmod(0o500)
    (data / "voices").chmod(0o500)
    try:
        _make_src(tmp_path / "src" / "ro")
        r = subprocess.run([*karuta_argv(), "voice", "add",
                            str(tmp_path / "src" / "ro"), "--no-align"], capture_output=True,
                           text=True, env=dict(os.environ, KARUTA_DATA_DIR=str(data),
                                               PYTHONPATH=str(REPO)), timeout=120)
        one_line(r.returncode, r.stderr, "permission denied")
    finally:
        (data / "voices").chmod(0o700)
        data.chmod(0o700)


def _make_src(folder: Path) -> bool:
    import numpy as np
    import soundfile as sf

    folder.mkdir(parents=True)
    t = np.arange(48000 * 2) / 48000
    for half in (1, 2):
        sf.write(folder / f"ro_001_{half}.wav",
                 (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32), 48000)
    return True


def test_render_into_a_read_only_folder(tmp_path):
    rc, out, err, files = small_disk(
        tmp_path, 256, 'mount -o remount,ro "$D" && $K render --voice tone --cards 1 '
                       '--out "$D/x.wav"; r=$?; mount -o remount,rw "$D"; exit $r')
    one_line(rc, err, "x.wav")
    assert not files


def test_club_session_on_a_full_disk_says_where_the_saved_one_continues(tmp_path):
    """ALSA's null device (no clock: the reading runs as fast as it is fed) via a private
    .asoundrc; the disk fills after the first card is saved."""
    asoundrc = 'pcm.!default { type plug slave.pcm "null" }\n'
    shell = ('mkdir -p "$D/home" && printf \'%s\' \'' + asoundrc + '\' > "$D/home/.asoundrc" && '
             '( HOME="$D/home" XDG_RUNTIME_DIR="$D/home" PULSE_SERVER= $K read --live --auto '
             '--memorize 0 --voice tone --cards 30 --speed 4 --take 0.2 --ma 0.2 --yoin 0.2 '
             '--seed 3 --session "$D/s.json" < /dev/null & pid=$!; '
             'while ! grep -q \'"position": [1-9]\' "$D/s.json" 2>/dev/null; do sleep 0.05; done; '
             'fill; wait $pid )')
    rc, out, err, files = small_disk(tmp_path, 1024, shell)
    saved = json.loads(files["s.json"])
    one_line(rc, err, "No space left", f"continues at card {saved['position'] + 1}/30",
             "karuta read --resume")
    assert 1 <= saved["position"] < 30 and len(saved["log"]) == saved["position"]


def test_a_tournament_on_a_full_disk_says_the_disk_is_full(tmp_path):
    """SQLite cannot even open the file for reading without room for its -shm file: its
    "disk I/O error" is said as the full disk it is, for a result and for status alike."""
    shell = ('$K tournament new -f "$D/t.sqlite" --players "$D/p.csv" --seed 1 >/dev/null && '
             '$K tournament pair -f "$D/t.sqlite" >/dev/null && cp "$D/t.sqlite" "$D/before" && '
             'fill; $K tournament result 1 9 7 -f "$D/t.sqlite"; r1=$?; '
             '$K tournament status -f "$D/t.sqlite"; r2=$?; [ $r1 = 1 ] && [ $r2 = 1 ]')
    players = "名前,組,ブロック\n" + "".join(f"選手{i},{i % 3 + 1},A\n" for i in range(6))
    rc, out, err, files = small_disk(tmp_path, 1024, shell, {"p.csv": players})
    lines = err.strip().splitlines()
    assert rc == 0 and len(lines) == 2, err
    for line in lines:
        assert line.startswith("karuta: ") and "the disk is full" in line, line
        assert "nothing was changed" in line and "I/O" not in line
    assert files["t.sqlite"] == files["before"], "the tournament changed"


def test_a_stats_database_in_a_read_only_folder_says_so(tmp_path):
    """SQLite's "unable to open database file" is said as the read-only folder it is, by a
    command that would write answers (looking at them works there: test_faults_readonly.py)."""
    shell = ('mkdir -p "$D/data" && $PY -c "import sys; from reader.drills.stats import StatsDB; '
             'StatsDB(sys.argv[1]).close()" "$D/data/stats.sqlite3" && '
             'mount -o remount,ro "$D" && $K drill memory -n 1 < /dev/null; r=$?; '
             'mount -o remount,rw "$D"; (exit $r)')
    rc, out, err, files = small_disk(tmp_path, 1024, shell)
    one_line(rc, err, "stats.sqlite3", "is read-only", "KARUTA_DATA_DIR")
    assert "data/stats.sqlite3" in files
