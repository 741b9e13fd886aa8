"""現幻 (seed 000): a role-playing system played with the Hyakunin Isshu deck itself.

Cards are poem numbers: yomifuda (読み札, the 山札 and the hands) and torifuda (取り札, the
歌枕札 scene cards) are two separate sets of 1-100.

State (plain data)::

    {"pile": [no, ...], "discard": [no, ...],                    # yomifuda 山札 (top first), 捨て札
     "players": {name: {"kagaku": n, "hand": [no], "won": [no], "points": n}},
     "uta_pile": [no], "keys": [no], "scene": [no], "uta_discard": [no],   # torifuda
     "scene_no": n, "contest": None|{...}, "talk": None|{...}, "compose": None|{...},
     "poems": [{id, player, mode, ku: [[no, k], ...], ...}], "judgements": n,
     "sheets": {name: {"知": n, "男": n, "歌学": n, ...}}}

Every yomifuda is in exactly one of pile, discard, a hand or the cards drawn for a poem being
composed; every torifuda in one of uta_pile, keys, scene, uta_discard or a player's won cards.

Rules, and the choices made where the seed leaves them to the GM (settings, see
``DEFAULT_SETTINGS``):

- 歌人区分: ``poems/data/poet_categories.json`` (官 30 + 2, 男 34, 女 21, 僧 15), overridable per
  poem (``categories`` setting).  Judgements count 官 and 僧 together as 官僧; 持統天皇 (2) and
  式子内親王 (89) count as 女 or 官僧, whichever the judgement names (the judge's choice).
- Hands: 3 yomifuda at the start (``start_hand``); a refill of one card after each judgement
  while the hand is below the player's number of 歌学 specialities (``refill``).  The start
  hand is dealt whole even to a player with fewer 歌学 (the seed says 3); refills respect it.
- When the 山札 runs out, the discards are reshuffled into it (``reshuffle``, default on; the
  seed does not say).  Likewise the torifuda discards refill the 歌枕 pile.
- Scenes: ``scene`` turns up ``scene_cards`` (3) 歌枕札, the previous scene's untaken ones go to
  the torifuda discards; ``key N`` puts a scenario key card up (the seed: at a scene's start;
  allowed any time, the GM's call).
- 行為判定 (``act``): turn up 能力値＋文化値 cards; 達成値 = the cards of the named attribute
  among them and among the hand cards put out (at most the 特技 value); success when 達成値 ≥
  the difficulty (簡単 1, ふつう 2, 難しい 3; higher is allowed for contests and 歌語り; the
  words are accepted too, with さらに難しい 4 and もっと難しい 5).  DICE and 特技 are numbers, or
  names on the judge's sheet (``sheet WHO 知=3 男=2 歌学=2``): DICE 知 = 知 + the sheet's
  文化値 of the judgement's attribute (判定値＝能力値＋文化値).
  Degree of success = 達成値 − difficulty + 1 (choice: 1 is a bare success), × 2^k for k
  cards of the judgement whose poem is a face-up scene card (``scene_match``: "all" cards of
  the judgement, default, or only "hand" cards); the player then takes those scene cards.
- 対決判定 (``contest`` / ``turn``): the participants judge in order, each with their own
  能力値＋文化値 and 特技 (``a:7:2``, else the shared values; names on the sheets allowed), each
  declaring a difficulty at least the minimum and at least what the previous participant
  declared, even if that one failed (「直前の人が宣言した以上」; setting ``contest_floor=success``:
  at least the last successful declaration, as rules 1 did); a failure drops out (``turn
  pass`` drops out without judging); rounds repeat until one is left.  Ranking: the
  last one first, then in reverse order of dropping.  Teams: the last one's team wins;
  ``contest stop`` ends it at a time limit (the team with most members left wins).  When
  the GM allows joining midway (``joinable``), ``contest join NAME`` adds a participant at
  the end of the order.
- 歌語り判定 (``talk``): a 行為判定 whose difficulty is at least 1 (PC), 2 (acquaintance),
  3 (a stranger of the same era), 4 (the past), 5 (the future); the 文化値 chosen first stays
  for the whole exchange.  On success the player composes: solo the first time, 返歌 after.
- 歌詠み判定 (``compose`` then ``place``): solo and 撰歌 draw 5, 返歌 and 連歌 3 plus the source
  cards of the poem answered.  ``place`` names one ku from each card (``12.3`` = poem 12's
  third ku), in the order of the new poem; each source poem at most once.  Ku 1 and 3 of a
  poem are five-sound ku, ku 2, 4 and 5 seven-sound ku; the result must be 5-7-5-7-7 (a 連歌
  joined to the earlier ku: 5-7-5-7-7 or 5-7-7-5-7).  Sources: the drawn cards, the poem
  answered, the player's won 歌枕札 and the face-up scene cards, the player's hand (the 歌学
  judgement that allows it is the GM's to ask for) and, except in 撰歌, another player's hand
  (相談／助言).  A hand card needs a 《歌学》〈知〉 success with a 文化値 of its attribute,
  declared at ``compose`` (``hand=ATTR``; advice: ``advice=ATTR``, the adviser's success);
  撰歌 uses the player's hand without one and allows no advice.  The 撰歌 option of making up
  a ku from scratch or taking one from an anthology is not kept here (free text).  撰歌 must
  use a won 歌枕札 when the player holds one.  Drawn and hand cards
  used go to the discards; 歌枕札 stay.
- Scoring (``score``): GM 0-2, players 0-1 each, +1 per scene card used well; the sum is the
  poem's 敬慕点, added to the composer's total.
- Poems from outside (``poem``): one of the hundred (``poem 小町 9``) or an NPC's poem of ku of
  the hundred (``poem oni 12.1 45.2 …``), to be answered by a 返歌 or joined by a 連歌; not
  scored.  In a 返歌 to a whole poem of the hundred its five ku stand for the five cards the
  GM lays out, so more than one of them may be taken (each once).
- Rules versions (``settings["rules"]``, set by the store per action): 1 for the actions of a
  save from before rules 2 (the 対決判定 floor was the last successful declaration).
"""
from __future__ import annotations

import copy
import json
import marshal
import random
from functools import lru_cache
from importlib import resources

from reader.base.limits import check_name
from reader.table import ActionError
from reader.base.statefiles import decode_json

__all__ = ["check_settings", "new_state", "apply", "describe", "view", "categories", "attributes", "ATTRS",
           "FIVE", "SEVEN", "ku_text", "vertical", "poem_reading"]

