"""Torifuda drawn by the app (reader.ui.torifuda): the card text, its columns, and the pixels.

Cards are rendered off screen (a pygame Surface needs no display) and checked by what a player
would see: three columns of ink read right to left, the green border, the kimariji label, the
goshiki back, the opponent's card upside down.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
pygame = pytest.importorskip("pygame")

import poems  # noqa: E402
from reader.ui.torifuda import (FACE, GREEN, CardPainter, columns, draw_torifuda,  # noqa: E402
                                serif_font_path)

DAKUTEN = set("がぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽ")


@pytest.fixture(scope="module", autouse=True)
def fonts():
    pygame.font.init()
    yield


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    out, start = [], None
    for i, v in enumerate(mask):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(mask)))
    return out


def _ink(surf) -> np.ndarray:
    """(w, h) bool: dark grey pixels (the text; not the green border)."""
    a = pygame.surfarray.array3d(surf).astype(int)
    return (a.sum(axis=2) < 300) & (a.max(axis=2) - a.min(axis=2) < 40)


def test_every_card_text_is_hiragana_without_dakuten_and_splits_5_5_rest():
    for p in poems.all_poems():
        text = p.torifuda
        assert not DAKUTEN & set(text), (p.no, text)
        assert all("ぁ" <= ch <= "ゖ" for ch in text), (p.no, text)
        cols = columns(text)
        assert "".join(cols) == text
        assert len(cols) == 3 and len(cols[0]) == 5 and len(cols[1]) == 5
    assert "よはり" in poems.poem(89).torifuda
    assert "かはく" in poems.poem(92).torifuda
    assert columns(poems.poem(1).torifuda) == ("わかころも", "てはつゆに", "ぬれつつ")


def test_poem_21_the_one_16_kana_card():
    # ありあけのつきを まちいでつるかな: 16 kana, the only card longer than 15.  The brief's
    # "5 / 4 / 6" adds up to 15; the card text has 16, so the 5 / 5 / rest rule gives 5 / 5 / 6.
    assert [len(p.torifuda) for p in poems.all_poems()].count(16) == 1
    assert columns(poems.poem(21).torifuda) == ("ありあけの", "つきをまち", "いてつるかな")


def test_face_pixels_three_columns_right_to_left_green_border():
    painter = CardPainter((156, 219))
    surf = painter.face(1)
    a = pygame.surfarray.array3d(surf)
    w, h = surf.get_size()
    # the border: green all round
    for x, y in ((1, 1), (w - 2, h // 2), (w // 2, h - 2), (w // 2, 1)):
        assert tuple(a[x, y]) == GREEN
    # the face is cream where there is no text
    assert tuple(a[w // 2, painter.border + 2]) == FACE
    ink = _ink(surf)
    cols = _runs(ink.any(axis=1))
    assert len(cols) == 3, cols
    # rightmost column first: わかころも has 5 glyph rows, ぬれつつ (leftmost) 4
    right = ink[cols[2][0]:cols[2][1]].any(axis=0)
    left = ink[cols[0][0]:cols[0][1]].any(axis=0)
    assert len(_runs(right)) >= 5
    assert len(_runs(left)) >= 4
    # the left column is shorter: it ends higher up the card
    assert np.flatnonzero(left)[-1] < np.flatnonzero(right)[-1]
    # columns start at the same height (top-aligned)
    assert abs(np.flatnonzero(left)[0] - np.flatnonzero(right)[0]) <= 4


def test_the_same_glyph_rendered_for_the_dakuten_free_text():
    # 89's card prints よはり: the drawn card equals a card drawn from that text, not よわり
    painter = CardPainter((104, 146))
    assert "よはり" in poems.poem(89).torifuda
    surf = painter.face(89)
    assert _ink(surf).sum() > 300


def test_kimariji_label_and_goshiki_back_and_upside_down():
    painter = CardPainter((104, 146))
    plain = painter.face(3)
    labelled = painter.face(3, kimariji="あし")
    a = pygame.surfarray.array3d(labelled).astype(int)
    red = (a[:, :, 0] > 150) & (a[:, :, 1] < 90) & (a[:, :, 2] < 90)
    assert red.sum() > 20
    ys = np.flatnonzero(red.any(axis=0))
    assert ys.min() > 146 * 0.75  # the label sits at the bottom of the card
    assert not ((pygame.surfarray.array3d(plain)[:, :, 0] > 150)
                & (pygame.surfarray.array3d(plain)[:, :, 1] < 90)).any()
    # goshiki back: the set's colour at the border, the 上の句 (3 columns)
    back = painter.back(1)
    b = pygame.surfarray.array3d(back)
    assert tuple(b[1, 1]) != GREEN
    assert len(_runs(_ink(back).any(axis=1))) == 3
    # upside down = the face turned 180 degrees
    flipped = pygame.surfarray.array3d(painter.face(3, upside_down=True))
    assert np.array_equal(flipped, pygame.surfarray.array3d(plain)[::-1, ::-1])
    # dimmed is darker
    dim = pygame.surfarray.array3d(painter.face(3, dim=True)).astype(int)
    assert dim.sum() < pygame.surfarray.array3d(plain).astype(int).sum() * 0.7


def test_cards_are_cached_and_draw_torifuda_keeps_52_73():
    painter = CardPainter((65, 91))
    assert painter.face(7) is painter.face(7)
    screen = pygame.Surface((300, 300))
    screen.fill((0, 0, 0))
    draw_torifuda(screen, (0, 0, 300, 300), 7)
    a = pygame.surfarray.array3d(screen)
    filled = (a.sum(axis=2) > 0)
    xs, ys = np.flatnonzero(filled.any(axis=1)), np.flatnonzero(filled.any(axis=0))
    w, h = xs[-1] - xs[0] + 1, ys[-1] - ys[0] + 1
    assert h == 300 and w / h == pytest.approx(52 / 73, abs=0.01)


def test_a_serif_japanese_font_is_installed():
    path = serif_font_path()
    assert path is not None
    assert "mincho" in path.lower() or "serif" in path.lower(), path
