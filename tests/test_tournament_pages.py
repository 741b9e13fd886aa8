"""The tournament's pages in a real headless Chromium (Debian's ``chromium``): the projector
page, the pairing list and the score sheets render, the names and numbers are in the page as
the browser built it, screenshots are not blank, the print is A4 with IPAex Gothic embedded,
and the projector page follows an entry made through the command.

One browser serves the module (``browser``: started once, a fresh tab per page, ended with
its whole process group when the module is done, pass or fail); starting Chromium per page
cost most of this module's time.
"""
from __future__ import annotations

import html
import json
import os
import random
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from cli_run import karuta_argv, run_inproc, run_karuta  # noqa: F401

from audio_fixtures import REPO
from testbed.cdp import Browser
from reader.tournament import pages, scoring
from reader.tournament.players import PlayerRow
from reader.tournament.store import Settings, Tournament

NAMES = ["山田 太郎", "佐藤 花子", "鈴木 一郎", "田中 次郎", "高橋 三郎", "伊藤 さくら", "渡辺 健",
         "中村 葵", "<b>小林</b> & 陽", "加藤 海", "吉田 空"]


def text_of(dom_html: str) -> str:
    """The visible text of a DOM dump (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", dom_html))


def sections(page: str, kind: str) -> str:
    """The markup of the projector's screens of one kind ("standings" or "pairings")."""
    return "".join(re.findall(rf'<section[^>]*data-kind="{kind}".*?</section>', page, re.S))


def block_rows(page: str, kind: str, block: str) -> list[list[str]]:
    """The cells of every row of one block on the projector (as the browser built the page),
    heading and knock-out rows left out."""
    part = re.findall(rf'<div class="blk" data-block="{block}"[^>]*>(.*?)(?=<div class="blk"|</section>)',
                      sections(page, kind), re.S)
    rows = re.findall(r'<div class="row(?![^"]*(?:head|ko))[^"]*"[^>]*>(.*?)</div>', "".join(part),
                      re.S)
    return [[text_of(c).strip() for c in re.findall(r"<span[^>]*>(.*?)</span>", r, re.S)]
            for r in rows]


def colours(png: Path) -> int:
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3).astype(np.uint32)
    return len(np.unique(img[:, 0] << 16 | img[:, 1] << 8 | img[:, 2]))


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


def test_projector_page_shows_every_name_number_and_the_bracket(played, tmp_path, browser):
    path = pages.write_projector(played, "10:42:00")
    page = dom(browser, path)
    text = text_of(page)
    assert 'http-equiv="refresh"' in page and f'content="{pages.REFRESH_S}"' in page
    assert "第1回 テスト大会" in text and "10:42:00" in text
    # the markup in a name is shown as text, not obeyed
    assert "<b>小林</b> & 陽" in text and "<b>小林</b>" not in page
    for block, rows in played.standings().items():
        shown = block_rows(page, "standings", block)
        assert len(shown) == len(rows), block
        for r, cells in zip(rows, shown):
            assert cells[:6] == [f"{r.rank}{'=' if r.tied else ''}", r.name, str(r.wins),
                                 str(r.draws), str(r.losses), str(r.cards)]
        # the semi-finals with their winners in bold
        for tb in played.tables(4):
            if tb.block == block:
                assert "準決勝" in text and all(n in text for n in tb.names)
                assert re.search(r'class="win">' + re.escape(html.escape(tb.names[0], quote=False)),
                                 page)
    shot = tmp_path / "projector.png"
    browser.screenshot(path.resolve().as_uri(), shot, 1280, 800)
    assert shot.stat().st_size > 10_000 and colours(shot) > 50