CATS = ("官", "男", "女", "僧")
ATTRS = ("男", "女", "官僧")
_ATTR_ALIASES = {"男": "男", "女": "女", "官僧": "官僧", "官": "官僧", "僧": "官僧",
                 "m": "男", "man": "男", "men": "男", "w": "女", "woman": "女", "women": "女",
                 "k": "官僧", "kanso": "官僧", "kan": "官僧", "so": "官僧"}
FIVE = (1, 3)  # ku positions (1-based) of five-sound ku in a poem
SEVEN = (2, 4, 5)
PATTERNS = {"5-7-5-7-7": (5, 7, 5, 7, 7), "5-7-7-5-7": (5, 7, 7, 5, 7)}
TALK_MIN = {"pc": 1, "acquaintance": 2, "contemporary": 3, "past": 4, "future": 5}
_TALK_ALIASES = {"pc": "pc", "知人": "acquaintance", "acquaintance": "acquaintance",
                 "同時代": "contemporary", "contemporary": "contemporary", "stranger": "contemporary",
                 "過去": "past", "past": "past", "未来": "future", "future": "future"}
DRAW = {"solo": 5, "senka": 5, "henka": 3, "renga": 3}
MODES_JA = {"solo": "単独", "henka": "返歌", "renga": "連歌", "senka": "撰歌", "outside": "外の歌"}

DEFAULT_SETTINGS = {"start_hand": 3, "scene_cards": 3, "keys": [], "refill": True,
                    "reshuffle": True, "scene_match": "all", "categories": {},
                    "contest_floor": "declared"}


# --- categories --------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _category_data() -> dict:
    text = resources.files("poems").joinpath("data", "poet_categories.json").read_text(encoding="utf-8")
    return decode_json(text)


def categories(overrides: dict | None = None) -> dict[int, tuple[str, ...]]:
    """Poem number -> its categories (one, or two for 持統天皇 and 式子内親王), with overrides
    ``{"12": "男"}`` or ``{"12": ["女", "官"]}`` applied."""
    return dict(_categories(json.dumps(overrides or {}, sort_keys=True, ensure_ascii=False)))


@lru_cache(maxsize=8)
def _categories(overrides_json: str) -> tuple:
    overrides = decode_json(overrides_json)
    out = {}
    for p in _category_data()["poets"]:
        out[p["no"]] = (p["category"],) + ((p["also"],) if p.get("also") else ())
    for k, v in overrides.items():
        out[int(k)] = tuple(v) if isinstance(v, list) else (v,)
    return tuple(out.items())


def _check_overrides(over) -> dict:
    if not isinstance(over, dict):
        raise ActionError("categories must map poem numbers to 官, 男, 女 or 僧")
    clean = {}
    for k, v in over.items():
        try:
            no = int(k)
        except (TypeError, ValueError):
            no = 0
        if not 1 <= no <= 100:
            raise ActionError(f"categories: {k!r} is not a poem number 1-100")
        vals = v if isinstance(v, list) else [v]
        if not vals or not all(x in CATS for x in vals) or len(set(vals)) != len(vals):
            raise ActionError(f"categories: poem {no}: {v!r} is not one or two of 官 男 女 僧")
        clean[str(no)] = vals if len(vals) > 1 else vals[0]
    return clean


def attributes(no: int, cats: dict[int, tuple[str, ...]]) -> set[str]:
    """The judgement attributes (男, 女, 官僧) card ``no`` can count as."""
    return {"官僧" if c in ("官", "僧") else c for c in cats[no]}


def _attr(a) -> str:
    v = _ATTR_ALIASES.get(str(a).strip().lower() if a is not None else "")
    if v is None:
        raise ActionError(f"the attribute must be 男, 女 or 官僧, not {a!r}")
    return v


# --- settings and state ---------------------------------------------------------------------------

def check_settings(s: dict) -> dict:
    out = copy.deepcopy(DEFAULT_SETTINGS)
    for k, v in s.items():
        if k not in DEFAULT_SETTINGS:
            raise ActionError(f"unknown setting {k!r} (settings: {', '.join(DEFAULT_SETTINGS)})")
        out[k] = v
    for k in ("start_hand", "scene_cards"):
        if isinstance(out[k], bool) or not isinstance(out[k], int) or not 0 <= out[k] <= 20:
            raise ActionError(f"setting {k} must be a whole number 0-20, not {out[k]!r}")
    for k in ("refill", "reshuffle"):
        if not isinstance(out[k], bool):
            raise ActionError(f"setting {k} must be true or false, not {out[k]!r}")
    if out["scene_match"] not in ("all", "hand"):
        raise ActionError(f"setting scene_match must be all or hand, not {out['scene_match']!r}")
    if out["contest_floor"] not in ("declared", "success"):
        raise ActionError("setting contest_floor must be declared (the seed: at least the previous "
                          f"declaration) or success, not {out['contest_floor']!r}")
    keys = out["keys"]
    if not isinstance(keys, list) or not all(_is_no(k) for k in keys) or len(set(keys)) != len(keys):
        raise ActionError(f"key cards must be distinct poem numbers 1-100, not {keys!r}")
    out["categories"] = _check_overrides(out["categories"])
    return out


def _is_no(n) -> bool:
    return not isinstance(n, bool) and isinstance(n, int) and 1 <= n <= 100


def new_state(settings: dict, rng: random.Random) -> dict:
    pile = list(range(1, 101))
    rng.shuffle(pile)
    keys = list(settings["keys"])
    uta = [n for n in range(1, 101) if n not in keys]
    rng.shuffle(uta)
    return {"pile": pile, "discard": [], "players": {}, "uta_pile": uta, "keys": keys,
            "scene": [], "uta_discard": [], "scene_no": 0, "contest": None, "talk": None,
            "compose": None, "poems": [], "judgements": 0, "sheets": {}}


def yomifuda_places(st: dict) -> list[int]:
    out = st["pile"] + st["discard"]
    for p in st["players"].values():
        out += p["hand"]
    if st["compose"]:
        out += st["compose"]["drawn"]
    return out


def torifuda_places(st: dict) -> list[int]:
    out = st["uta_pile"] + st["keys"] + st["scene"] + st["uta_discard"]
    for p in st["players"].values():
        out += p["won"]
    return out


# --- helpers --------------------------------------------------------------------------------------

def _int(v, what, lo, hi) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ActionError(f"{what} must be a whole number {lo}-{hi}, not {v!r}")
    return v


