"""The board page on a small screen (issue 36): the torifuda as images the project's card
renderer drew, laid out to fit a 390×844 phone and a 1024×1366 tablet in both orientations,
the memorisation counted down while the player drags their cards, a mark where each touch
landed, the hints, the screen's wake lock asked for.

The host's side (card images, arrange, the memorisation's start) is tested in process; the
page in Debian's headless Chromium against ``karuta practice --web`` (as
``test_web_practice``), each size screenshotted into the test's tmp directory and measured:
every card box inside the viewport, no two overlapping, each at least ``MIN_W`` px wide, the
far side's turned 180°, every card's image loaded at a size at least its box's."""
from __future__ import annotations

import io
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_web import browser, press_start, wait_js  # noqa: F401  (a fixture)
from test_web_practice import QUICK, Board

from audio_fixtures import pulse_server  # noqa: F401  (a fixture)

#: the narrowest a card may be drawn, CSS px, on a phone (its landscape: six rows in 390 px)
#: and on a tablet (25 a side)
MIN_W = {"phone": 40, "tablet": 48}
SIZES = {"phone": [(390, 844), (844, 390)], "tablet": [(1024, 1366), (1366, 1024)]}


# ---------------------------------------------------------------- the host's side, in process
def _board(**kw):
    from audio.voice import ToneVoice
    from reader.practice.headless import new_match
    from reader.practice.match import Seat
    from reader.web.board import WebBoard

    seats = {"A": Seat("human"), "B": Seat("bot", 1)}
    m = new_match("kyogi", seats, 7, ToneVoice(), cards=5,
                  reading={"joka": False, "take_ms": 1000})
    board = WebBoard(m, m.voice, "123456", echo=lambda s: None, **kw)
    from reader.web.boardproto import VERSION

    out = board.receive({"t": "hello", "v": VERSION, "code": "123456", "device": "a" * 32},
                        0.0, 1, "1.2.3.4")
    return m, board, out


