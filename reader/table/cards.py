"""Playing-card judgements (seed 001): two packs of playing cards with jokers as the dice.

State (plain data)::

    {"pile": [card, ...],            # 山札, top first
     "discard": [card, ...],         # 捨て札
     "hands": {name: [card, ...]},   # PCs, NPCs holding a hand, and "GM" (combat)
     "people": {name: {"kind": "pc"|"npc", "mode": suit|None}},
     "combat": None | {"enemies": n, "told": [npc names whose 表出モード was told]},
     "judgements": [summary, ...], "reshuffles": n,
     "sheets": {name: {"abilities": {name: n}, "skills": {name: [level, ability name]}}},
     "to_judge": {npc name: its judge line's words}}   # drew 5 to judge: cards to be named

Cards are strings: ``"♠A"``, ``"♥10"``, ``"♣J"``, ``"JK"`` (a joker).  The two packs make a
multiset: two ``"♣J"`` may exist.  Every card is always in exactly one place (pile, discard or
a hand) between actions: the deck is conserved (tests/test_table_cards.py checks it over any
sequence of actions).

Rules and the choices made where the seed leaves room:

- オープンX / ドローX / 見る (``peek``): when the pile runs short in the middle, the discards
  are reshuffled into a new pile and the operation continues; cards already turned up, drawn
  or looked at in that operation stay out of the reshuffle.  Peeked cards go back on top.
  If pile and discards together hold too few cards the action is refused (nothing changes).
- リシャッフル (``reshuffle``): the discards go back into the pile and the whole pile is shuffled.
- Values: 2-10 as printed; J, Q, K, A are 10.  A joker is the card its user names (``JK=♠A``,
  ``JK=7``); unnamed it is a 10.  A joker turned up by 《限界突破》 (or a collapse cost) is a
  10 of any suit.
- Hands: a PC draws 5 when added (``player``).  An NPC has no hand outside combat: a
  ``judge`` of an NPC outside combat holding no card draws 5 (``npc_hand``; 「その瞬間にドロー５
  を行って判定し」) and stops there, so the GM can choose its cards: the judgement is the next
  ``judge`` line.  It keeps what is left for its next judgements, and ``partend`` discards
  every NPC hand; ``npchand`` draws the 5 ahead of time.  ``combat N`` makes the GM
  draw ``N`` × ``settings.enemy_draw`` (5; ``per=`` adjusts one combat) into the hand "GM";
  NPCs judge from it during combat; ``combatend`` discards it.
- A judgement: at most ``level`` cards (level 0: one card, and the ability is halved, rounded
  down); value = cards + ability + ``mod`` (steps 5-6: skills declared after the judgement
  change the value; a modifier never undoes an absolute failure nor makes a critical).  Level
  and ability may come from the person's sheet (``sheet``: a skill's level and the ability it
  belongs to).  Playing no card while holding any is an absolute failure that nothing can
  undo.  《限界突破》 (``limit``) only when the hand holds fewer cards than the level allows:
  what the hand lacks (level − cards held, whatever was played) is turned up (オープン) and
  added; any J, Q, K or A turned up makes it an absolute failure.  Critical: not with 《限界突破》; a played Ace of
  the character's 表出モード suit (or a joker named so); an NPC without a mode — or with one not
  told to the players at the start of this combat, or outside combat — criticals only with a
  played joker.  A critical is an absolute success and its value counts +30; an absolute
  failure counts 0.
- Opposed (``vs=N``: this judgement is the passive side against judgement N, one of the
  last 20): active > passive
  wins, a tie goes to the passive side; both critical → passive; an absolute failure of the
  active side loses whatever the passive side did; a passive side that played no card while
  holding cards loses (choice: this specific rule wins over the general one when both sides
  failed absolutely, unless the active side also played no card).
- Rules versions (``settings["rules"]``, set by the store per action): 1 for the actions of a
  save from before rules 2 — 《限界突破》 turned up level − cards *played*, and an NPC outside
  combat judged from an empty hand — so an old save replays as it was played.
"""
from __future__ import annotations