#: 「簡単：１ ふつう：２ 難しい：３」 (■行為判定) and the 歌語り minima 「さらに難しい（４点）
#: もっと難しい（５点）」 (■歌語り判定): a difficulty may be given as its word.
DIFFICULTY_WORDS = {"簡単": 1, "かんたん": 1, "easy": 1, "ふつう": 2, "普通": 2, "normal": 2,
                    "難しい": 3, "むずかしい": 3, "hard": 3, "さらに難しい": 4, "さらにむずかしい": 4,
                    "もっと難しい": 5, "もっとむずかしい": 5}


def parse_difficulty(v, what: str = "the difficulty") -> int:
    """A difficulty 1-20, as a number or one of the seed's words (ふつう = 2 …)."""
    if isinstance(v, str):
        w = v.strip().lower()
        if w in DIFFICULTY_WORDS:
            return DIFFICULTY_WORDS[w]
        try:
            v = int(w)
        except ValueError:
            raise ActionError(f"{what} must be 1-20 or a word ({', '.join(DIFFICULTY_WORDS)}), "
                              f"not {v!r}") from None
    return _int(v, what, 1, 20)


def _sheet_of(st, who) -> dict:
    return st.get("sheets", {}).get(who, {}) if isinstance(who, str) else {}


def _resolve(st, who, attr: str, dice, special) -> tuple[int, int]:
    """(能力値＋文化値, 特技) of WHO: numbers as given, or names looked up on WHO's sheet
    (DICE an ability: 「判定値＝能力値＋文化値」, that ability plus the sheet's 文化値 of the
    judgement's attribute; 特技 a speciality's name: its value)."""
    sheet = _sheet_of(st, who)

    def look(name, what):
        if name not in sheet:
            known = ", ".join(sheet) or "no sheet"
            raise ActionError(f"{who}'s sheet has no {what} {name!r} ({known}): give a number, or "
                              f"add it with sheet {who} {name}=N")
        return sheet[name]

    if isinstance(dice, str):
        try:
            dice = int(dice)
        except ValueError:
            ability = look(dice, "ability")
            dice = ability + look(attr, f"文化値【{attr}】")
    if isinstance(special, str):
        try:
            special = int(special)
        except ValueError:
            special = look(special, "特技")
    return _int(dice, "能力値＋文化値", 0, 100), _int(special, "the 特技 value", 0, 20)


def _player(st, name) -> dict:
    if name not in st["players"]:
        known = ", ".join(st["players"]) or "no players yet"
        raise ActionError(f"no player called {name!r} ({known})")
    return st["players"][name]


def _take(st: dict, n: int, rng: random.Random, settings: dict, notes: list[str]) -> list[int]:
    avail = len(st["pile"]) + (len(st["discard"]) if settings["reshuffle"] else 0)
    if n > avail:
        raise ActionError(f"only {avail} yomifuda can be drawn, not {n}")
    got = []
    while len(got) < n:
        if not st["pile"]:
            st["pile"], st["discard"] = st["discard"], []
            rng.shuffle(st["pile"])
            notes.append(f"the 山札 ran out: {len(st['pile'])} discards reshuffled into it")
        got.append(st["pile"].pop(0))
    return got


def _poem(no: int):
    from poems import poem
    return poem(no)


def _card(no: int) -> str:
    p = _poem(no)
    return f"{no} {p.author}"


def _cards(nos) -> str:
    return ", ".join(_card(n) for n in nos) if nos else "—"


def ku_text(no: int, k: int) -> str:
    return _poem(no).kanji[k - 1]


def _hand_cards(hand: list[int], nos, who: str) -> list[int]:
    out = []
    for n in nos or []:
        if not _is_no(n):
            raise ActionError(f"{n!r} is not a card (poem numbers 1-100)")
        if n not in hand or n in out:
            raise ActionError(f"card {n} is not in {who}'s hand ({', '.join(map(str, hand)) or 'empty'})")
        out.append(n)
    return out


def _refill(st, name, settings, rng, notes) -> list[int]:
    p = st["players"].get(name)
    if p is None or not settings["refill"] or len(p["hand"]) >= p["kagaku"]:
        return []
    try:
        got = _take(st, 1, rng, settings, notes)
    except ActionError:
        notes.append("no card left to refill the hand")
        return []
    p["hand"] += got
    return got


# --- judgements ------------------------------------------------------------------------------------

def _judge(st, who, attr, dice, special, difficulty, hand_nos, rng, settings, notes) -> dict:
    """A 行為判定 on the (copied) state; returns its summary (and moves the cards)."""
    attr = _attr(attr)
    sheet_words = [f"{x} {_sheet_of(st, who)[x]}" for x in
                   ([dice, attr] if isinstance(dice, str) and not dice.lstrip("-").isdigit() else [])
                   + ([special] if isinstance(special, str) and not special.lstrip("-").isdigit() else [])
                   if x in _sheet_of(st, who)]
    dice, special = _resolve(st, who, attr, dice, special)
    difficulty = parse_difficulty(difficulty)
    player = st["players"].get(who)
    hand = player["hand"] if player else []
    used = _hand_cards(hand, hand_nos, who)
    if len(used) > special:
        raise ActionError(f"特技 {special} allows at most {special} hand card(s), not {len(used)}")
    turned = _take(st, dice, rng, settings, notes)
    cats = categories(settings["categories"])
    counted = [n for n in turned + used if attr in attributes(n, cats)]
    score = len(counted)
    success = score >= difficulty
    pool = used if settings["scene_match"] == "hand" else turned + used
    matched = [n for n in st["scene"] if n in pool]
    degree = (score - difficulty + 1) * 2 ** len(matched) if success else 0
    for n in used:
        hand.remove(n)
    st["discard"] += turned + used
    if matched and player is not None:
        st["scene"] = [n for n in st["scene"] if n not in matched]
        player["won"] += matched
    st["judgements"] += 1
    refilled = _refill(st, who, settings, rng, notes)
    return {"who": who, "attr": attr, "dice": dice, "special": special, "difficulty": difficulty,
            "turned": turned, "hand_used": used, "counted": counted, "achievement": score,
            "success": success, "margin": score - difficulty, "scene_matched": matched,
            "degree": degree, "refilled": refilled,
            **({"sheet": " ".join(sheet_words)} if sheet_words else {})}