def test_each_card_of_the_match_is_an_image_drawn_once_by_the_card_renderer():
    """The welcome says where the cards are; each card of the deal is an image of its size
    (the renderer's 52:73), drawn once (the same bytes again), refused for another match's
    token, a card not dealt, a size not offered."""
    import pygame

    from reader.web.cards import card_size

    m, board, out = _board()
    welcome = out[0]
    assert welcome["t"] == "welcome" and welcome["cards"] == f"/card/{board.token}/"
    dealt = sorted(c for h in m.deal.hands.values() for c in h)
    assert len(dealt) == 10
    for w in welcome["widths"]:
        body, ctype = board.card(board.token, w, dealt[0], welcome["ext"])
        assert ctype == f"image/{welcome['ext']}"
        img = pygame.image.load(io.BytesIO(body), f"x.{welcome['ext']}")
        assert img.get_size() == card_size(w)
        # the face: cream paper inside a green border, ink in the middle
        assert img.get_at((1, 1))[:3] == (34, 104, 62)
        assert img.get_at((w // 2, 8 * w // 96 + 2))[:3] != (34, 104, 62)
        assert board.card(board.token, w, dealt[0], welcome["ext"])[0] is body  # cached
    other = next(c for c in range(1, 101) if c not in dealt)
    assert board.card(board.token, 96, other, welcome["ext"]) == "not a card of this match"
    assert board.card(board.token, 97, dealt[0], welcome["ext"]) == "no cards of that size"
    assert board.card("0" * 32, 96, dealt[0], welcome["ext"]) == "not this board's card"


def test_the_memorisation_starts_on_start_and_the_player_arranges_meanwhile():
    """With a memorisation, Start begins it (the view's line counts it down), the player's
    drags move their cards (the match keeps them: the log's layout), a drag of the other
    side's card is nobody's, and the second start (the countdown's end, or skip) begins the
    reading, after which nothing moves."""
    m, board, _ = _board(memorize_s=60.0)
    out = board.receive({"t": "start"}, 1.0, 1, "1.2.3.4")
    view = next(o["view"] for o in out if o["t"] == "view")
    assert view["phase"] == "memorize" and view["line"]["kind"] == "memorize"
    assert view["line"]["left_s"] == pytest.approx(60.0)
    t = m.layout()["A"]
    card = t.cards[0]
    before = t.where(card)
    to = (0, 1 - before[1], 0) if before[:2] != (0, 1) else (1, 0, 0)
    out = board.receive({"t": "arrange", "card": card, "row": to[0], "side": to[1],
                         "index": to[2]}, 2.0, 1, "1.2.3.4")
    assert m.layout()["A"].where(card) == to
    view = next(o["view"] for o in out if o["t"] == "view")
    assert [ln for ln in view["board"]["territories"]["A"]["rows"][to[0]][to[1]]][0] == card
    assert m.log_records()[0]["practice"]["layout"]["A"] == m.layout()["A"].to_json()
    theirs = m.layout()["B"].cards[0]
    board.receive({"t": "arrange", "card": theirs, "row": 0, "side": 0, "index": 0,
                   "player": "B"}, 3.0, 1, "1.2.3.4")  # (B is the bot: not at this page)
    assert m.layout()["B"].where(theirs) != (0, 0, 0) or theirs == m.layout()["B"].rows[0][0][0]
    board.receive({"t": "start"}, 4.0, 1, "1.2.3.4")
    assert board.session.phase == "reading"
    again = m.layout()["A"]
    board.receive({"t": "arrange", "card": card, "row": 2, "side": 0, "index": 0}, 5.0, 1,
                  "1.2.3.4")
    assert m.layout()["A"] == again


def test_without_a_memorisation_start_begins_the_reading():
    _, board, _ = _board()
    board.receive({"t": "start"}, 1.0, 1, "1.2.3.4")
    assert board.session.phase == "reading"


def test_hints_dim_what_the_page_has_heard_rule_out():
    """``--hints``: once the page has heard a 上の句's first sounds, the cards they rule out
    are in the view's ``dim``; without it, none."""
    for hints in (True, False):
        m, board, _ = _board(hints=hints)
        board.receive({"t": "start"}, 1.0, 1, "1.2.3.4")
        kami = next(s for s in m.plan.segments if s.kind == "kami" and isinstance(s.poem, int))
        out = board.receive({"t": "at", "frame": int(kami.end)}, 2.0, 1, "1.2.3.4")
        view = next(o["view"] for o in out if o["t"] == "view")
        assert bool(view["board"]["dim"]) == hints, (hints, view["board"]["dim"])


# ---------------------------------------------------------------- the page, in a browser
MEASURE = """(() => {
  const W = innerWidth, H = innerHeight, out = {W, H, boxes: [], far: [], imgs: []};
  for (const el of document.querySelectorAll('.card[data-card]')) {
    const r = el.getBoundingClientRect();
    out.boxes.push([r.left, r.top, r.right, r.bottom, Number(el.dataset.card)]);
    const im = el.querySelector('img');
    out.imgs.push(im ? [im.complete, im.naturalWidth, r.width * devicePixelRatio] : null);
    if (el.closest('.far')) {
      const m = new DOMMatrix(getComputedStyle(el).transform);
      out.far.push([m.a, m.d]);
    }
  }
  return out;
})()"""


#: card -> [its side, its box] as drawn now
BOXES = """Object.fromEntries([...document.querySelectorAll('.card[data-card]')].map(e => {
  const r = e.getBoundingClientRect();
  return [e.dataset.card, [e.closest('.far') ? 'far' : 'near',
                           [r.left, r.top, r.right, r.bottom].map(Math.round)]];
}))"""


def measure(b, size, kind):
    """The page's card boxes at ``size``, checked; the smallest card width."""
    got = b.js(MEASURE)
    assert (got["W"], got["H"]) == size
    boxes = got["boxes"]
    assert boxes, "no cards drawn"
    for x0, y0, x1, y1, c in boxes:
        assert x0 >= 0 and y0 >= 0 and x1 <= size[0] + 0.5 and y1 <= size[1] + 0.5, \
            (size, c, (x0, y0, x1, y1))
        assert x1 - x0 >= MIN_W[kind], (size, c, x1 - x0)
    for i, a in enumerate(boxes):
        for z in boxes[i + 1:]:
            overlap = min(a[2], z[2]) - max(a[0], z[0]), min(a[3], z[3]) - max(a[1], z[1])
            assert overlap[0] <= 0.5 or overlap[1] <= 0.5, (size, a, z)
    assert got["far"] and all(a < -0.99 and d < -0.99 for a, d in got["far"]), got["far"]
    for im in got["imgs"]:
        assert im is not None and im[0] and im[1] >= min(im[2], 168) - 1, im
    return min(x1 - x0 for x0, _, x1, _, _ in boxes)


def resize(b, w, h):
    b.call("Emulation.setDeviceMetricsOverride", width=w, height=h, deviceScaleFactor=1,
           mobile=True)
    wait_js(b, f"innerWidth === {w} && innerHeight === {h}",
            what=f"the new size ({b.js('[innerWidth, innerHeight]')})")
    time.sleep(0.3)  # (the page's resize handler, the images of the new size)
    wait_js(b, "[...document.querySelectorAll('.card img')].every(i => i.complete "
               "&& i.naturalWidth > 0)", what="the cards' images")


def drag(b, frm, to, steps=6):
    pts = [(frm[0] + (to[0] - frm[0]) * k / steps, frm[1] + (to[1] - frm[1]) * k / steps)
           for k in range(steps + 1)]
    b.call("Input.dispatchTouchEvent", type="touchStart",
           touchPoints=[{"x": pts[0][0], "y": pts[0][1], "id": 1}])
    for x, y in pts[1:]:
        b.call("Input.dispatchTouchEvent", type="touchMove", touchPoints=[{"x": x, "y": y, "id": 1}])
        time.sleep(0.02)
    b.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])