import marshal
import random
from collections import Counter

from reader.base.limits import check_name
from reader.table import ActionError

__all__ = ["check_settings", "new_state", "apply", "full_deck", "parse_card", "value_of",
           "card_count", "describe", "view", "SUITS", "RANKS"]

SUITS = ("♠", "♥", "♦", "♣")
RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
JOKER = "JK"
FACE = {"J", "Q", "K", "A"}
_SUIT_ALIASES = {"S": "♠", "H": "♥", "D": "♦", "C": "♣", "♠": "♠", "♥": "♥", "♦": "♦", "♣": "♣",
                 "♤": "♠", "♡": "♥", "♢": "♦", "♧": "♣"}
_RANK_ALIASES = {"T": "10", "1": "A", "ACE": "A", "JACK": "J", "QUEEN": "Q", "KING": "K"}

#: judgements kept for ``vs=N`` (opposed judgements refer to a recent one)
KEEP_JUDGEMENTS = 20

DEFAULT_SETTINGS = {"packs": 2, "jokers_per_pack": 2, "start_hand": 5, "npc_hand": 5,
                    "enemy_draw": 5}


def check_settings(s: dict) -> dict:
    out = dict(DEFAULT_SETTINGS)
    for k, v in s.items():
        if k not in DEFAULT_SETTINGS:
            raise ActionError(f"unknown setting {k!r} (settings: {', '.join(DEFAULT_SETTINGS)})")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > 20:
            raise ActionError(f"setting {k} must be a whole number 0-20, not {v!r}")
        out[k] = v
    if out["packs"] < 1:
        raise ActionError("packs must be at least 1")
    return out


def full_deck(settings: dict) -> list[str]:
    one = [s + r for s in SUITS for r in RANKS] + [JOKER] * settings["jokers_per_pack"]
    return one * settings["packs"]


def new_state(settings: dict, rng: random.Random) -> dict:
    pile = full_deck(settings)
    rng.shuffle(pile)
    return {"pile": pile, "discard": [], "hands": {}, "people": {}, "combat": None,
            "judgements": [], "reshuffles": 0, "sheets": {}}


def card_count(state: dict) -> Counter:
    """Every card on the table (pile, discards, hands): the deck, if nothing is lost."""
    c = Counter(state["pile"]) + Counter(state["discard"])
    for h in state["hands"].values():
        c += Counter(h)
    return c


# --- cards ------------------------------------------------------------------------------------

def parse_card(text: str, *, bare_rank: bool = False) -> str:
    """A card from what a player types: ``♣J``, ``CJ``, ``jc``, ``10h``, ``joker``.

    ``bare_rank``: a rank alone (``3``, ``J``) is allowed and returned as is (``"3"``): it means
    "a card of that rank from my hand".
    """
    t = str(text).strip().upper().replace(" ", "")
    if t in ("JK", "JOKER", "JKR", "🃏"):
        return JOKER
    suit = rank = None
    if t and t[0] in _SUIT_ALIASES and t[1:]:
        suit, rank = _SUIT_ALIASES[t[0]], t[1:]
    elif t and t[-1] in _SUIT_ALIASES and t[:-1]:
        suit, rank = _SUIT_ALIASES[t[-1]], t[:-1]
    else:
        rank = t
    rank = _RANK_ALIASES.get(rank, rank)
    if rank not in RANKS:
        raise ActionError(f"unknown card {text!r} (cards look like ♣J, CJ, 10h, JK)")
    if suit is None:
        if bare_rank:
            return rank
        raise ActionError(f"card {text!r} needs a suit (♠♥♦♣ or S H D C), e.g. {rank}♣")
    return suit + rank


def rank_of(card: str) -> str:
    return card[1:]


def suit_of(card: str) -> str:
    return card[0]


def value_of(card: str) -> int:
    """2-10 as printed, J/Q/K/A 10, an unnamed joker 10."""
    if card == JOKER:
        return 10
    r = rank_of(card)
    return 10 if r in FACE else int(r)