def _judge_text(j: dict, head: str) -> str:
    lines = [f"{head}: {j['who']} 【{j['attr']}】 turns up {j['dice']}"
             + (f" (sheet: {j['sheet']})" if j.get("sheet") else "")
             + (f" + {len(j['hand_used'])} from the hand" if j["hand_used"] else "")
             + f": 達成値 {j['achievement']} vs difficulty {j['difficulty']} → "
             + (f"success by {j['margin']}, degree {j['degree']}" if j["success"]
                else f"failure by {-j['margin']}")]
    lines.append(f"turned up: {_cards(j['turned'])}")
    if j["hand_used"]:
        lines.append(f"from the hand: {_cards(j['hand_used'])}")
    lines.append(f"counted ({j['attr']}): {', '.join(map(str, j['counted'])) or 'none'}")
    if j["scene_matched"]:
        k = len(j["scene_matched"])
        lines.append(f"scene card(s) matched: {', '.join(map(str, j['scene_matched']))} "
                     f"(degree ×{2 ** k}); {j['who']} takes them")
    if j["refilled"]:
        lines.append(f"{j['who']} refills the hand: {_cards(j['refilled'])}")
    return "\n".join(lines)


def _act(st, a, rng, settings, notes):
    _player(st, a.get("who"))
    j = _judge(st, a.get("who"), a.get("attr"), a.get("dice"), a.get("special", 0),
               a.get("difficulty"), a.get("cards"), rng, settings, notes)
    return {"text": _judge_text(j, "行為判定"), "judgement": j}


# --- players and scenes --------------------------------------------------------------------------

def _player_add(st, a, rng, settings, notes):
    name = a.get("name")
    if not isinstance(name, str) or not name.strip() or " " in name:
        raise ActionError(f"a player's name is one word, not {name!r}")
    check_name(name, "player's name", error=ActionError)
    if name in st["players"]:
        raise ActionError(f"{name} is already at the table")
    kagaku = _int(a.get("kagaku"), "the number of 歌学 specialities", 1, 20)
    hand = _take(st, settings["start_hand"], rng, settings, notes)
    st["players"][name] = {"kagaku": kagaku, "hand": hand, "won": [], "points": 0}
    return {"text": f"player {name} (歌学 {kagaku}) is dealt {_cards(hand)}", "hand": hand}


def _kagaku(st, a, rng, settings, notes):
    p = _player(st, a.get("who"))
    p["kagaku"] = _int(a.get("kagaku"), "the number of 歌学 specialities", 1, 20)
    return {"text": f"{a['who']} now has {p['kagaku']} 歌学 (hand limit)"}


def _refill_action(st, a, rng, settings, notes):
    p = _player(st, a.get("who"))
    if len(p["hand"]) >= p["kagaku"]:
        raise ActionError(f"{a['who']}'s hand is full ({len(p['hand'])} of {p['kagaku']})")
    got = _take(st, 1, rng, settings, notes)
    p["hand"] += got
    return {"text": f"{a['who']} refills: {_cards(got)}"}


def _scene(st, a, rng, settings, notes):
    st["uta_discard"] += st["scene"]
    st["scene"] = []
    n = settings["scene_cards"]
    if len(st["uta_pile"]) < n and st["uta_discard"]:
        st["uta_pile"] += st["uta_discard"]
        st["uta_discard"] = []
        rng.shuffle(st["uta_pile"])
        notes.append("the 歌枕 pile ran short: the torifuda discards were shuffled back in")
    up = st["uta_pile"][:n]
    st["uta_pile"] = st["uta_pile"][n:]
    st["scene"] = up
    st["scene_no"] += 1
    shown = "; ".join(f"{x} 「{_poem(x).torifuda}」" for x in up) or "none left"
    return {"text": f"scene {st['scene_no']}: 歌枕札 {shown}", "scene": up}


def _key(st, a, rng, settings, notes):
    no = a.get("no")
    if no not in st["keys"]:
        raise ActionError(f"{no!r} is not a key card held by the GM "
                          f"({', '.join(map(str, st['keys'])) or 'none'})")
    st["keys"].remove(no)
    st["scene"].append(no)
    return {"text": f"the GM puts key card {no} 「{_poem(no).torifuda}」 up in the scene"}


# --- contests ------------------------------------------------------------------------------------

def _participant(st, c: dict, name: str, own: dict | None) -> None:
    """Put NAME's own 能力値＋文化値 and 特技 into the contest: 「判定値、特技」 are each
    participant's (「ＧＭが行為判定に必要な判定値、特技、最低難易度を宣言します」 names which
    ones; every participant judges with their own values).  Given per participant (``a:7:2``),
    else the contest's shared DICE / sp, numbers or names on the participant's sheet."""
    check_name(name, "participant's name", error=ActionError)
    own = own if isinstance(own, dict) else {}
    dice = own.get("dice", c["shared"]["dice"])
    special = own.get("special", c["shared"]["special"])
    if dice is None:
        raise ActionError(f"{name}'s 能力値＋文化値: give it per participant ({name}:N) or for "
                          f"everyone (contest NAMES ATTR DICE)")
    c["dice"][name], c["special"][name] = _resolve(st, name, c["attr"], dice, special or 0)


def _contest(st, a, rng, settings, notes):
    if st["contest"] is not None:
        raise ActionError("a 対決判定 is already on (finish it, or 'contest stop')")
    names = a.get("names")
    if not isinstance(names, list) or len(names) < 2 or len(set(names)) != len(names) \
            or not all(isinstance(n, str) and n for n in names):
        raise ActionError("a 対決判定 needs two or more different participants, in order")
    teams = a.get("teams") or {}
    if not isinstance(teams, dict) or any(n not in names for n in teams) \
            or not all(isinstance(t, str) and t for t in teams.values()):
        raise ActionError("teams: every team member must be a participant, every team a name")
    each = a.get("each") or {}
    if not isinstance(each, dict) or any(n not in names for n in each):
        raise ActionError("per-participant values must name participants")
    # rules 1 (saves from before): the floor was the last *successful* declaration
    floor = settings.get("contest_floor", "declared") if settings.get("rules", 2) >= 2 else "success"
    c = {"order": names, "active": list(names), "dropped": [], "turn": 0,
         "min": parse_difficulty(a.get("min", 1), "the minimum difficulty"), "last": None,
         "declared": None, "floor": floor, "attr": _attr(a.get("attr")),
         "shared": {"dice": a.get("dice"), "special": a.get("special", 0)},
         "dice": {}, "special": {}, "teams": teams, "joinable": bool(a.get("joinable", False))}
    for n in names:
        _participant(st, c, n, each.get(n))
    st["contest"] = c
    values = ", ".join(f"{n} {c['dice'][n]}/{c['special'][n]}" for n in names)
    return {"text": f"対決判定: {' → '.join(names)}; 【{c['attr']}】 cards/特技: {values}; "
                    f"minimum difficulty {c['min']}"
                    + (f"; teams {teams}" if teams else "")
                    + ("; joining midway allowed" if c["joinable"] else "; no joining midway"),
            "contest": c}