@pytest.mark.realtime
@pytest.mark.parametrize("kind,cards", [("phone", 8), ("tablet", 25)])
def test_the_board_fits_a_phone_and_a_tablet_both_ways_and_cards_are_dragged(
        tmp_path, browser, kind, cards):  # noqa: F811
    """The memorisation (1 minute) on the page: its countdown runs; the board at both
    orientations of the device is measured (and screenshotted to tmp); a card of the
    player's is dragged to the far end of 上段, and the laptop's layout has it there."""
    board = Board(tmp_path, *QUICK, "--vs", "bot:1", "--cards", str(cards), "--seed", "5",
                  "--memorize", "1")
    try:
        w, h = SIZES[kind][0]
        browser.load(board.page, w, h, touch=True)
        wait_js(browser, "karuta.phase === 'join' && karuta.view", what="the join screen")
        assert browser.js("document.getElementById('small').hidden")  # (a phone's 8, a tablet)
        press_start(browser)
        wait_js(browser, "karuta.view && karuta.view.phase === 'memorize'", what="memorisation")
        wait_js(browser, "/^[01]:[0-5][0-9]$/.test(document.getElementById('countdown')"
                         ".textContent)", what="the countdown")
        first = browser.js("document.getElementById('countdown').textContent")
        widths = {}
        for size in SIZES[kind]:
            resize(browser, *size)
            widths[size] = measure(browser, size, kind)
            browser.screenshot_now(tmp_path / f"{kind}-{size[0]}x{size[1]}.png")
        wait_js(browser, f"document.getElementById('countdown').textContent !== {first!r}",
                what="the countdown running")
        # the wake lock: karuta.test is plain http (not a secure context): the page says so
        assert "plain http" in browser.js("karuta.wake"), browser.js("karuta.wake")
        resize(browser, *SIZES[kind][0])
        # drag the first card of A's 下段 left group onto 上段's right group's edge place
        src = browser.js("(() => { const e = document.querySelector("
                         "'.near .card[data-card][data-row=\"2\"]'); const r = "
                         "e.getBoundingClientRect(); return [Number(e.dataset.card), "
                         "r.x + r.width / 2, r.y + r.height / 2]; })()")
        row0 = browser.js("(() => { const r = document.querySelector("
                          "'.near .row[data-row=\"0\"]').getBoundingClientRect(); "
                          "return [r.right - 4, r.y + r.height / 2]; })()")
        drag(browser, src[1:], row0)
        card = src[0]
        wait_js(browser, f"karuta.view.board.territories.A.rows[0][1].includes({card})",
                what="the dragged card on 上段, right")
        browser.screenshot_now(tmp_path / f"{kind}-dragged.png")
        assert any(m.get("t") == "arrange" and m["card"] == card
                   for m in browser.js("karuta.sent")), "the drag went to the laptop"
        assert "drag" in browser.js("document.getElementById('line').textContent")
    finally:
        board.end()
    print(kind, {f"{w}x{h}": f"{v:.0f} px" for (w, h), v in widths.items()})