def _named_value(named: str) -> int:
    rank = named if named in RANKS else rank_of(named)
    return 10 if rank in FACE else int(rank)


def _parse_played(spec: str) -> tuple[str, str | None]:
    """``"3"`` / ``"♣J"`` / ``"JK=♠A"`` -> (what to take from the hand, joker's named card)."""
    spec = str(spec)
    if "=" in spec:
        card, named = spec.split("=", 1)
        if parse_card(card) != JOKER:
            raise ActionError(f"{spec!r}: only a joker is named with '=' (e.g. JK=♠A)")
        n = parse_card(named, bare_rank=True)
        if n == JOKER:
            raise ActionError(f"{spec!r}: a joker must be named as an ordinary card")
        return JOKER, n
    return parse_card(spec, bare_rank=True), None


# --- the pile --------------------------------------------------------------------------------

def _reshuffle(st: dict, rng: random.Random) -> None:
    st["pile"] = st["pile"] + st["discard"]
    st["discard"] = []
    rng.shuffle(st["pile"])
    st["reshuffles"] += 1


def _take(st: dict, n: int, rng: random.Random, notes: list[str]) -> list[str]:
    """Take ``n`` cards off the top; when the pile runs out, reshuffle the discards and go on
    (the cards already taken stay out of it)."""
    if n > len(st["pile"]) + len(st["discard"]):
        raise ActionError(f"only {len(st['pile'])} cards in the pile and {len(st['discard'])} "
                          f"in the discards: cannot take {n}")
    got: list[str] = []
    while len(got) < n:
        if not st["pile"]:
            st["pile"], st["discard"] = st["discard"], []
            rng.shuffle(st["pile"])
            st["reshuffles"] += 1
            notes.append(f"the pile ran out after {len(got)} card(s): the discards were "
                         f"reshuffled into a new pile of {len(st['pile'])} and it went on")
        got.append(st["pile"].pop(0))
    return got


def _count(n, what: str, lo: int = 0, hi: int = 200) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not lo <= n <= hi:
        raise ActionError(f"{what} must be a whole number {lo}-{hi}, not {n!r}")
    return n


def _person(st: dict, name) -> dict:
    if name not in st["people"]:
        known = ", ".join(st["people"]) or "nobody yet"
        raise ActionError(f"no one called {name!r} at the table ({known})")
    return st["people"][name]


def _hand_key(st: dict, who: str) -> str:
    if who == "GM":
        return "GM"
    p = _person(st, who)
    if p["kind"] == "npc" and st["combat"] is not None:
        return "GM"
    return who


def _fmt(cards) -> str:
    return " ".join(cards) if cards else "—"


# --- actions ---------------------------------------------------------------------------------

def apply(state: dict, action: dict, rng: random.Random, settings: dict) -> tuple[dict, dict]:
    """(new state, result) for one action; ``ActionError`` and nothing changed if refused."""
    do = action.get("do")
    fn = _ACTIONS.get(do)
    if fn is None:
        raise ActionError(f"unknown action {do!r} (actions: {', '.join(_ACTIONS)})")
    st = marshal.loads(marshal.dumps(state))  # a deep copy of plain data, 3x faster than JSON
    notes: list[str] = []
    result = fn(st, action, rng, settings, notes)
    if notes:
        result["notes"] = notes
        result["text"] += "\n" + "\n".join(notes)
    result["counts"] = {"pile": len(st["pile"]), "discard": len(st["discard"])}
    return st, result


def _name(action, key="name") -> str:
    name = action.get(key)
    if not isinstance(name, str) or not name.strip() or " " in name:
        raise ActionError(f"a name is one word, not {name!r}")
    return check_name(name, "name", error=ActionError)


def _mode(m):
    if m in (None, "", "-"):
        return None
    s = _SUIT_ALIASES.get(str(m).strip().upper())
    if s is None:
        raise ActionError(f"表出モード must be a suit (♠♥♦♣ or S H D C), not {m!r}")
    return s