def _floor(c: dict) -> tuple[int, str]:
    """The least difficulty the next participant may declare, and why.  「二番手は一番手以上の
    難易度を宣言してから判定します」「直前の人が宣言した以上の難易度で判定します」 (■対決判定 ３）):
    at least what the previous participant declared, whether they succeeded or not (setting
    ``contest_floor=declared``, the seed); ``success``: at least the last successful one."""
    prev = c["last"] if c.get("floor") == "success" else c.get("declared")
    if prev is not None and prev > c["min"]:
        return prev, ("the previous declaration" if c.get("floor") != "success"
                      else "the last successful declaration")
    return c["min"], "the minimum"


def _contest_next(c: dict, after: str) -> int:
    order = c["order"]
    i = order.index(after)
    for k in range(1, len(order) + 1):
        cand = order[(i + k) % len(order)]
        if cand in c["active"]:
            return order.index(cand)
    return i


def _contest_result(c: dict, stopped: bool) -> dict:
    ranking = [n for n in c["order"] if n in c["active"]] + list(reversed(c["dropped"]))
    res = {"ranking": ranking}
    if c["teams"]:
        counts: dict[str, int] = {}
        for n in c["active"]:
            t = c["teams"].get(n)
            if t is not None:
                counts[t] = counts.get(t, 0) + 1
        if stopped:
            best = max(counts.values(), default=0)
            winners = sorted(t for t, v in counts.items() if v == best)
            res["team"] = winners[0] if len(winners) == 1 else None
            res["teams_left"] = counts
        else:
            res["team"] = c["teams"].get(ranking[0])
    return res


def _turn(st, a, rng, settings, notes):
    c = st["contest"]
    if c is None:
        raise ActionError("no 対決判定 is on (contest NAMES … first)")
    who = c["order"][c["turn"]]
    if a.get("pass"):
        c["active"].remove(who)
        c["dropped"].append(who)
        text = f"対決判定: {who} drops out without judging"
        j = None
    else:
        floor, why = _floor(c)
        d = parse_difficulty(a.get("difficulty"))
        if d < floor:
            raise ActionError(f"{who} must declare a difficulty of at least {floor} ({why})")
        j = _judge(st, who, c["attr"], c["dice"][who], c["special"][who], d, a.get("cards"), rng,
                   settings, notes)
        c["declared"] = j["difficulty"]
        if j["success"]:
            c["last"] = j["difficulty"]
        else:
            c["active"].remove(who)
            c["dropped"].append(who)
        text = _judge_text(j, f"対決判定, {who} declares {j['difficulty']}") + \
            ("" if j["success"] else f"\n{who} drops out")
    result = {"judgement": j}
    if len(c["active"]) <= 1:
        res = _contest_result(c, stopped=False)
        st["contest"] = None
        result["contest_over"] = res
        text += f"\n対決判定 over: ranking {' > '.join(res['ranking'])}" + \
            (f"; team {res['team']} wins" if res.get("team") else "")
    else:
        c["turn"] = _contest_next(c, who)
        text += f"\nnext: {c['order'][c['turn']]} (difficulty ≥ {_floor(c)[0]})"
    result["text"] = text
    return result


def _contest_join(st, a, rng, settings, notes):
    c = st["contest"]
    if c is None:
        raise ActionError("no 対決判定 is on")
    if not c["joinable"]:
        raise ActionError("the GM said no joining midway in this 対決判定")
    name = a.get("name")
    if not isinstance(name, str) or not name or name in c["order"]:
        raise ActionError(f"{name!r} cannot join: a new participant's name, please")
    _participant(st, c, name, {k: a[k] for k in ("dice", "special") if a.get(k) is not None})
    c["order"].append(name)
    c["active"].append(name)
    team = a.get("team")
    if team:
        c["teams"][name] = team
    return {"text": f"対決判定: {name} joins, judging last in the round"
                    + (f" (team {team})" if team else "")}


def _contest_stop(st, a, rng, settings, notes):
    c = st["contest"]
    if c is None:
        raise ActionError("no 対決判定 is on")
    res = _contest_result(c, stopped=True)
    st["contest"] = None
    text = f"対決判定 stopped (time limit): ranking {' > '.join(res['ranking'])}"
    if c["teams"]:
        text += f"; members left per team {res.get('teams_left')}; " + \
            (f"team {res['team']} wins" if res.get("team") else "a tie between teams")
    return {"text": text, "contest_over": res}


# --- 歌語り ----------------------------------------------------------------------------------------

def _talk(st, a, rng, settings, notes):
    who = a.get("who")
    _player(st, who)
    target = _TALK_ALIASES.get(str(a.get("target", "")).lower())
    if target is None:
        raise ActionError(f"歌語り: the one addressed must be pc, acquaintance (知人), contemporary "
                          f"(同時代), past (過去) or future (未来), not {a.get('target')!r}")
    attr = _attr(a.get("attr"))
    t = st["talk"]
    if t and t["who"] == who and t["target"] == target and t["attr"] != attr:
        raise ActionError(f"this 歌語り uses 【{t['attr']}】 until it ends ('talkend')")
    least = TALK_MIN[target]
    d = parse_difficulty(a.get("difficulty", least))
    if d < least:
        raise ActionError(f"歌語り with {target}: the difficulty is at least {least}, not {d}")
    j = _judge(st, who, attr, a.get("dice"), a.get("special", 0), d, a.get("cards"), rng, settings, notes)
    first = not (t and t["who"] == who and t["target"] == target)
    st["talk"] = {"who": who, "target": target, "attr": attr, "exchanges": (0 if first else t["exchanges"]) + 1}
    text = _judge_text(j, f"歌語り判定 with {target} (min {least})")
    if j["success"]:
        text += f"\nnow compose: {'compose solo' if first else 'compose henka'} {who}"
    return {"text": text, "judgement": j, "next": ("solo" if first else "henka") if j["success"] else None}


def _talkend(st, a, rng, settings, notes):
    if st["talk"] is None:
        raise ActionError("no 歌語り is on")
    st["talk"] = None
    return {"text": "歌語り ends"}


# --- 歌詠み ----------------------------------------------------------------------------------------

