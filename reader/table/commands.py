"""One typed line -> one table action (for the prompt and ``karuta table … do``).

Pure: no I/O.  ``parse(system, line)`` returns an action dict for ``Table.push``, or a
``Command`` (undo, help, show, recite, quit) that the prompt handles itself.  A line it cannot
understand is one ``ActionError`` naming the word.
"""
from __future__ import annotations

from dataclasses import dataclass

from reader.base.limits import shown
from reader.table import ActionError

__all__ = ["parse", "Command", "HELP"]

HELP = {
    "cards": """\
player NAME [MODE]          a PC joins and draws 5 (MODE: 表出モード suit ♠ ♥ ♦ ♣ or s h d c)
npc NAME [MODE]             an NPC (no hand outside combat: its first judge draws 5, then judge again)
sheet WHO ABILITY=N … SKILL=LEVEL/ABILITY …    a character sheet, e.g. sheet tenjo 理力=12 思考=2/理力
draw WHO [N]                ドローN (default 1)            open N     オープンN (to the discards)
peek N                      look at the top N (they stay)  reshuffle  discards back, shuffle
discard WHO CARD… | all     from a hand to the discards
npchand NPC                 an NPC draws 5 for a judgement outside combat;  partend: NPCs discard
combat N [per=K]            the GM draws N×5 (K per enemy);  combatend: the GM discards
judge WHO SKILL LEVEL ABILITY [CARD…] [t=TARGET] [mod=±N] [limit] [vs=N]
judge WHO SKILL @ [CARD…] …  the level and ability from WHO's sheet (ABILITY may also be a name)
    CARD: ♣J, cj, 10h, 3 (a 3 from the hand), JK=♠A (a joker named); limit = 《限界突破》;
    mod: the skills' + or − on the value (steps 5-6); vs=N: the passive side against judgement N
    e.g.  judge tenjo 思考 2 12 3 5 t=20      judge pc 近接 2 5 cj limit      judge tenjo 思考 @ 3 5 mod=+2
show [NAME] (NAME: only what NAME may see)   u undo   log   ? help   q quit (saved after each action)""",
    "genkan": """\
player NAME KAGAKU          a player joins (歌学 specialities = hand limit) and is dealt 3
sheet WHO NAME=N …          a character sheet: 能力値, 文化値 (男 女 官僧), 特技 (sheet 在五 知=3 男=2 歌学=2)
kagaku WHO N   refill WHO   scene (turn up 3 歌枕札)   key N (the GM puts key card N up)
act WHO ATTR DICE DIFF [CARD…] [sp=N]       行為判定: ATTR 男|女|官僧, DICE = 能力値＋文化値 (or an
                                            ability on the sheet: 知 = 知 + the sheet's ATTR), DIFF 1-20
                                            or 簡単 ふつう 難しい; CARDs from the hand (at most sp = 特技)
contest A[:DICE[:SP]],B… ATTR [DICE] [min=N] [sp=N] [teams=A:x,B:y] [join]   対決判定, each with
                                            their own DICE/特技 (A:7:2), else the shared ones
turn DIFF [CARD…] | turn pass               the next participant;  contest stop (time limit);
                                            contest join NAME[:DICE[:SP]] [team=T] (if allowed: join)
talk WHO TARGET ATTR DICE [DIFF] [CARD…] [sp=N]   歌語り: TARGET pc|知人|同時代|過去|未来;  talkend
poem WHO N | poem WHO 12.1 45.2 …            a poem from outside (one of the hundred, an NPC's) to answer
compose solo|henka|renga|senka WHO [of=POEM#] [ku=N] [before] [hand=ATTR] [advice=ATTR]
                            歌詠み: draws the cards; hand=/advice=: the 文化値 of a 《歌学》 success
                            that lets hand cards (own / another player's) be used
place 12.1 45.2 …           the ku in the new poem's order (POEM.KU; ku 1,3 = 5 sounds; 2,4,5 = 7)
score POEM# gm=0-2 pl=N scene=N             敬慕点
poems   recite [POEM#] [out=FILE.wav [replace]]   show [NAME] (NAME: only what that player may see)
u undo   log   ? help   q quit (everything is saved after each action)""",
}