def _player(st, a, rng, settings, notes):
    name = _name(a)
    if name in st["people"] or name == "GM":
        raise ActionError(f"{name!r} is already at the table")
    mode = _mode(a.get("mode"))
    st["people"][name] = {"kind": "pc", "mode": mode}
    st["hands"][name] = _take(st, settings["start_hand"], rng, notes)
    return {"text": f"player {name} (表出モード {mode or 'none'}) draws "
                    f"{settings['start_hand']}: {_fmt(st['hands'][name])}",
            "hand": st["hands"][name]}


def _npc(st, a, rng, settings, notes):
    name = _name(a)
    if name in st["people"] or name == "GM":
        raise ActionError(f"{name!r} is already at the table")
    mode = _mode(a.get("mode"))
    st["people"][name] = {"kind": "npc", "mode": mode}
    return {"text": f"NPC {name} (表出モード {mode or 'none'}; holds no hand outside combat)"}


def _draw(st, a, rng, settings, notes):
    who = a.get("who")
    key = _hand_key(st, who)
    n = _count(a.get("n", 1), "the number of cards", 1, 60)
    got = _take(st, n, rng, notes)
    st["hands"].setdefault(key, []).extend(got)
    return {"text": f"{who} draws {n}: {_fmt(got)} (hand {len(st['hands'][key])})", "drawn": got}


def _open(st, a, rng, settings, notes):
    n = _count(a.get("n", 1), "the number of cards", 1, 60)
    got = _take(st, n, rng, notes)
    st["discard"].extend(got)
    return {"text": f"open {n}: {_fmt(got)} (values {sum(map(value_of, got))})", "opened": got}


def _peek(st, a, rng, settings, notes):
    n = _count(a.get("n", 1), "the number of cards", 1, 60)
    got = _take(st, n, rng, notes)
    st["pile"] = got + st["pile"]
    return {"text": f"look at the top {n}: {_fmt(got)} (they stay on top)", "seen": got}


def _take_from_hand(hand: list[str], specs, who: str,
                    prefer: str | None = None) -> list[tuple[str, str | None]]:
    """Remove the named cards from ``hand`` (in place); [(card, joker's name)].  A rank alone
    takes a card of that rank, of suit ``prefer`` (the 表出モード) when there is one."""
    out = []
    for spec in specs:
        want, named = _parse_played(spec)
        if want in hand:
            hand.remove(want)
            out.append((want, named))
            continue
        match = next((c for c in hand if prefer and c == prefer + want), None) or \
            next((c for c in hand if c != JOKER and rank_of(c) == want), None)
        if match is None:
            raise ActionError(f"{spec!r} is not in {who}'s hand ({_fmt(hand)})")
        hand.remove(match)
        out.append((match, named))
    return out


def _discard(st, a, rng, settings, notes):
    who = a.get("who")
    key = _hand_key(st, who)
    hand = st["hands"].get(key, [])
    if a.get("all"):
        gone = list(hand)
        hand.clear()
    else:
        specs = a.get("cards") or []
        if not specs:
            raise ActionError("name the cards to discard (or 'all')")
        gone = [c for c, _ in _take_from_hand(hand, specs, who)]
    st["discard"].extend(gone)
    return {"text": f"{who} discards {_fmt(gone)} (hand {len(hand)})", "discarded": gone}


def _reshuffle_action(st, a, rng, settings, notes):
    n = len(st["discard"])
    _reshuffle(st, rng)
    return {"text": f"reshuffle: {n} discards back into the pile, pile {len(st['pile'])}"}


def _npchand(st, a, rng, settings, notes):
    who = a.get("who")
    p = _person(st, who)
    if p["kind"] != "npc":
        raise ActionError(f"{who} is not an NPC")
    if st["combat"] is not None:
        raise ActionError("in combat NPCs use the GM's hand")
    got = _take(st, settings["npc_hand"], rng, notes)
    st["hands"].setdefault(who, []).extend(got)
    return {"text": f"NPC {who} draws {len(got)} for a judgement: {_fmt(got)}", "drawn": got}