def _poem_by_id(st, pid) -> dict:
    if isinstance(pid, bool) or not isinstance(pid, int) or not 1 <= pid <= len(st["poems"]):
        raise ActionError(f"no composed poem {pid!r} (1-{len(st['poems'])})")
    return st["poems"][pid - 1]


def _compose(st, a, rng, settings, notes):
    if st["compose"] is not None:
        raise ActionError("a poem is being composed: place its ku first (or undo)")
    mode = a.get("mode")
    if mode not in DRAW:
        raise ActionError(f"compose solo, henka, renga or senka, not {mode!r}")
    who = a.get("who")
    _player(st, who)
    of = None
    n_ku = 5
    if mode in ("henka", "renga"):
        of = _poem_by_id(st, a.get("of"))["id"]
    if mode == "renga":
        n_ku = _int(a.get("ku"), "the number of ku the GM asks for", 1, 4)
        earlier = len(st["poems"][of - 1]["ku"])
        if earlier + n_ku != 5:
            raise ActionError(f"poem {of} has {earlier} ku: a 連歌 joined to it needs {5 - earlier}, "
                              f"not {n_ku}")
    elif mode == "solo" and a.get("ku") is not None:
        n_ku = _int(a.get("ku"), "the number of ku", 1, 5)  # a 発句 (5-7-5) for a 連歌 to follow
    drawn = _take(st, DRAW[mode], rng, settings, notes)
    st["compose"] = {"mode": mode, "who": who, "of": of, "ku": n_ku, "drawn": drawn,
                     "before": bool(a.get("before")),
                     "hand": _attr(a["hand"]) if a.get("hand") else None,
                     "advice": _attr(a["advice"]) if a.get("advice") else None}
    if mode == "senka" and st["compose"]["advice"]:
        raise ActionError("撰歌: no 相談／助言")
    lines = [f"歌詠み判定 ({MODES_JA[mode]}): {who} draws {_cards(drawn)}"]
    for n in drawn:
        lines.append(f"  {n}: " + " / ".join(f"{k}.{t}" for k, t in enumerate(_poem(n).kanji, 1)))
    if of:
        src = [n for n, _ in st["poems"][of - 1]["ku"]]
        lines.append(f"  and the cards of poem #{of}: {', '.join(map(str, src))}")
    lines.append(f"place {n_ku} ku: e.g. 'place " + " ".join(f"{drawn[i % len(drawn)]}.{k}"
                                                             for i, k in enumerate((1, 2, 3, 4, 5)[:n_ku])) + "'")
    return {"text": "\n".join(lines), "drawn": drawn}


def _sounds(k: int) -> int:
    return 5 if k in FIVE else 7


def _parse_ku(spec) -> tuple[int, int]:
    if isinstance(spec, (list, tuple)) and len(spec) == 2:
        no, k = spec
    else:
        try:
            no, k = (int(x) for x in str(spec).replace(":", ".").split("."))
        except ValueError:
            raise ActionError(f"{spec!r}: name a ku as POEM.KU, e.g. 12.3 (poem 12, third ku)") from None
    if not _is_no(no) or not (isinstance(k, int) and 1 <= k <= 5):
        raise ActionError(f"{spec!r}: poems are 1-100 and ku 1-5")
    return no, k


def _check_hand_card(no: int, attr: str | None, how: str, cats) -> None:
    """A hand card (own, or given as advice) needs a 《歌学》〈知〉 success with a 文化値 of its
    attribute, declared at ``compose`` (``hand=ATTR`` / ``advice=ATTR``)."""
    if attr is None:
        raise ActionError(f"card {no} is a hand card: it needs a 《歌学》 success first "
                          f"(compose … {how}=ATTR, ATTR the 文化値 of that success)")
    if attr not in attributes(no, cats):
        raise ActionError(f"card {no} ({'・'.join(sorted(attributes(no, cats)))}) does not match the "
                          f"《歌学》 success's 【{attr}】 ({how})")


def _place(st, a, rng, settings, notes):
    c = st["compose"]
    if c is None:
        raise ActionError("nothing is being composed (compose solo|henka|renga|senka PLAYER first)")
    picks = [_parse_ku(s) for s in (a.get("ku") or [])]
    if len(picks) != c["ku"]:
        raise ActionError(f"place exactly {c['ku']} ku, not {len(picks)}")
    who, mode = c["who"], c["mode"]
    me = st["players"][who]
    answered = [n for n, _ in st["poems"][c["of"] - 1]["ku"]] if c["of"] else []
    scene_cards = set(me["won"]) | set(st["scene"])
    seen: set[int] = set()
    cats = categories(settings["categories"])
    hand_used: dict[str, list[int]] = {}
    scene_used: list[int] = []
    if mode == "renga":  # the joined poem too takes one ku from each poem
        seen |= {n for n, _ in st["poems"][c["of"] - 1]["ku"]}
    # 返歌 to a whole poem of the hundred (``poem NPC N``): its five ku stand for the five cards
    # the GM lays out, so each of them may be taken (once) — a choice: the seed's 「各歌から
    # 一句ずつしか選べません」 assumes the earlier poem was itself made of five cards.
    whole = st["poems"][c["of"] - 1].get("whole") if c["of"] else None
    taken: set[tuple[int, int]] = set()
    for no, k in picks:
        if no == whole and mode == "henka":
            if (no, k) in taken:
                raise ActionError(f"{no}.{k} is placed twice")
            taken.add((no, k))
        elif no in seen:
            raise ActionError(f"poem {no} gives one ku only" +
                              (" (the earlier ku use it already)" if mode == "renga" and
                               no in answered else ""))
        seen.add(no)
        if no in scene_cards:
            scene_used.append(no)  # a 歌枕札's poem, whichever card brought it
        if no in c["drawn"] or no in answered or no in scene_cards:
            pass
        elif no in me["hand"]:
            if mode != "senka":
                _check_hand_card(no, c["hand"], "hand", cats)
            hand_used.setdefault(who, []).append(no)
        else:
            helper = next((n for n, p in st["players"].items() if n != who and no in p["hand"]), None)
            if helper is None or mode == "senka":
                raise ActionError(f"card {no} is not among {who}'s cards for this poem (drawn, "
                                  f"answered, 歌枕札, hand" + (", advice)" if mode != "senka" else ")"))
            _check_hand_card(no, c["advice"], "advice", cats)
            hand_used.setdefault(helper, []).append(no)
    ku = [list(p) for p in picks]
    if mode == "renga":
        earlier = st["poems"][c["of"] - 1]["ku"]
        ku = (ku + [list(x) for x in earlier]) if c["before"] else ([list(x) for x in earlier] + ku)
        whole = tuple(_sounds(k) for _, k in ku)
        if whole not in PATTERNS.values():
            raise ActionError("the 連歌 joined to the earlier ku goes "
                              + "-".join(map(str, whole)) + ": it must be 5-7-5-7-7 or 5-7-7-5-7")
    else:
        _check_shape(picks)
    if mode == "senka" and me["won"] and not (set(me["won"]) & {n for n, _ in picks}):
        raise ActionError(f"撰歌: {who} holds 歌枕札 ({', '.join(map(str, me['won']))}) and must use one")
    for name, nos in hand_used.items():
        for n in nos:
            st["players"][name]["hand"].remove(n)
        st["discard"] += nos
    st["discard"] += c["drawn"]
    pid = len(st["poems"]) + 1
    entry = {"id": pid, "who": who, "mode": mode, "of": c["of"], "ku": ku,
             "new": [list(p) for p in picks], "scene_used": scene_used,
             "advice": {n: v for n, v in hand_used.items() if n != who}, "score": None}
    st["poems"].append(entry)
    st["compose"] = None
    text = f"poem #{pid} ({MODES_JA[mode]}) by {who}:\n" + poem_lines(entry)
    text += "\n" + vertical(entry)
    return {"text": text, "poem": entry}


