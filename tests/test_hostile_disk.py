"""An unlucky user's disk fills up under the stats database (a private tmpfs, as in
test_faults_disk.py).  SQLite cannot even open it without room for its ``-shm`` file and
calls that "disk I/O error": the one line says the disk is full, and what was saved stays."""
from __future__ import annotations

from test_faults_disk import one_line, small_disk


def test_the_stats_database_on_a_full_disk_says_the_disk_is_full(tmp_path):
    shell = ('printf "1\\n2\\n" | $K drill memory -n 2 --seed 1 >/dev/null && '
             'cp "$D/data/stats.sqlite3" "$D/before" && fill; '
             '$K stats --export csv; r1=$?; echo 1 | $K drill memory -n 1 --seed 2 >/dev/null; '
             'r2=$?; [ $r1 = 1 ] && [ $r2 = 1 ]')
    rc, out, err, files = small_disk(tmp_path, 1024, shell)
    lines = err.strip().splitlines()
    assert rc == 0 and len(lines) == 2, err
    for line in lines:
        one_line(1, line, "the disk is full", "stats.sqlite3")
        assert "I/O" not in line, line
    assert files["data/stats.sqlite3"] == files["before"], "the stats database changed"


def test_a_new_tournament_in_a_read_only_data_folder_is_one_line(tmp_path):
    """The data folder is on a disk mounted read-only (a HOME that cannot be written): the
    default tournament's folder cannot be made -- one line naming it, not a traceback."""
    shell = ('mount -o remount,ro "$D" && $K tournament new --players "$OUT/seed/p.csv" '
             '--seed 1; r=$?; [ $r = 1 ]')
    rc, out, err, files = small_disk(tmp_path, 256, shell, {"p.csv": "name\nA\nB\nC\nD\n"})
    assert rc == 0, err
    one_line(1, err, "cannot create the tournament folder", "Read-only")
    assert not any(n.startswith("data/") for n in files), files