def _partend(st, a, rng, settings, notes):
    gone = []
    for name, p in st["people"].items():
        if p["kind"] == "npc" and st["hands"].get(name):
            gone += st["hands"][name]
            st["hands"][name] = []
    st["discard"].extend(gone)
    st.pop("to_judge", None)  # their hands are gone: nothing is waiting to be judged
    return {"text": f"end of the part: NPC hands discarded ({len(gone)} cards)"}


def _combat(st, a, rng, settings, notes):
    if st["combat"] is not None:
        raise ActionError("a combat is already on (combatend first)")
    enemies = _count(a.get("enemies"), "the number of enemies", 1, 20)
    per = _count(a.get("per", settings["enemy_draw"]), "cards per enemy", 0, 20)
    npc_cards = [c for n, p in st["people"].items() if p["kind"] == "npc"
                 for c in st["hands"].get(n, [])]
    if npc_cards:
        raise ActionError("NPCs still hold hands from outside combat: partend first")
    got = _take(st, enemies * per, rng, notes)
    st["hands"].setdefault("GM", []).extend(got)
    told = [n for n, p in st["people"].items() if p["kind"] == "npc" and p["mode"]]
    st["combat"] = {"enemies": enemies, "told": told}
    return {"text": f"combat: {enemies} enemies, the GM draws {len(got)}"
                    + (f"; 表出モード told for {', '.join(told)}" if told else ""),
            "drawn": got}


def _combatend(st, a, rng, settings, notes):
    if st["combat"] is None:
        raise ActionError("no combat is on")
    gone = st["hands"].pop("GM", [])
    st["discard"].extend(gone)
    st["combat"] = None
    return {"text": f"combat over: the GM's hand ({len(gone)} cards) discarded"}


def _crit_cards(st: dict, who: str) -> tuple[str | None, bool]:
    """(the suit whose Ace is critical or None, whether a played joker is critical)."""
    if who == "GM":
        return None, True
    p = st["people"][who]
    if p["kind"] == "pc":
        return p["mode"], False
    told = st["combat"] is not None and who in st["combat"]["told"]
    return (p["mode"] if told else None), True


def _from_sheet(st: dict, who: str, skill, level, ability) -> tuple:
    """(level, ability) of a judgement: given as numbers, or from WHO's sheet (``level`` None:
    the skill's level and its ability; ``ability`` a name: that ability's value)."""
    sheet = st.get("sheets", {}).get(who, {"abilities": {}, "skills": {}})
    if level is None:
        if skill not in sheet["skills"]:
            known = ", ".join(sheet["skills"]) or "none"
            raise ActionError(f"{who}'s sheet has no skill {skill!r} (skills: {known}): "
                              f"give LEVEL ABILITY, or add it with sheet {who} {skill}=LEVEL/ABILITY")
        level, ab_name = sheet["skills"][skill]
        ability = ab_name if ability is None else ability
    if isinstance(ability, str):
        if ability not in sheet["abilities"]:
            known = ", ".join(sheet["abilities"]) or "none"
            raise ActionError(f"{who}'s sheet has no ability {ability!r} (abilities: {known})")
        ability = sheet["abilities"][ability]
    return level, ability