def _check_shape(picks) -> None:
    """Ku (POEM, KU) in order must go 5-7-5-7-7 (or be the opening of a 5-7-7-5-7 連歌)."""
    sounds = tuple(_sounds(k) for _, k in picks)
    want = PATTERNS["5-7-5-7-7"][:len(picks)]
    if len(picks) < 5 and sounds == PATTERNS["5-7-7-5-7"][:len(picks)]:
        want = sounds  # the opening of a 5-7-7-5-7 連歌
    if sounds != want:
        bad = next(i for i, (s, w) in enumerate(zip(sounds, want)) if s != w)
        no, k = picks[bad]
        raise ActionError(f"not 5-7-5-7-7: place {bad + 1} needs a {want[bad]}-sound ku "
                          f"(ku {' or '.join(map(str, FIVE if want[bad] == 5 else SEVEN))} of a poem), "
                          f"but {no}.{k} has {sounds[bad]}")


def poem_lines(entry: dict) -> str:
    return "\n".join(f"  {ku_text(n, k)}  ({n}.{k} {_poem(n).author})" for n, k in entry["ku"])


def vertical(entry: dict) -> str:
    """The poem in vertical writing: one column per ku, read right to left."""
    cols = [list(ku_text(n, k)) for n, k in entry["ku"]][::-1]
    height = max(len(c) for c in cols)
    rows = []
    for r in range(height):
        rows.append("　".join(c[r] if r < len(c) else "　" for c in cols))
    return "\n".join(rows)