@pytest.mark.realtime
def test_a_phone_dealt_25_a_side_says_on_its_join_screen_how_to_deal_fewer(
        tmp_path, browser):  # noqa: F811
    """A phone-sized page (390x844) joining a 25-a-side match: its cards would be about 22 px
    wide, and the join screen says so and how the laptop deals fewer with the 友札 kept."""
    board = Board(tmp_path, *QUICK, "--vs", "bot:1", "--cards", "25", "--seed", "5")
    try:
        browser.load(board.page, *SIZES["phone"][0], touch=True)
        line = wait_js(browser, "karuta.phase === 'join' && karuta.view && "
                       "!document.getElementById('small').hidden && "
                       "document.getElementById('small').textContent", what="the hint")
        browser.screenshot_now(tmp_path / "phone-25-join.png")
    finally:
        board.end()
    m = re.fullmatch(r"25 cards a side are (\d+) px wide on this phone: for a phone the laptop "
                     r"deals fewer with the 友札 kept \(karuta practice --web --cards 8 "
                     r"--tomofuda\)", line)
    assert m and int(m.group(1)) < 40, line
    print(line)


@pytest.mark.realtime
def test_goshiki_fits_a_phone_both_ways(tmp_path, browser):  # noqa: F811
    """Goshiki on a phone: each player's ten in two rows of five (the far side's turned),
    measured as kyogi's at 390×844 and 844×390; the page loaded again during the
    memorisation goes on with it (its Start does not skip it)."""
    board = Board(tmp_path, *QUICK, "--rules", "goshiki", "--vs", "bot:1", "--seed", "5",
                  "--memorize", "1")
    try:
        browser.load(board.page, *SIZES["phone"][0], touch=True)
        wait_js(browser, "karuta.phase === 'join'", what="the join screen")
        press_start(browser)
        wait_js(browser, "karuta.view && karuta.view.phase === 'memorize'", what="memorisation")
        widths = {}
        for size in SIZES["phone"]:
            resize(browser, *size)
            widths[size] = measure(browser, size, "phone")
            assert browser.js("document.querySelectorAll('.card[data-card]').length") == 20
            assert browser.js("document.querySelectorAll('.near .row').length") == 2
            browser.screenshot_now(tmp_path / f"goshiki-{size[0]}x{size[1]}.png")
        # the page loaded again (a phone that slept) mid-memorisation: Start goes on counting
        # it down, it does not skip it
        browser.load(board.page, *SIZES["phone"][0], touch=True)
        wait_js(browser, "karuta.phase === 'join'", what="the join screen again")
        press_start(browser)
        wait_js(browser, "karuta.begun && /^0:[0-5][0-9]$/.test(document.getElementById("
                         "'countdown').textContent)", what="the countdown again")
        time.sleep(0.5)
        assert browser.js("karuta.view.phase") == "memorize"
        assert not any(m.get("t") == "start" for m in browser.js("karuta.sent"))
    finally:
        board.end()
    print("goshiki", {f"{w}x{h}": f"{v:.0f} px" for (w, h), v in widths.items()})