def judge(st: dict, a: dict, rng: random.Random, notes: list[str], rules: int = 2) -> dict:
    """One judgement on the (copied) state ``st``; returns its summary."""
    who = a.get("who")
    key = _hand_key(st, who)
    level, ability = _from_sheet(st, who, a.get("skill", ""), a.get("level"), a.get("ability"))
    level = _count(level, "the skill level", 0, 20)
    ability = _count(ability, "the ability value", 0, 999)
    mod = a.get("mod", 0)
    if isinstance(mod, bool) or not isinstance(mod, int) or not -999 <= mod <= 999:
        raise ActionError(f"mod (a skill's +/- on the value) must be a whole number -999-999, not {mod!r}")
    target = a.get("target")
    if target is not None:
        target = _count(target, "the target", 0, 999)
    specs = list(a.get("cards") or [])
    limit = bool(a.get("limit"))
    hand = st["hands"].setdefault(key, [])
    max_cards = max(level, 1)
    if len(specs) > max_cards:
        raise ActionError(f"level {level} allows at most {max_cards} card(s), not {len(specs)}")
    held = len(hand)
    crit_suit, joker_crit = _crit_cards(st, who)
    played = _take_from_hand(hand, specs, who, prefer=crit_suit)
    if limit and held >= max_cards:
        raise ActionError(f"《限界突破》 only when the hand is short: {who} holds {held} "
                          f"card(s), level {level} needs {max_cards}")
    opened: list[str] = []
    if limit:
        # 「判定時に手札枚数が足りない場合、《限界突破》を行うことができる」「足りない手札を
        #   オープンＸで補う」 (seed 001, ４．): X is what the hand lacks, level − cards held.
        #   (Rules 1 opened level − cards played.)
        missing = max_cards - (held if rules >= 2 else len(played))
        if missing <= 0:
            raise ActionError("《限界突破》 would turn up nothing: all the cards were played")
        opened = _take(st, missing, rng, notes)
    no_card = not played and held > 0
    values = [value_of(c) if named is None else _named_value(named) for c, named in played]
    base = (ability // 2 if level == 0 else ability) + sum(values) + sum(10 if c == JOKER else value_of(c)
                                                                      for c in opened) + mod
    critical = False
    if not limit:
        for c, named in played:
            if c == JOKER and joker_crit:
                critical = True
            real = named if c == JOKER else c
            if crit_suit and real and real == crit_suit + "A":
                critical = True
    face_open = [c for c in opened if c != JOKER and rank_of(c) in FACE]
    absolute_failure = no_card or bool(face_open)
    if absolute_failure:
        critical = False
    effective = 0 if absolute_failure else base + (30 if critical else 0)
    if critical:
        success = True
    elif absolute_failure:
        success = False
    else:
        success = None if target is None else base >= target
    st["discard"].extend([c for c, _ in played] + opened)
    summary = {"id": (st["judgements"][-1]["id"] if st["judgements"] else 0) + 1, "who": who, "skill": a.get("skill", ""),
               "level": level, "ability": ability, "played": [c if n is None else f"{c}={n}"
                                                              for c, n in played],
               "opened": opened, "limit": limit, "mod": mod, "value": base, "effective": effective,
               "target": target, "success": success, "critical": critical,
               "absolute_failure": absolute_failure, "no_card": no_card}
    st["judgements"].append(summary)
    del st["judgements"][:-KEEP_JUDGEMENTS]
    return summary


def opposed(active: dict, passive: dict) -> tuple[str, str]:
    """("active"|"passive", why) for an opposed judgement."""
    if active["no_card"]:
        return "passive", "the active side played no card: an absolute failure nothing undoes"
    if passive["no_card"]:
        return "active", "the passive side played no card while holding cards"
    if active["absolute_failure"]:
        return "passive", "the active side failed absolutely"
    if active["critical"] and passive["critical"]:
        return "passive", "both critical: the passive side wins"
    if active["critical"]:
        return "active", "critical"
    if passive["critical"]:
        return "passive", "the passive side's critical"
    if passive["absolute_failure"]:
        return "active", "the passive side failed absolutely"
    if active["value"] > passive["value"]:
        return "active", f"{active['value']} > {passive['value']}"
    return "passive", f"{active['value']} ≤ {passive['value']}: ties go to the passive side"