def poem_reading(entry: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(kanji ku, reading ku) of a composed poem, for the reading voice."""
    return (tuple(_poem(n).kanji[k - 1] for n, k in entry["ku"]),
            tuple(_poem(n).reading[k - 1] for n, k in entry["ku"]))


def _score(st, a, rng, settings, notes):
    entry = _poem_by_id(st, a.get("poem"))
    if entry["mode"] == "outside":
        raise ActionError(f"poem #{entry['id']} came from outside the table: no 敬慕点 for it")
    if entry["score"] is not None:
        raise ActionError(f"poem #{entry['id']} is already scored (undo to change it)")
    gm = _int(a.get("gm", 0), "the GM's points", 0, 2)
    others = max(0, len(st["players"]) - 1)
    pl = _int(a.get("players", 0), "the players' points", 0, others)
    sc = _int(a.get("scene", 0), "the points for scene cards", 0, len(entry["scene_used"]))
    total = gm + pl + sc
    entry["score"] = {"gm": gm, "players": pl, "scene": sc, "total": total}
    st["players"][entry["who"]]["points"] += total
    return {"text": f"poem #{entry['id']} by {entry['who']}: GM {gm} + players {pl} + scene cards "
                    f"{sc} = {total} 敬慕点 (total {st['players'][entry['who']]['points']})",
            "score": entry["score"]}


def _sheet(st, a, rng, settings, notes):
    """A character sheet (PC or NPC): 能力値 (``知=3``), 文化値 (``男=2 女=1 官僧=3``; 官 and 僧
    are 官僧) and 特技 (``歌学=2``), kept for judgements that name them instead of numbers
    (「その行為に関係する能力値、文化値、特技、難易度をＧＭが指定します」, ■行為判定).
    Values given again replace the old ones; the rest of the sheet stays."""
    who = a.get("who")
    if not isinstance(who, str) or not who.strip() or any(ch in who for ch in " =:,"):
        raise ActionError(f"a name is one word without = : ,, not {who!r}")
    values = a.get("values")
    if not isinstance(values, dict) or not values:
        raise ActionError("sheet WHO NAME=N …: give at least one value (知=3 男=2 歌学=2)")
    sheet = st.setdefault("sheets", {}).setdefault(who, {})
    for k, v in values.items():
        if not isinstance(k, str) or not k.strip() or any(ch in k for ch in " =:,"):
            raise ActionError(f"a sheet value's name is one word, not {k!r}")
        name = _ATTR_ALIASES.get(k.lower(), k) if k in ("官", "僧", "男", "女", "官僧") else k
        sheet[name] = _int(v, f"{who}'s {k}", 0, 20)
    return {"text": f"sheet {who}: " + sheet_text(sheet), "sheet": dict(sheet)}


def sheet_text(sheet: dict) -> str:
    return " ".join(f"{k} {v}" for k, v in sheet.items()) or "empty"


def _outside(st, a, rng, settings, notes):
    """A poem from outside the table, to be answered (返歌) or joined (連歌): one of the hundred
    (``no``), or an NPC's poem made of ku of the hundred (``ku``: POEM.KU …, 5-7-5-7-7 or the
    opening of one).  It gets the next poem number; no cards move (the GM lays out its cards:
    「ＧＭは先の歌を構成する札を５枚並べておきます」, ○返歌を詠む)."""
    who = a.get("who")
    if not isinstance(who, str) or not who.strip() or " " in who:
        raise ActionError(f"whose poem: a name, one word, not {who!r}")
    if a.get("no") is not None:
        no = a.get("no")
        if not _is_no(no):
            raise ActionError(f"{no!r} is not one of the hundred (1-100)")
        ku = [[no, k] for k in range(1, 6)]
        picks = [tuple(x) for x in ku]
    else:
        picks = [_parse_ku(x) for x in (a.get("ku") or [])]
        if not 1 <= len(picks) <= 5:
            raise ActionError("an NPC's poem is 1-5 ku (POEM.KU …), e.g. poem oni 12.1 45.2 3.3 4.4 5.5")
        if len({n for n, _ in picks}) != len(picks):
            raise ActionError("an NPC's poem takes one ku from each poem of the hundred")
        _check_shape(picks)
        ku = [list(p) for p in picks]
    pid = len(st["poems"]) + 1
    entry = {"id": pid, "who": who, "mode": "outside", "of": None, "ku": ku,
             "new": [list(p) for p in picks], "scene_used": [], "advice": {}, "score": None,
             "whole": a.get("no")}
    st["poems"].append(entry)
    what = f"poem {a['no']} of the hundred" if a.get("no") is not None else "a poem"
    return {"text": f"poem #{pid} (from outside): {who}'s {what}, to answer with "
                    f"compose henka PLAYER of={pid}:\n" + poem_lines(entry), "poem": entry}


_ACTIONS = {
    "sheet": _sheet, "poem": _outside,
    "player": _player_add, "kagaku": _kagaku, "refill": _refill_action, "scene": _scene,
    "key": _key, "act": _act, "contest": _contest, "turn": _turn, "conteststop": _contest_stop,
    "contestjoin": _contest_join,
    "talk": _talk, "talkend": _talkend, "compose": _compose, "place": _place, "score": _score,
}


def apply(state: dict, action: dict, rng: random.Random, settings: dict) -> tuple[dict, dict]:
    """(new state, result) for one action; ``ActionError`` and nothing changed if refused."""
    fn = _ACTIONS.get(action.get("do"))
    if fn is None:
        raise ActionError(f"unknown action {action.get('do')!r} (actions: {', '.join(_ACTIONS)})")
    st = marshal.loads(marshal.dumps(state))  # a deep copy of plain data, 3x faster than JSON
    notes: list[str] = []
    result = fn(st, action, rng, settings, notes)
    if notes:
        result["notes"] = notes
        result["text"] += "\n" + "\n".join(notes)
    return st, result


def describe(st: dict, who: str | None = None) -> str:
    """The table for the screen: 山札, scene, players' hands, won cards and 敬慕点, what is on.
    ``who`` None: the GM's view; a player's name: that player's view (their own hand and sheet;
    the others' hands, the GM's key cards and the cards drawn for another's poem as counts)."""
    if who is not None:
        _player(st, who)
    keys = (", ".join(map(str, st["keys"])) or "—") if who is None else f"{len(st['keys'])} held by the GM"
    lines = [f"山札 {len(st['pile'])} · 捨て札 {len(st['discard'])} · 歌枕 pile {len(st['uta_pile'])} · "
             f"key cards {keys}",
             f"scene {st['scene_no']}: " + ("; ".join(f"{n} 「{_poem(n).torifuda}」" for n in st["scene"])
                                            or "no 歌枕札 up")]
    for name, p in st["players"].items():
        hand = _cards(p["hand"]) if who in (None, name) else f"{len(p['hand'])} card(s)"
        lines.append(f"  {name} (歌学 {p['kagaku']}, 敬慕点 {p['points']}): hand {hand}"
                     + (f"; 歌枕札 {', '.join(map(str, p['won']))}" if p["won"] else ""))
    for name, sheet in st.get("sheets", {}).items():
        if who in (None, name):
            lines.append(f"  sheet {name}: {sheet_text(sheet)}")
    c = st["contest"]
    if c:
        lines.append(f"対決判定: next {c['order'][c['turn']]}, difficulty ≥ {_floor(c)[0]}; "
                     f"in: {', '.join(c['active'])}; out: {', '.join(c['dropped']) or '—'}")
    if st["talk"]:
        t = st["talk"]
        lines.append(f"歌語り: {t['who']} with {t['target']} 【{t['attr']}】, exchange {t['exchanges']}")
    if st["compose"]:
        cp = st["compose"]
        drawn = ", ".join(map(str, cp["drawn"])) if who in (None, cp["who"]) else f"{len(cp['drawn'])} cards"
        lines.append(f"composing ({MODES_JA[cp['mode']]}) for {cp['who']}: drawn {drawn}"
                     + (f" + poem #{cp['of']}" if cp["of"] else "") + f"; place {cp['ku']} ku")
    if st["poems"]:
        lines.append(f"poems composed: {len(st['poems'])}")
    if who is not None:
        lines.append(f"(the view of {who}: the others' hands are counted, not shown)")
    return "\n".join(lines)


def view(st: dict, who: str | None = None) -> dict:
    """The state as JSON for a screen: the order of the 山札 and of the 歌枕 pile is never in it
    (only counts).  ``who`` a player: that player's view (own hand and sheet; the others'
    hands, the GM's key cards and another's drawn cards as counts)."""
    out = dict(st, pile=len(st["pile"]), uta_pile=len(st["uta_pile"]))
    if who is None:
        return out
    _player(st, who)
    out["players"] = {n: dict(p, hand=p["hand"] if n == who else len(p["hand"]))
                      for n, p in st["players"].items()}
    out["keys"] = len(st["keys"])
    out["sheets"] = {k: v for k, v in st.get("sheets", {}).items() if k == who}
    if st["compose"] and st["compose"]["who"] != who:
        out["compose"] = dict(st["compose"], drawn=len(st["compose"]["drawn"]))
    out["viewer"] = who
    return out


def poems_text(st: dict) -> str:
    """Every composed poem with its sources and score."""
    out = []
    for e in st["poems"]:
        head = f"#{e['id']} {MODES_JA[e['mode']]} by {e['who']}" + (f" (to #{e['of']})" if e["of"] else "")
        if e["score"]:
            head += f" — {e['score']['total']} 敬慕点"
        out.append(head + "\n" + poem_lines(e))
    return "\n".join(out) or "no poems composed yet"


def summary(st: dict) -> str:
    """The closing line of the GM's log: 敬慕点 per player and the poems composed."""
    pts = ", ".join(f"{n} {p['points']}" for n, p in st["players"].items()) or "no players"
    n = sum(1 for e in st["poems"] if e["mode"] != "outside")
    return f"so far: 敬慕点 {pts}; {n} poem(s) composed"