def _centre(b, selector):
    r = b.js(f"(() => {{ const r = document.querySelector({selector!r})"
             ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    return r[0], r[1]


@pytest.mark.realtime
def test_a_touch_off_every_card_is_marked_until_the_next_read_and_hints_dim(
        tmp_path, browser):  # noqa: F811
    """``--hints``, no memorisation: once a 上の句 is heard, ruled-out cards are dimmed on
    the page; a touch between the cards leaves a red dot ("touched but missed") that stays
    while the read goes on and is gone when the next read begins; no card that stayed on the
    board moved (a card that left, taken or sent, left its place empty)."""
    board = Board(tmp_path, *QUICK, "--vs", "bot:1", "--cards", "25", "--seed", "5",
                  "--hints")
    try:
        browser.load(board.page, 1024, 1366, touch=True)
        wait_js(browser, "karuta.phase === 'join'", what="the join screen")
        press_start(browser)
        wait_js(browser, "karuta.timeline.anchors.length > 0 && karuta.readNo >= 1", timeout=30, what="read 1")
        wait_js(browser, "document.querySelectorAll('.card.dim').length > 0", timeout=30,
                what="dimmed cards")
        read = browser.js("karuta.readNo")
        before = browser.js(BOXES)
        # between the two sides: the middle bar's left end (no card there)
        x, y = browser.js("(() => { const r = document.getElementById('far')"
                          ".getBoundingClientRect(); return [r.x + 2, r.bottom - 1]; })()")
        browser.touch(x, y)
        wait_js(browser, "document.querySelectorAll('.dot.off').length === 1", what="the dot")
        browser.screenshot_now(tmp_path / "tablet-hints-dot.png")
        time.sleep(0.3)
        if browser.js("karuta.readNo") == read:
            assert browser.js("document.querySelectorAll('.dot').length") == 1
        end = time.monotonic() + 30
        while browser.js("karuta.readNo") == read and time.monotonic() < end:
            if browser.js("!document.getElementById('send').hidden"):  # (the bot faulted)
                browser.touch(*_centre(browser, "#send"))
            time.sleep(0.1)
        wait_js(browser, f"karuta.readNo > {read}", timeout=1, what="the next read")
        assert browser.js("document.querySelectorAll('.dot').length") == 0
        # no card moved: one that left (taken, sent) left its place empty
        after = browser.js(BOXES)
        stayed = [c for c in before if c in after and before[c][0] == after[c][0]]
        assert len(stayed) >= len(before) - 2 and len(after) <= len(before), (before, after)
        for c in stayed:
            assert before[c] == after[c], (c, before[c], after[c])
    finally:
        board.end()


# ---------------------------------------------------------------- a phone's deal: 友札 kept
def _unpaired(cards) -> list[int]:
    """The cards with a 友札 among the 100 none of which is dealt (either way round)."""
    from reader.memory.deck import tomofuda

    rel = {c: {t for t in range(1, 101) if t != c and (t in tomofuda(c) or c in tomofuda(t))}
           for c in cards}
    return [c for c in cards if rel[c] and not rel[c] & set(cards)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 50))
def test_a_tomofuda_deal_keeps_every_card_with_its_tomofuda(seed, n):
    """``--tomofuda``: 2N distinct cards, half each, and every card that has a 友札 among the
    100 has one dealt too -- but for at most one (the last group drawn, cut to fit)."""
    import random

    from reader.practice.deal import deal

    d = deal("kyogi", random.Random(seed), cards=n, tomo=True)
    cards = d.hands["A"] + d.hands["B"]
    assert len(d.hands["A"]) == len(d.hands["B"]) == n and len(set(cards)) == 2 * n
    assert len(_unpaired(cards)) <= 1, _unpaired(cards)


def test_a_short_tomofuda_match_deals_pairs_and_goshiki_refuses_it(tmp_path):
    """Through the command: 8 a side with ``--tomofuda`` (the log's deal has at most one card
    without its 友札; the same seed without it: several); goshiki refuses it in one line."""
    import json

    from cli_run import run_inproc

    hands = {}
    for flag in ("--tomofuda", None):
        log = tmp_path / f"{flag}.jsonl"
        r = run_inproc("practice", "--bot-vs-bot", "1,1", "--json", "--cards", "8",
                       "--seed", "11", "--voice", "tone", "--log", str(log),
                       *([flag] if flag else []), data_dir=tmp_path / "data")
        assert r.returncode == 0, r.stderr
        head = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
        hands[flag] = head["A"] + head["B"]
    assert len(_unpaired(hands["--tomofuda"])) <= 1
    assert len(_unpaired(hands[None])) >= 3, hands[None]
    r = run_inproc("practice", "--rules", "goshiki", "--tomofuda", "--bot-vs-bot", "1,1",
                   "--voice", "tone", data_dir=tmp_path / "data")
    assert r.returncode == 1 and r.stderr.startswith("karuta: --tomofuda deals kyogi's cards")
    assert len(r.stderr.strip().splitlines()) == 1