def _judge_action(st, a, rng, settings, notes):
    against = a.get("vs")
    act = None
    if against is not None:
        act = next((j for j in st["judgements"] if j["id"] == against), None)
        if act is None:
            ids = [j["id"] for j in st["judgements"]]
            raise ActionError(f"vs={against!r}: no such judgement" +
                              (f" (the last {len(ids)}: {ids[0]}-{ids[-1]})" if ids else " yet"))
    who = a.get("who")
    if settings.get("rules", 2) >= 2 and who != "GM" and _hand_key(st, who) == who and \
            st["people"][who]["kind"] == "npc" and not st["hands"].get(who):
        return _npc_draws_to_judge(st, a, rng, settings, notes)
    pending = st.get("to_judge", {})
    if who in pending and _hand_key(st, who) == who:
        if not a.get("cards"):
            raise ActionError(f"NPC {who} drew {len(st['hands'].get(who, []))} to judge: name the "
                              f"cards it plays from them ({_fmt(st['hands'].get(who, []))}): "
                              f"judge {pending[who]} CARD…")
        del pending[who]
    s = judge(st, a, rng, notes, settings.get("rules", 2))
    parts = [f"judgement {s['id']}: {s['who']} {s['skill'] or ''} level {s['level']}".replace("  ", " "),
             f"ability {s['ability']}" + (" (halved: level 0)" if s["level"] == 0 else ""),
             f"played {_fmt(s['played'])}"]
    if s["limit"]:
        parts.append(f"《限界突破》 turned up {_fmt(s['opened'])}")
    if s["mod"]:
        parts.append(f"mod {s['mod']:+d}")
    parts.append(f"value {s['value']}")
    if s["critical"]:
        parts.append(f"CRITICAL: absolute success (counts {s['effective']})")
    if s["absolute_failure"]:
        why = "no card played while holding cards — nothing can undo it" if s["no_card"] \
            else "J/Q/K/A turned up by 《限界突破》"
        parts.append(f"ABSOLUTE FAILURE ({why}; counts 0)")
    if s["target"] is not None and not s["critical"] and not s["absolute_failure"]:
        parts.append(f"target {s['target']}: " + ("success" if s["success"] else "failure"))
    text = "; ".join(parts)
    result = {"judgement": s}
    if against is not None:
        side, why = opposed(act, s)
        winner = act["who"] if side == "active" else s["who"]
        result["opposed"] = {"active": against, "passive": s["id"], "winner": side,
                             "winner_name": winner, "why": why}
        text += f"\nopposed to judgement {against} ({act['who']}): {winner} wins — {why}"
    result["text"] = text
    return result


def _sheet(st, a, rng, settings, notes):
    """A character sheet: abilities (``理力=12``) and skills with their level and the ability
    they belong to (``思考=2/理力``: 「使用された技能の属する能力値を加算」, seed 001 ３．４).
    Values given again replace the old ones; the rest of the sheet stays."""
    who = a.get("who")
    _person(st, who)
    abilities, skills = a.get("abilities") or {}, a.get("skills") or {}
    if not isinstance(abilities, dict) or not isinstance(skills, dict) or not (abilities or skills):
        raise ActionError("sheet WHO ABILITY=N … SKILL=LEVEL/ABILITY …: give at least one value")
    sheet = st.setdefault("sheets", {}).setdefault(who, {"abilities": {}, "skills": {}})
    for name, v in abilities.items():
        sheet["abilities"][_sheet_name(name)] = _count(v, f"ability {name}", 0, 999)
    for name, v in skills.items():
        if not isinstance(v, list) or len(v) != 2:
            raise ActionError(f"skill {name}: LEVEL/ABILITY, e.g. {name}=2/理力")
        level, ab = v
        if _sheet_name(ab) not in sheet["abilities"]:
            known = ", ".join(sheet["abilities"]) or "none yet"
            raise ActionError(f"skill {name} belongs to ability {ab!r}, which is not on {who}'s "
                              f"sheet (abilities: {known})")
        sheet["skills"][_sheet_name(name)] = [_count(level, f"skill {name}'s level", 0, 20), ab]
    return {"text": f"sheet {who}: " + sheet_text(sheet), "sheet": sheet}


def _sheet_name(name) -> str:
    if not isinstance(name, str) or not name.strip() or any(c in name for c in " =/:,@"):
        raise ActionError(f"a sheet name is one word without = / : , @, not {name!r}")
    return name


def sheet_text(sheet: dict) -> str:
    ab = " ".join(f"{k} {v}" for k, v in sheet["abilities"].items())
    sk = " ".join(f"{k} {lv} ({ab_})" for k, (lv, ab_) in sheet["skills"].items())
    return "; ".join(x for x in (ab, sk) if x) or "empty"