@dataclass(frozen=True)
class Command:
    name: str  # "undo" | "help" | "show" (args "who") | "log" | "quit" | "recite" | "poems"
    args: dict


_SIMPLE = {"u": "undo", "undo": "undo", "?": "help", "h": "help", "help": "help", "show": "show",
           "s": "show", "log": "log", "q": "quit", "quit": "quit", "exit": "quit", "poems": "poems"}


def _int(word: str, what: str) -> int:
    try:
        return int(word)
    except (TypeError, ValueError):
        raise ActionError(f"{what} must be a whole number, not {shown(word)}") from None


def _int_or_name(word: str):
    """A number, or a name to look up on a character sheet (``知``, ``歌学``)."""
    try:
        return int(word)
    except ValueError:
        return word


def _takes(keys, flags) -> str:
    words = [k + "=" for k in keys] + list(flags)
    return f"it takes {', '.join(words)}" if words else "it takes no NAME=VALUE words"


def _words(cmd: str, words: list[str], keys=(), flags=(), *, cards: bool = False):
    """(positional words, {key: value}, {flags}) of one command.  A NAME=VALUE word whose NAME
    the command does not take, a key given twice, or an empty value is refused, naming the
    words the command does take: a mistyped word must not vanish."""
    pos: list[str] = []
    kv: dict[str, str] = {}
    fl: set[str] = set()
    for w in words:
        low = w.lower()
        if low in flags:
            fl.add(low)
            continue
        if "=" not in w:
            pos.append(w)
            continue
        k, v = w.split("=", 1)
        if k.lower() not in keys:
            if cards and _card_like(k):
                pos.append(w)   # JK=♠A (a named joker); the rules refuse any other card with '='
                continue
            raise ActionError(f"{cmd}: unknown word {shown(w)} ({_takes(keys, flags)})")
        if k.lower() in kv:
            raise ActionError(f"{cmd}: {k}= given twice")
        if v == "":
            raise ActionError(f"{cmd}: {shown(w)} has no value")
        kv[k.lower()] = v
    return pos, kv, fl


def _card_like(text: str) -> bool:
    from reader.table.cards import parse_card

    try:
        parse_card(text, bare_rank=True)
    except ActionError:
        return False
    return True


def _need(cmd: str, pos: list[str], lo: int, hi: int | None, usage: str) -> None:
    if len(pos) < lo:
        raise ActionError(f"usage: {usage}")
    if hi is not None and len(pos) > hi:
        raise ActionError(f"{cmd}: unexpected word {shown(pos[hi])} (usage: {usage})")


def _name(word: str, what: str = "a name") -> str:
    if any(ch in word for ch in "=:,"):
        raise ActionError(f"{what} is one word without = : , — not {shown(word)}")
    return word


def parse(system: str, line: str):
    words = line.strip().split()
    if not words:
        return None
    head = words[0].lower()
    if head in _SIMPLE and len(words) == 1:
        return Command(_SIMPLE[head], {})
    if head == "show" and len(words) == 2:
        return Command("show", {"who": words[1]})
    if head in _SIMPLE and head not in ("show", "s"):
        raise ActionError(f"{head}: unexpected word {shown(words[1])} ({head} takes none)")
    if head == "recite" and system == "genkan":
        pos, kv, fl = _words("recite", words[1:], ("out",), ("replace",))
        _need("recite", pos, 0, 1, "recite [POEM#] [out=FILE.wav [replace]]")
        return Command("recite", {"poem": _int(pos[0].lstrip("#"), "the poem number") if pos else None,
                                  "out": kv.get("out"), **({"replace": True} if fl else {})})
    if system == "cards":
        return _parse_cards(head, words[1:])
    return _parse_genkan(head, words[1:])


