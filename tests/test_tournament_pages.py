"""The tournament's pages in a real headless Chromium (Debian's ``chromium``): the projector
page, the pairing list and the score sheets render, the names and numbers are in the page as
the browser built it, screenshots are not blank, the print is A4 with IPAex Gothic embedded,
and the projector page follows an entry made through the command.
"""
from __future__ import annotations

import html
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import karuta_argv, run_karuta  # noqa: F401

from audio_fixtures import REPO, require_tool
from reader.tournament import pages
from reader.tournament.players import PlayerRow
from reader.tournament.store import Settings, Tournament

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

NAMES = ["山田 太郎", "佐藤 花子", "鈴木 一郎", "田中 次郎", "高橋 三郎", "伊藤 さくら", "渡辺 健",
         "中村 葵", "<b>小林</b> & 陽", "加藤 海", "吉田 空"]


def chromium(*args, timeout=90) -> subprocess.CompletedProcess:
    exe = require_tool("chromium")
    with tempfile.TemporaryDirectory() as profile:
        res = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *map(str, args)],
                             capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def dom(path: Path) -> str:
    return chromium("--dump-dom", path.resolve().as_uri()).stdout


def text_of(dom_html: str) -> str:
    """The visible text of a DOM dump (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", dom_html))


def colours(png: Path) -> int:
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB"))
    return len(np.unique(img.reshape(-1, 3), axis=0))


def pdf_pages(pdf: bytes) -> list[tuple[float, float]]:
    """(width, height) in points of every page of a PDF (Chromium writes plain MediaBoxes)."""
    return [(float(a), float(b)) for a, b in
            re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)]


@pytest.fixture
def played(tmp_path):
    """Three preliminary rounds of 11 players in 2 blocks, all entered, and the semi-finals."""
    rows = [PlayerRow(n, f"{i % 3 + 1}組") for i, n in enumerate(NAMES)]
    t = Tournament.create(tmp_path / "t.sqlite", rows, Settings(rounds=3, seed=2,
                                                                title="第1回 テスト大会"),
                          blocks=2)
    rng = random.Random(2)
    for r in (1, 2, 3):
        t.pair()
        for tb in t.tables(r):
            counts = [rng.randint(0, 5) for _ in tb.seats]
            t.enter(tb.no, counts)
    t.pair()
    for tb in t.tables(4):
        t.enter(tb.no, [7, 3][:len(tb.seats)])
    yield t
    t.close()


def test_projector_page_shows_every_name_number_and_the_bracket(played, tmp_path):
    path = pages.write_projector(played, "10:42:00")
    page = dom(path)
    text = text_of(page)
    assert 'http-equiv="refresh"' in page and f'content="{pages.REFRESH_S}"' in page
    assert "第1回 テスト大会" in text and "10:42:00" in text
    # the markup in a name is shown as text, not obeyed
    assert "<b>小林</b> & 陽" in text and "<b>小林</b>" not in page
    for block, rows in played.standings().items():
        m = re.search(rf'data-block="{block}".*?</table>', page, re.S)
        assert m, block
        cells = [text_of(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(0), re.S)]
        for r in rows:
            i = cells.index(r.name)
            assert cells[i - 1].rstrip("=") == str(r.rank)
            assert cells[i + 1:i + 5] == [str(r.wins), str(r.draws), str(r.losses), str(r.cards)]
        # the semi-finals with their winners in bold
        for tb in played.tables(4):
            if tb.block == block:
                assert "準決勝" in text and all(n in text for n in tb.names)
                assert re.search(r'class="win">' + re.escape(html.escape(tb.names[0], quote=False)),
                                 page)
    shot = tmp_path / "projector.png"
    chromium("--screenshot=" + str(shot), "--window-size=1280,800", path.resolve().as_uri())
    assert shot.stat().st_size > 10_000 and colours(shot) > 50


def test_pairing_list_and_score_sheets_print_on_a4_in_ipaex_gothic(played, tmp_path):
    paths = pages.write_round(played, 3)
    tables = played.tables(3)
    text = text_of(dom(paths["pairings"]))
    assert "予選 第3回戦" in text
    for tb in tables:
        row = re.search(rf'data-table="{tb.no}".*?</tr>', dom(paths["pairings"]), re.S)
        assert row and all(html.escape(n, quote=False) in row.group(0) for n in tb.names)
    sheets_dom = dom(paths["sheets"])
    for tb in tables:
        sheet = re.search(rf'<div class="sheet" data-table="{tb.no}">.*?</table>', sheets_dom, re.S)
        assert sheet and f"第{tb.no}卓" in sheet.group(0)
        assert all(html.escape(n, quote=False) in sheet.group(0) for n in tb.names)
    for key, expect_pages in (("pairings", 1), ("sheets", -(-len(tables) // 4))):
        pdf = tmp_path / f"{key}.pdf"
        chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", paths[key].resolve().as_uri())
        data = pdf.read_bytes()
        sizes = pdf_pages(data)
        assert len(sizes) == expect_pages, key
        for w, h in sizes:  # A4: 210 x 297 mm = 595 x 842 pt
            assert abs(w - 595.3) < 1.5 and abs(h - 841.9) < 1.5, (w, h)
        assert re.search(rb"/BaseFont /[A-Z]{6}\+IPAexGothic", data), "the Japanese font is used"


def test_projector_page_follows_an_entry_made_through_the_command(tmp_path):
    csv = tmp_path / "p.csv"
    csv.write_text("name,group\n" + "".join(f"{n},1\n" for n in NAMES[:4]), encoding="utf-8")
    db = tmp_path / "t.sqlite"
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def karuta(*a):
        res = subprocess.run([*karuta_argv(), "tournament", *map(str, a),
                              "-f", str(db), "--json"], capture_output=True, text=True, env=env,
                             cwd=REPO, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    karuta("new", "--players", csv, "--seed", 4)
    rnd = karuta("pair")
    page = tmp_path / "t-pages" / "standings.html"
    assert "結果 0/2 卓" in text_of(dom(page))
    tb = rnd["tables"][0]
    karuta("result", tb["table"], 13, 4)
    text = text_of(dom(page))
    assert "結果 1/2 卓" in text
    cells = [text_of(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", dom(page), re.S)]
    winner = tb["players"][0]
    i = cells.index(winner)
    assert cells[i - 1] == "1" and cells[i + 1:i + 5] == ["1", "0", "0", "13"]
    karuta("undo")
    assert "結果 0/2 卓" in text_of(dom(page))


class Browser:
    """A headless Chromium driven over its DevTools pipe (``--remote-debugging-pipe``: JSON
    messages ending in NUL on fds 3 and 4), enough to open a page and read its text."""

    def __init__(self, profile: Path):
        exe = require_tool("chromium")
        to_r, self._to = os.pipe()
        self._from, from_w = os.pipe()
        cmd = " ".join([exe, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
                        "about:blank", f"3<&{to_r}", f"4>&{from_w}"])
        self.proc = subprocess.Popen(["bash", "-c", "exec " + cmd], pass_fds=(to_r, from_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.session = None

    def call(self, method: str, session: bool = True, timeout: float = 30, **params) -> dict:
        import select

        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._id:
                    assert "error" not in reply, reply
                    return reply["result"]
            left = end - time.monotonic()
            assert left > 0, f"no reply to {method}"
            ready, _, _ = select.select([self._from], [], [], left)
            if ready:
                chunk = os.read(self._from, 65536)
                assert chunk, "chromium closed its pipe"
                self._buf += chunk

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", session=False, url=url)["targetId"]
        self.session = self.call("Target.attachToTarget", session=False, targetId=target,
                                 flatten=True)["sessionId"]

    def js(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression,
                         returnByValue=True)["result"].get("value")

    def close(self) -> None:
        from audio_fixtures import stop_process

        for fd in (self._to, self._from):
            os.close(fd)
        stop_process(self.proc)


def test_projector_page_left_open_reloads_itself_after_an_entry(tmp_path):
    """A browser left on the projector page shows a new result within one refresh period,
    without anyone touching it (the page reloads itself from the rewritten file)."""
    csv = tmp_path / "p.csv"
    csv.write_text("name\n" + "".join(f"{n}\n" for n in NAMES[:4]), encoding="utf-8")
    db = tmp_path / "t.sqlite"
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def karuta(*a):
        res = subprocess.run([*karuta_argv(), "tournament", *map(str, a),
                              "-f", str(db), "--json"], capture_output=True, text=True, env=env,
                             cwd=REPO, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    karuta("new", "--players", csv, "--seed", 4)
    rnd = karuta("pair")
    page = tmp_path / "t-pages" / "standings.html"
    b = Browser(tmp_path / "profile")
    try:
        b.open(page.as_uri())
        deadline = time.monotonic() + 30
        while "結果 0/2 卓" not in (b.js("document.body ? document.body.innerText : ''") or ""):
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.2)
        b.js("window.__before = 1")
        tb = rnd["tables"][0]
        karuta("result", tb["table"], 11, 6)
        t0 = time.monotonic()
        while "結果 1/2 卓" not in (b.js("document.body ? document.body.innerText : ''") or ""):
            assert time.monotonic() - t0 < pages.REFRESH_S + 15, "the page did not reload"
            time.sleep(0.5)
        assert b.js("typeof window.__before") == "undefined", "a real reload, from the file"
        text = b.js("document.body.innerText")
        assert tb["players"][0] in text and "11" in text
    finally:
        b.close()


def test_projector_page_for_one_block(played):
    """``standings.html?block=A`` shows block A only (one projector per block)."""
    path = pages.write_projector(played, "now")
    st = played.standings()
    b = Browser(path.parent / "profile")
    try:
        b.open(path.as_uri() + "?block=A")
        deadline = time.monotonic() + 30
        while "A ブロック" not in (b.js("document.body ? document.body.innerText : ''") or ""):
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.2)
        text = b.js("document.body.innerText")
        assert all(r.name in text for r in st["A"])
        assert not any(r.name in text for r in st["B"]) and "B ブロック" not in text
    finally:
        b.close()