def _npc_draws_to_judge(st, a, rng, settings, notes):
    """「もし戦闘以外で判定を行う必要性が出てきた時は、その瞬間にドロー５を行って判定し、パート
    終了時に全て捨てる。」 (▼ＮＰＣの手札の運用について): an NPC asked to judge outside combat
    with no card in hand draws 5 first; the GM then chooses from them, so this action only
    draws, and the judgement is the next line (no judgement is made or numbered here)."""
    who = a["who"]
    if a.get("cards"):
        raise ActionError(f"NPC {who} holds no hand yet: judge it without cards first (it draws "
                          f"{settings['npc_hand']}), then name the cards it plays from them")
    got = _take(st, settings["npc_hand"], rng, notes)
    st["hands"][who] = got
    # the next judgement of this NPC names its cards: one without is asked again (it read as
    # "no card played while holding cards": an ABSOLUTE FAILURE the line before had not meant)
    st.setdefault("to_judge", {})[who] = _judge_again(a)
    return {"text": f"NPC {who} holds no hand outside combat: draws {len(got)} to judge: "
                    f"{_fmt(got)} — now the judgement with the cards it plays: "
                    f"judge {_judge_again(a)} CARD…",
            "drawn": got, "judgement": None}


def _judge_again(a: dict) -> str:
    """The ``judge`` line's words before the cards, as the user gave them."""
    return " ".join(str(x) for x in (a["who"], a.get("skill") or "-",
                                     "@" if a.get("level") is None else a.get("level"),
                                     "" if a.get("level") is None else a.get("ability"))
                    if x != "")


_ACTIONS = {
    "sheet": _sheet,
    "player": _player, "npc": _npc, "draw": _draw, "open": _open, "peek": _peek,
    "discard": _discard, "reshuffle": _reshuffle_action, "npchand": _npchand,
    "partend": _partend, "combat": _combat, "combatend": _combatend, "judge": _judge_action,
}


def describe(st: dict, who: str | None = None) -> str:
    """The table for the screen: pile, discards, hands, combat.  ``who`` None: the GM's view
    (every hand); a name: that person's view (their own hand and sheet, the others' counts)."""
    if who is not None:
        _person(st, who)
    lines = [f"山札 {len(st['pile'])} · 捨て札 {len(st['discard'])} · reshuffles {st['reshuffles']}"
             + (f" · combat ({st['combat']['enemies']} enemies)" if st["combat"] else "")]
    for name, p in st["people"].items():
        hand = st["hands"].get(name)
        mode = p["mode"] or "-"
        if who is not None and name != who:
            shown = f"{len(hand)} card(s)" if hand else ("no cards" if p["kind"] == "pc" else "no hand")
        elif p["kind"] == "pc" or hand:
            shown = _fmt(hand or [])
        else:
            shown = "no hand"
        lines.append(f"  {name} [{p['kind']}, mode {mode}]: {shown}")
        sheet = st.get("sheets", {}).get(name)
        if sheet and (who is None or name == who):
            lines.append(f"    sheet: {sheet_text(sheet)}")
    if "GM" in st["hands"]:
        lines.append(f"  GM: {_fmt(st['hands']['GM']) if who is None else str(len(st['hands']['GM'])) + ' card(s)'}")
    if who is not None:
        lines.append(f"(the view of {who}: the others' hands are counted, not shown)")
    return "\n".join(lines)


def view(st: dict, who: str | None = None) -> dict:
    """The state as JSON for a screen: the 山札's order is never in it (only its count).
    ``who`` a name: that person's view (own hand and sheet; the others' hands as counts)."""
    out = dict(st, pile=len(st["pile"]))
    if who is None:
        return out
    _person(st, who)
    out["hands"] = {who: st["hands"].get(who, [])}
    out["hand_counts"] = {n: len(h) for n, h in st["hands"].items()}
    out["sheets"] = {k: v for k, v in st.get("sheets", {}).items() if k == who}
    out["viewer"] = who
    return out