def _parse_cards(head: str, rest: list[str]) -> dict:
    if head in ("player", "npc"):
        pos, _, _ = _words(head, rest)
        _need(head, pos, 1, 2, f"{head} NAME [MODE]")
        return {"do": head, "name": _name(pos[0]), "mode": pos[1] if len(pos) > 1 else None}
    if head == "draw":
        pos, _, _ = _words(head, rest)
        _need(head, pos, 1, 2, "draw WHO [N]")
        return {"do": "draw", "who": pos[0], "n": _int(pos[1], "N") if len(pos) > 1 else 1}
    if head in ("open", "peek"):
        pos, _, _ = _words(head, rest)
        _need(head, pos, 0, 1, f"{head} [N]")
        return {"do": head, "n": _int(pos[0], "N") if pos else 1}
    if head in ("reshuffle", "partend", "combatend"):
        pos, _, _ = _words(head, rest)
        _need(head, pos, 0, 0, head)
        return {"do": head}
    if head == "discard":
        pos, _, _ = _words(head, rest, cards=True)
        _need(head, pos, 2, None, "discard WHO CARD… | all")
        if pos[1].lower() == "all":
            _need(head, pos, 2, 2, "discard WHO all")
            return {"do": "discard", "who": pos[0], "all": True}
        return {"do": "discard", "who": pos[0], "cards": pos[1:]}
    if head == "npchand":
        pos, _, _ = _words(head, rest)
        _need(head, pos, 1, 1, "npchand NPC")
        return {"do": "npchand", "who": pos[0]}
    if head == "combat":
        pos, kv, _ = _words(head, rest, ("per",))
        _need(head, pos, 1, 1, "combat N [per=K]")
        a = {"do": "combat", "enemies": _int(pos[0], "the number of enemies")}
        if "per" in kv:
            a["per"] = _int(kv["per"], "per")
        return a
    if head == "sheet":
        return _cards_sheet(rest)
    if head in ("judge", "j"):
        usage = ("judge WHO SKILL LEVEL ABILITY [CARD…] [t=TARGET] [mod=±N] [limit] [vs=N]  "
                 "(or SKILL @ for the sheet's level and ability)")
        pos, kv, fl = _words("judge", rest, ("t", "vs", "mod"), ("limit", "限界突破"), cards=True)
        _need("judge", pos, 3, None, usage)
        if pos[2] == "@":      # the level and ability from WHO's sheet
            level, ability, cards = None, None, pos[3:]
        else:
            _need("judge", pos, 4, None, usage)
            level, ability, cards = _int(pos[2], "LEVEL"), _int_or_name(pos[3]), pos[4:]
        a = {"do": "judge", "who": pos[0], "skill": pos[1], "level": level, "ability": ability,
             "cards": cards, "limit": bool(fl)}
        if "t" in kv:
            a["target"] = _target(kv["t"])
        if "vs" in kv:
            a["vs"] = _int(kv["vs"], "vs")
        if "mod" in kv:
            a["mod"] = _int(kv["mod"], "mod (the skills' + or − on the value)")
        return a
    raise ActionError(f"what is {shown(head)}? ('?' for help)")


#: 「※判定の難易度」 (seed 001): ranges the GM picks a target from, not one number each
TARGET_WORDS = {"とても簡単": "10-15", "標準": "16-20", "少し難しい": "21-25", "非常に難しい": "26 or more"}


def _target(word: str) -> int:
    if word in TARGET_WORDS:
        raise ActionError(f"t={word}: the seed gives {word} as targets {TARGET_WORDS[word]}; "
                          f"pick the number (t=N)")
    return _int(word, "the target")


def _cards_sheet(rest: list[str]) -> dict:
    usage = "sheet WHO ABILITY=N … SKILL=LEVEL/ABILITY …  (e.g. sheet tenjo 理力=12 思考=2/理力)"
    if not rest:
        raise ActionError(f"usage: {usage}")
    abilities: dict[str, int] = {}
    skills: dict[str, list] = {}
    for w in rest[1:]:
        if "=" not in w:
            raise ActionError(f"sheet: {shown(w)} is not NAME=VALUE (usage: {usage})")
        k, v = w.split("=", 1)
        if "/" in v:
            level, ab = v.split("/", 1)
            skills[k] = [_int(level, f"skill {k}'s level"), ab]
        else:
            abilities[k] = _int(v, f"ability {k}")
    if not abilities and not skills:
        raise ActionError(f"usage: {usage}")
    return {"do": "sheet", "who": rest[0], "abilities": abilities, "skills": skills}