def test_pairing_list_and_score_sheets_print_on_a4_in_ipaex_gothic(played, tmp_path, browser):
    paths = pages.write_round(played, 3)
    tables = played.tables(3)
    pairings_dom = dom(browser, paths["pairings"])
    assert "予選 第3回戦" in text_of(pairings_dom)
    for tb in tables:
        row = re.search(rf'data-table="{tb.no}".*?</tr>', pairings_dom, re.S)
        assert row and all(html.escape(n, quote=False) in row.group(0) for n in tb.names)
    sheets_dom = dom(browser, paths["sheets"])
    for tb in tables:
        sheet = re.search(rf'<div class="sheet" data-table="{tb.no}"[^>]*>.*?</table>', sheets_dom, re.S)
        assert sheet and f"第{tb.no}卓" in sheet.group(0)
        assert all(html.escape(n, quote=False) in sheet.group(0) for n in tb.names)
    for key, expect_pages in (("pairings", 1), ("sheets", -(-len(tables) // 4))):
        data = browser.pdf(paths[key])
        sizes = pdf_pages(data)
        assert len(sizes) == expect_pages, key
        for w, h in sizes:  # A4: 210 x 297 mm = 595 x 842 pt
            assert abs(w - 595.3) < 1.5 and abs(h - 841.9) < 1.5, (w, h)
        assert re.search(rb"/BaseFont /[A-Z]{6}\+IPAexGothic", data), "the Japanese font is used"


def test_projector_page_follows_an_entry_made_through_the_command(tmp_path, browser):
    csv = tmp_path / "p.csv"
    csv.write_text("name,group\n" + "".join(f"{n},1\n" for n in NAMES[:4]), encoding="utf-8")
    db = tmp_path / "t.sqlite"
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def karuta(*a, inproc=True):  # the entry itself through the installed command
        if inproc:
            res = run_inproc("tournament", *map(str, a), "-f", str(db), "--json")
        else:
            res = subprocess.run([*karuta_argv(), "tournament", *map(str, a),
                                  "-f", str(db), "--json"], capture_output=True, text=True,
                                 env=env, cwd=REPO, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    karuta("new", "--players", csv, "--seed", 4)
    rnd = karuta("pair")
    page = tmp_path / "t-pages" / "standings.html"
    assert "結果 0/2 卓" in text_of(dom(browser, page))
    tb = rnd["tables"][0]
    karuta("result", tb["table"], 13, 4, inproc=False)
    text = text_of(dom(browser, page))
    assert "結果 1/2 卓" in text
    winner = tb["players"][0]
    rows = {r[1]: r for r in block_rows(dom(browser, page), "standings", "A")}
    assert rows[winner][:6] == ["1", winner, "1", "0", "0", "13"]
    karuta("undo")
    assert "結果 0/2 卓" in text_of(dom(browser, page))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """The module's browser (a server its tests share: ended when the module is done)."""
    from procguard import session_owned

    with session_owned():
        b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    try:
        yield b
    finally:
        b.close()


def dom(browser: Browser, path: Path) -> str:
    return browser.dom(path)


def test_projector_page_left_open_reloads_itself_after_an_entry(tmp_path, browser,
                                                               monkeypatch):
    """A browser left on the projector page shows a new result within one refresh period,
    without anyone touching it (the page reloads itself from the rewritten file).  The
    commands run in this process with the period cut from 10 s to 1 s (an entry through the
    installed command: test_projector_page_follows_an_entry_made_through_the_command)."""
    csv = tmp_path / "p.csv"
    csv.write_text("name\n" + "".join(f"{n}\n" for n in NAMES[:4]), encoding="utf-8")
    db = tmp_path / "t.sqlite"
    monkeypatch.setattr(pages, "REFRESH_S", 1)

    def karuta(*a):
        res = run_inproc("tournament", *map(str, a), "-f", str(db), "--json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    karuta("new", "--players", csv, "--seed", 4)
    rnd = karuta("pair")
    page = tmp_path / "t-pages" / "standings.html"
    b = browser
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


def test_projector_page_for_one_block(played, browser):
    """``standings.html?block=A`` shows block A only (one projector per block)."""
    path = pages.write_projector(played, "now")
    st = played.standings()
    b = browser
    b.open(path.as_uri() + "?block=A")
    deadline = time.monotonic() + 30
    while "A ブロック" not in (b.js("document.body ? document.body.innerText : ''") or ""):
        assert time.monotonic() < deadline, "the page did not load"
        time.sleep(0.2)
    # (every screen's text: the bracket's and the standings')
    text = b.js("[...document.querySelectorAll('.screen')].map(s => s.textContent).join('\\n')")
    assert all(r.name in text for r in st["A"])
    assert not any(r.name in text for r in st["B"]) and "B ブロック" not in text


# ---------------------------------------------------------------- issue 24: a hall's projector

FAMILY = ["山田", "佐藤", "鈴木", "田中", "高橋", "伊藤", "渡辺", "中村", "小林", "加藤", "吉田",
          "山本", "松本", "井上", "木村"]
GIVEN = ["太郎", "花子", "一郎", "さくら", "健", "葵", "陽", "海", "空", "光", "凛", "翔太", "美咲"]


def a_day(folder: Path, players: int, blocks: int, rounds_done: int, seed: int = 3) -> Tournament:
    """``players`` players in ``blocks`` blocks, ``rounds_done`` rounds entered and the next
    round paired (its results missing: the hall is looking for its tables)."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < players:
        names.add(f"{rng.choice(FAMILY)} {rng.choice(GIVEN)}{rng.choice(GIVEN) * (rng.random() < .3)}")
    rows = [PlayerRow(n, f"{i % 4 + 1}組") for i, n in enumerate(sorted(names))]
    t = Tournament.create(folder / "t.sqlite", rows,
                          Settings(seed=seed, title="第12回 広島県五色百人一首大会 小学生の部"),
                          blocks=blocks)
    for r in range(1, rounds_done + 1):
        t.pair()
        for tb in t.tables(r):
            t.enter(tb.no, scoring.simulated_counts(rng, len(tb.seats)))
    t.pair()
    return t


SCREENS = """(() => {
  const out = [];
  for (let i = 0; i < window.karutaScreens; i++) {
    window.karutaShow(i);
    const s = document.querySelector(".screen.on");
    const rows = [...s.querySelectorAll(".row:not(.head)")];
    // (a block too tall for the screen is cut into parts, each with its headings: counted once)
    out.push({kind: s.dataset.kind, blocks: [...new Set([...s.querySelectorAll(".blk")].map(b => b.dataset.block))],
              font: Math.min(...rows.map(r => parseFloat(getComputedStyle(r).fontSize))),
              out: rows.filter(r => { const b = r.getBoundingClientRect();
                                      return b.left < -1 || b.top < -1 || b.right > innerWidth + 1
                                             || b.bottom > innerHeight + 1; }).length,
              tables: rows.map(r => r.dataset.table).filter(x => x),
              // every block (or part of one too tall for the screen) one box, with its heading
              // and, in the standings, its column heads
              whole: [...s.querySelectorAll(".blk")].every(b => b.getClientRects().length === 1
                  && b.querySelector("h3") && (s.dataset.kind !== "standings" || b.querySelector(".row.head"))),
              parts: s.querySelectorAll(".blk[data-part]").length,
              text: s.innerText});
  }
  return JSON.stringify(out);
})()"""


def projector_screens(b: Browser, url: str, width: int, height: int) -> list[dict]:
    b.open("about:blank")
    b.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=False)
    b.call("Page.navigate", url=url)
    deadline = time.monotonic() + 30
    while not b.js("typeof window.karutaScreens === 'number'"):
        assert time.monotonic() < deadline, "the projector page did not lay itself out"
        time.sleep(0.1)
    return json.loads(b.js(SCREENS))


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    """Days of 1, 2 and 8 blocks (25, 24 and 200 players), two rounds entered, the third paired."""
    out = {}
    for blocks, players in ((1, 25), (2, 24), (8, 200)):
        folder = tmp_path_factory.mktemp(f"b{blocks}")
        t = a_day(folder, players, blocks, 2)
        out[blocks] = (t, pages.write_projector(t, "10:42:00"))
    yield out
    for t, _ in out.values():
        t.close()


@pytest.mark.parametrize("blocks", [1, 2, 8])
def test_projector_fits_a_hall_screen_with_readable_text(days, blocks, tmp_path, browser):
    """At 1920x1080 and 1280x720, with 1, 2 and 8 blocks: every row of every screen inside the
    viewport (nothing scrolls off), the text at least a 36th of the screen's height (1.56 % of
    a 16:9 screen's width; it was 1.1 %), every block's standings and the current round's
    pairings (every table, who sits there) on some screen; ?block= shows that block only,
    larger."""
    t, path = days[blocks]
    tables = t.tables(t.current_round())
    b = browser
    for width, height in ((1920, 1080), (1280, 720)):
        screens = projector_screens(b, path.as_uri(), width, height)
        for s in screens:
            assert s["out"] == 0, (width, s["kind"], s["blocks"])
            assert s["whole"], (width, s["kind"], s["blocks"])
            assert s["font"] >= height / 36 - 0.5, (width, s["font"])
            assert s["font"] / width >= 0.0150
        for kind in ("standings", "pairings"):
            shown = [x for s in screens if s["kind"] == kind for x in s["blocks"]]
            assert sorted(shown) == t.blocks(), (kind, shown)
        if blocks == 1 and height == 1080:  # 25 players: the standings in two parts
            assert [s["parts"] for s in screens if s["kind"] == "standings"] == [2]
        seated = [x for s in screens if s["kind"] == "pairings" for x in s["tables"]]
        assert sorted(map(int, seated)) == [tb.no for tb in tables]
        text = "\n".join(s["text"] for s in screens if s["kind"] == "pairings")
        assert all(n in text for tb in tables for n in tb.names)
        # one block of several: only it, and larger
        one = projector_screens(b, path.as_uri() + "?block=A", width, height)
        assert {x for s in one for x in s["blocks"]} == {"A"}
        if blocks > 2:  # (two blocks side by side are as large as one alone)
            assert min(s["font"] for s in one) > min(s["font"] for s in screens)
        else:
            assert min(s["font"] for s in one) >= min(s["font"] for s in screens) - 0.5
        shot = tmp_path / f"p{blocks}-{width}.png"
        browser.screenshot(path.as_uri() + "?screen=0", shot, width, height)
        assert colours(shot) > 50


def test_projector_shows_standings_only_once_the_round_is_in(tmp_path, browser):
    t = a_day(tmp_path, 10, 1, 1)
    for tb in t.tables(2):
        t.enter(tb.no, [9, 8])
    page = dom(browser, pages.write_projector(t, "now"))
    assert sections(page, "standings") and not sections(page, "pairings")
    t.close()


# ---------------------------------------------------------------- issue 24: the score sheets

SHEET_LAYOUT = """(() => JSON.stringify([...document.querySelectorAll(".sheet")].map(s => ({
  table: s.dataset.table, kind: s.dataset.kind,
  sign_lines: s.querySelector(".sign").getClientRects().length,
  sign_height: s.querySelector(".sign").getBoundingClientRect().height,
  sign_font: parseFloat(getComputedStyle(s.querySelector(".sign")).fontSize),
  broken: [...s.querySelectorAll(".nw")].filter(x => x.getClientRects().length > 1).map(x => x.textContent),
  overflow: s.scrollHeight > s.clientHeight + 1}))))()"""


def test_score_sheets_name_each_match_and_keep_their_lines_whole(tmp_path, browser):
    """The final round's sheets: the final headed 決勝, the third-place match 3位決定戦 (also in
    the pairing list); knock-out sheets say "read one more" and offer no draw; three-player
    preliminary sheets keep the signature on one line; a long title never splits
    "A ブロック"; nothing runs off a sheet (A4 width, as printed)."""
    rows = [PlayerRow(f"選手{i:02d}", "") for i in range(9)]
    title = "第12回 広島県五色百人一首大会 小学生の部（高学年）個人戦 予選リーグ・決勝トーナメント"
    t = Tournament.create(tmp_path / "t.sqlite", rows,
                          Settings(rounds=1, seed=5, third_place=True, title=title))
    t.pair()
    for tb in t.tables(1):
        t.enter(tb.no, [6, 5, 4][:len(tb.seats)])
    prelim = pages.write_round(t, 1)
    t.pair()
    for tb in t.tables(2):
        t.enter(tb.no, [9, 7])
    t.pair()
    final = pages.write_round(t, 3)
    kinds = {tb.no: tb.kind for tb in t.tables(3)}
    assert sorted(kinds.values()) == ["final", "third"]
    page = dom(browser, final["sheets"])
    for no, kind in kinds.items():
        sheet = text_of(re.search(rf'data-table="{no}".*?審判サイン', page, re.S).group(0))
        head = re.search(rf'data-table="{no}".*?<h2>(.*?)</h2>', page, re.S).group(1)
        assert text_of(head).split()[0] == pages.KIND_JA[kind]  # 決勝 or 3位決定戦
        assert "引き分け" not in sheet and "分" not in sheet.replace("枚ずつに分け", "")
        assert "1枚ずつ読み足し" in sheet
    plist = dom(browser, final["pairings"])
    assert "決勝・3位決定戦" in text_of(plist)
    for no, kind in kinds.items():
        row = re.search(rf'data-table="{no}" data-kind="{kind}".*?</tr>', plist, re.S).group(0)
        assert pages.KIND_JA[kind] in text_of(row)
    pre = text_of(dom(browser, prelim["sheets"]))
    assert "引き分け" in pre and "勝 · 負 · 分" in pre
    b = browser
    for path in (prelim["sheets"], final["sheets"]):
        b.open("about:blank")
        # the printed width: A4 less the 10 mm margins, at 96 px an inch
        b.call("Emulation.setDeviceMetricsOverride", width=718, height=1000,
               deviceScaleFactor=1, mobile=False)
        b.call("Emulation.setEmulatedMedia", media="print")
        b.call("Page.navigate", url=path.as_uri())
        deadline = time.monotonic() + 30
        while b.js("document.readyState") != "complete" or not b.js(
                "document.querySelectorAll('.sheet').length"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for s in json.loads(b.js(SHEET_LAYOUT)):
            assert s["sign_lines"] == 1 and s["sign_height"] < 2 * s["sign_font"], s
            assert not s["broken"], s
            assert not s["overflow"], s


def test_sheets_say_the_day_is_played_on_one_colour(tmp_path, browser):
    """Seed 004: from round 2 the preliminaries play on the cards the players before laid
    out, so by default every preliminary round reads one colour, and the sheets say so."""
    rows = [PlayerRow(f"選手{i:02d}", "") for i in range(6)]
    t = Tournament.create(tmp_path / "t.sqlite", rows, Settings(rounds=3, seed=8))
    colors = []
    for r in (1, 2, 3):
        info = t.pair()
        colors.append(info.color)
        paths = pages.write_round(t, r)
        text = text_of(dom(browser, paths["sheets"]))
        ja = text_of(dom(browser, paths["pairings"]))
        assert f"予選は全回戦 {pages.poems.COLOR_JA[info.color]}" in text
        assert (pages.LAID in text) == (r > 1) and (pages.FRESH in text) == (r == 1)
        assert pages.LAID in ja or r == 1
        for tb in t.tables(r):
            t.enter(tb.no, [9, 8])
    assert len(set(colors)) == 1
    t.close()
    t = Tournament.create(tmp_path / "u.sqlite", rows, Settings(rounds=3, seed=8,
                                                                color_policy="each-round"))
    seen = []
    for r in (1, 2):
        seen.append(t.pair().color)
        assert pages.FRESH in text_of(dom(browser, pages.write_round(t, r)["sheets"]))
        for tb in t.tables(r):
            t.enter(tb.no, [9, 8])
    assert seen[0] != seen[1]
    t.close()


# ---------------------------------------------------------------- issue 34: a results board

def a_whole_day(folder: Path, players: int, blocks: int, seed: int = 3) -> Tournament:
    """``a_day`` played to the end: six preliminary rounds, the semi-finals and the final."""
    rng = random.Random(seed)
    t = a_day(folder, players, blocks, 5, seed)
    while True:
        r = t.current_round()
        for tb in t.tables(r):
            while True:
                c = scoring.simulated_counts(rng, len(tb.seats))
                if not tb.knockout or len(set(c)) == len(c):
                    break
            t.enter(tb.no, c)
        if t.stage_of(r + 1) is None or (r > t.settings.rounds and set(t.champions())
                                          == set(t.blocks())):
            return t
        t.pair()


WHOLE = """(() => {
  const out = [];
  for (let i = 0; i < window.karutaScreens; i++) {
    window.karutaShow(i);
    const s = document.querySelector(".screen.on");
    out.push({kind: s.dataset.kind, heading: s.querySelector("h2").innerText,
              font: Math.min(...[...s.querySelectorAll(".row:not(.head)")].map(
                  r => parseFloat(getComputedStyle(r).fontSize))),
              top: [...s.querySelectorAll(".row.top")].map(r => r.children[1].textContent),
              blocks: [...s.querySelectorAll(".blk")].map(b => {
                const rects = [...b.getClientRects()].map(r => [r.left, r.top, r.right, r.bottom]);
                return {block: b.dataset.block, part: b.dataset.part || null, rects,
                        text: b.innerText};
              })});
  }
  return JSON.stringify(out);
})()"""


def whole_screens(b: Browser, url: str, width: int, height: int) -> list[dict]:
    projector_screens(b, url, width, height)
    return json.loads(b.js(WHOLE))


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """Days of 1-4 blocks of 5-12 players: before any result, in the middle of the
    preliminaries, with the semi-finals paired, and at the day's end."""
    out = {}
    for name, players, blocks, stage in (("1x8 round 1", 8, 1, "start"),
                                         ("2x12 mid", 24, 2, "mid"),
                                         ("3x10 semis", 30, 3, "semi"),
                                         ("4x5 end", 20, 4, "end"),
                                         ("4x12 end", 48, 4, "end"),
                                         ("1x12 end", 12, 1, "end")):
        folder = tmp_path_factory.mktemp(name.replace(" ", "-"))
        if stage == "start":
            t = a_day(folder, players, blocks, 0)
        elif stage == "mid":
            t = a_day(folder, players, blocks, 3)
        elif stage == "semi":
            t = a_day(folder, players, blocks, 6)
        else:
            t = a_whole_day(folder, players, blocks)
        out[name] = (t, pages.write_projector(t, "10:42:00"))
    yield out
    for t, _ in out.values():
        t.close()


@pytest.mark.parametrize("name", ["1x8 round 1", "2x12 mid", "3x10 semis", "4x5 end",
                                  "4x12 end", "1x12 end"])
def test_projector_lays_every_block_out_whole(boards, name, browser):
    """Issue 34, in the real browser at 1920x1080 and 1280x720: every block of every screen is
    one box (``getClientRects()``: one rect, never split across columns) inside the
    viewport, each block once on each kind of screen, the text at least a 36th of the height;
    only what results decided is marked (nobody before a result; the knock-out's players once
    it is paired); the screens are titled by the stage, and the day's end has a winners screen
    and the bracket."""
    t, path = boards[name]
    st = t.standings()
    ko = t.knockout()
    for width, height in ((1920, 1080), (1280, 720)):
        screens = whole_screens(browser, path.as_uri(), width, height)
        kinds = {}
        for s in screens:
            assert s["font"] >= height / 36 - 0.5, (width, s["kind"], s["font"])
            for blk in s["blocks"]:
                assert len(blk["rects"]) == 1, (width, s["kind"], blk["block"], blk["rects"])
                left, top, right, bottom = blk["rects"][0]
                assert left >= 0 and top >= 0 and right <= width + 1 and bottom <= height + 1, \
                    (width, s["kind"], blk["block"], blk["rects"])
                assert blk["part"] is None, (width, s["kind"], blk["block"])  # never cut
                kinds.setdefault(s["kind"], []).append(blk["block"])
        for kind, shown in kinds.items():
            assert sorted(shown) == sorted(set(shown)), (kind, shown)  # each block once
        assert sorted(kinds["standings"]) == t.blocks()
        marked = sorted(n for s in screens if s["kind"] == "standings" for n in s["top"])
        want = sorted(r.name for b, rows in st.items()
                      for r in rows if r.id in pages.highlighted(rows, ko.get(b, [])))
        assert marked == want
        headings = {s["kind"]: s["heading"] for s in screens}
        over = name.endswith("end")
        if name == "1x8 round 1":
            assert marked == [] and headings["standings"].startswith("予選 順位")
        if ko:  # the knock-out's players, and only they, are marked
            first = t.settings.rounds + 1
            assert marked == sorted(n for tb in t.tables(first) for n in tb.names)
            assert "bracket" in kinds and sorted(kinds["bracket"]) == sorted(ko)
            assert headings["standings"].startswith("予選 最終順位")
        if over:
            assert screens[0]["kind"] == "winners" and headings["winners"] == "優勝者"
            champions = t.champions()
            for blk in screens[0]["blocks"]:
                lines = [x.strip() for x in blk["text"].splitlines() if x.strip()]
                assert lines[lines.index("優勝") + 1] == champions[blk["block"]], lines
            assert sorted(kinds["winners"]) == t.blocks()
            assert "結果" in headings["bracket"]
        else:
            assert "winners" not in kinds


def test_the_top_four_are_marked_only_where_results_decided():
    """Issue 34: 8 players level on 0 are not "the top four"; a tie across 4th place is not
    marked (a lot will decide it), the places above it are."""
    from reader.tournament.scoring import Row

    def rows(*keys):
        return [Row(i, f"P{i}", played=1 if any(keys) else 0, wins=w, cards=c)
                for i, (w, c) in enumerate(keys)]

    assert pages.highlighted(rows(*[(0, 0)] * 8), []) == set()
    assert pages.highlighted(rows((3, 20), (2, 18), (2, 15), (1, 9), (1, 9), (0, 3)), []) \
        == {0, 1, 2}
    assert pages.highlighted(rows((3, 20), (2, 18), (2, 15), (1, 10), (1, 9)), []) \
        == {0, 1, 2, 3}
    # a block of three: the top two go on (to the final)
    assert pages.highlighted(rows((2, 10), (1, 8), (0, 3)), []) == {0, 1}