def _cards(words: list[str]) -> list[int]:
    return [_int(w, "a card (poem number)") for w in words]


def _diff(word: str):
    """A difficulty: a number, or a word of the seed (ふつう …) for the rules to read."""
    return _int_or_name(word)


def _participants(spec: str) -> tuple[list[str], dict]:
    """``a:7:2,b:5,c`` -> names, {name: {"dice": 7, "special": 2}} (DICE and 特技 each a number
    or a name on the participant's sheet)."""
    names, each = [], {}
    for part in filter(None, spec.split(",")):
        name, *vals = part.split(":")
        if not name or len(vals) > 2 or any(v == "" for v in vals):
            raise ActionError(f"contest: {shown(part)} should be NAME, NAME:DICE or NAME:DICE:SP")
        names.append(name)
        if vals:
            each[name] = {"dice": _int_or_name(vals[0])}
            if len(vals) > 1:
                each[name]["special"] = _int_or_name(vals[1])
    return names, each


_GENKAN = ("player", "kagaku", "refill", "scene", "talkend", "key", "sheet", "poem", "act",
           "contest", "turn", "talk", "compose", "place", "score")


def _parse_genkan(head: str, rest: list[str]) -> dict:
    if head not in _GENKAN:
        raise ActionError(f"what is {shown(head)}? ('?' for help)")
    if head == "sheet":
        usage = "sheet WHO NAME=N …  (能力値, 文化値 男 女 官僧, 特技: e.g. sheet 在五 知=3 男=2 歌学=2)"
        if not rest:
            raise ActionError(f"usage: {usage}")
        values = {}
        for w in rest[1:]:
            if "=" not in w:
                raise ActionError(f"sheet: {shown(w)} is not NAME=N (usage: {usage})")
            k, v = w.split("=", 1)
            values[k] = _int(v, f"{k}")
        if not values:
            raise ActionError(f"usage: {usage}")
        return {"do": "sheet", "who": _name(rest[0]), "values": values}
    keys = {"act": ("sp",), "talk": ("sp",), "contest": ("min", "sp", "teams", "team"),
            "compose": ("of", "ku", "hand", "advice"), "score": ("gm", "pl", "scene")}.get(head, ())
    flags = {"compose": ("before",), "contest": ("join",)}.get(head, ())
    if head == "contest" and rest and rest[0].lower() in ("join", "stop"):
        head, rest = "contest " + rest[0].lower(), rest[1:]
        keys, flags = (("team",) if head == "contest join" else ()), ()
    pos, kv, fl = _words(head, rest, keys, flags)
    sp = _int_or_name(kv["sp"]) if "sp" in kv else None

    def special(cards):
        if cards and sp is None:
            raise ActionError("hand cards need the 特技 value: add sp=N (or sp=NAME from the sheet)")
        return sp or 0

    if head == "player":
        _need(head, pos, 2, 2, "player NAME KAGAKU")
        return {"do": "player", "name": _name(pos[0]), "kagaku": _int(pos[1], "KAGAKU")}
    if head == "kagaku":
        _need(head, pos, 2, 2, "kagaku WHO N")
        return {"do": "kagaku", "who": pos[0], "kagaku": _int(pos[1], "N")}
    if head == "refill":
        _need(head, pos, 1, 1, "refill WHO")
        return {"do": "refill", "who": pos[0]}
    if head in ("scene", "talkend"):
        _need(head, pos, 0, 0, head)
        return {"do": head}
    if head == "key":
        _need(head, pos, 1, 1, "key N")
        return {"do": "key", "no": _int(pos[0], "the key card")}
    if head == "poem":
        usage = "poem WHO N (poem N of the hundred) | poem WHO POEM.KU … (an NPC's poem)"
        _need(head, pos, 2, 6, usage)
        if len(pos) == 2 and "." not in pos[1] and ":" not in pos[1]:
            return {"do": "poem", "who": _name(pos[0]), "no": _int(pos[1], "the poem number")}
        return {"do": "poem", "who": _name(pos[0]), "ku": pos[1:]}
    if head == "act":
        _need(head, pos, 4, None, "act WHO ATTR DICE DIFF [CARD…] [sp=N]")
        cards = _cards(pos[4:])
        return {"do": "act", "who": pos[0], "attr": pos[1], "dice": _int_or_name(pos[2]),
                "difficulty": _diff(pos[3]), "cards": cards, "special": special(cards)}
    if head == "contest":
        if "team" in kv:
            raise ActionError("contest: unknown word 'team=' (teams=A:x,B:y; team= is for contest join)")
        usage = "contest A[:DICE[:SP]],B… ATTR [DICE] [min=N] [sp=N] [teams=A:x,B:y] [join]"
        _need(head, pos, 2, 3, usage)
        names, each = _participants(pos[0])
        teams = {}
        for part in filter(None, kv.get("teams", "").split(",")):
            if ":" not in part:
                raise ActionError(f"teams: {shown(part)} should be NAME:TEAM")
            n, t = part.split(":", 1)
            teams[n] = t
        a = {"do": "contest", "names": names, "attr": pos[1],
             "min": _diff(kv.get("min", "1")), "special": sp or 0, "teams": teams,
             "joinable": "join" in fl}
        if len(pos) > 2:
            a["dice"] = _int_or_name(pos[2])
        if each:
            a["each"] = each
        return a
    if head == "contest stop":
        _need(head, pos, 0, 0, "contest stop")
        return {"do": "conteststop"}
    if head == "contest join":
        _need(head, pos, 1, 1, "contest join NAME[:DICE[:SP]] [team=T]")
        names, each = _participants(pos[0])
        if len(names) != 1:
            raise ActionError("contest join: one name at a time")
        return {"do": "contestjoin", "name": names[0], "team": kv.get("team"), **each.get(names[0], {})}
    if head == "turn":
        if pos and pos[0].lower() == "pass":
            _need(head, pos, 1, 1, "turn pass")
            return {"do": "turn", "pass": True}
        _need(head, pos, 1, None, "turn DIFF [CARD…] | turn pass")
        return {"do": "turn", "difficulty": _diff(pos[0]), "cards": _cards(pos[1:])}
    if head == "talk":
        _need(head, pos, 4, None, "talk WHO TARGET ATTR DICE [DIFF] [CARD…] [sp=N]")
        a = {"do": "talk", "who": pos[0], "target": pos[1], "attr": pos[2],
             "dice": _int_or_name(pos[3])}
        if len(pos) > 4:
            a["difficulty"] = _diff(pos[4])
        a["cards"] = _cards(pos[5:])
        a["special"] = special(a["cards"])
        return a
    if head == "compose":
        _need(head, pos, 2, 2, "compose solo|henka|renga|senka WHO [of=POEM#] [ku=N] [before] "
                               "[hand=ATTR] [advice=ATTR]")
        a = {"do": "compose", "mode": pos[0].lower(), "who": pos[1], "before": "before" in fl}
        if "of" in kv:
            a["of"] = _int(kv["of"].lstrip("#"), "of")
        if "ku" in kv:
            a["ku"] = _int(kv["ku"], "ku")
        for k in ("hand", "advice"):
            if k in kv:
                a[k] = kv[k]
        return a
    if head == "place":
        _need(head, pos, 1, 5, "place POEM.KU …")
        return {"do": "place", "ku": pos}
    if head == "score":
        _need(head, pos, 1, 1, "score POEM# gm=0-2 pl=N scene=N")
        return {"do": "score", "poem": _int(pos[0].lstrip("#"), "POEM#"),
                "gm": _int(kv.get("gm", "0"), "gm"), "players": _int(kv.get("pl", "0"), "pl"),
                "scene": _int(kv.get("scene", "0"), "scene")}
    raise ActionError(f"what is {shown(head)}? ('?' for help)")
