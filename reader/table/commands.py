"""One typed line -> one table action (for the prompt and ``karuta table … do``).

Pure: no I/O.  ``parse(system, line)`` returns an action dict for ``Table.push``, or a
``Command`` (undo, help, show, recite, quit) that the prompt handles itself.  A line it cannot
understand is one ``ActionError`` naming the word.
"""
from __future__ import annotations

from dataclasses import dataclass

from reader.table import ActionError

__all__ = ["parse", "Command", "HELP"]

HELP = {
    "cards": """\
player NAME [MODE]          a PC joins and draws 5 (MODE: 表出モード suit ♠ ♥ ♦ ♣ or s h d c)
npc NAME [MODE]             an NPC (no hand outside combat)
draw WHO [N]                ドローN (default 1)            open N     オープンN (to the discards)
peek N                      look at the top N (they stay)  reshuffle  discards back, shuffle
discard WHO CARD… | all     from a hand to the discards
npchand NPC                 an NPC draws 5 for a judgement outside combat;  partend: NPCs discard
combat N [per=K]            the GM draws N×5 (K per enemy);  combatend: the GM discards
judge WHO SKILL LEVEL ABILITY [CARD…] [t=TARGET] [limit] [vs=N]
    CARD: ♣J, cj, 10h, 3 (a 3 from the hand), JK=♠A (a joker named); limit = 《限界突破》;
    vs=N: this judgement is the passive side against judgement N
    e.g.  judge tenjo 思考 2 12 3 5 t=20      judge pc 近接 2 5 cj limit
u undo   show   log   ? help   q quit (everything is saved after each action)""",
    "genkan": """\
player NAME KAGAKU          a player joins (歌学 specialities = hand limit) and is dealt 3
kagaku WHO N   refill WHO   scene (turn up 3 歌枕札)   key N (the GM puts key card N up)
act WHO ATTR DICE DIFF [CARD…] [sp=N]       行為判定: ATTR 男|女|官僧, DICE = 能力値＋文化値,
                                            DIFF 1-3, CARDs from the hand (at most sp = 特技)
contest A,B,C ATTR DICE [min=N] [sp=N] [teams=A:x,B:x,C:y] [join]     対決判定
turn DIFF [CARD…] | turn pass               the next participant;  contest stop (time limit);
                                            contest join NAME [team=T] (if the GM allows: join)
talk WHO TARGET ATTR DICE [DIFF] [CARD…] [sp=N]   歌語り: TARGET pc|知人|同時代|過去|未来;  talkend
compose solo|henka|renga|senka WHO [of=POEM#] [ku=N] [before] [hand=ATTR] [advice=ATTR]
                            歌詠み: draws the cards; hand=/advice=: the 文化値 of a 《歌学》 success
                            that lets hand cards (own / another player's) be used
place 12.1 45.2 …           the ku in the new poem's order (POEM.KU; ku 1,3 = 5 sounds; 2,4,5 = 7)
score POEM# gm=0-2 pl=N scene=N             敬慕点
poems   recite [POEM#] [out=FILE.wav]
u undo   show   log   ? help   q quit (everything is saved after each action)""",
}


@dataclass(frozen=True)
class Command:
    name: str  # "undo" | "help" | "show" | "log" | "quit" | "recite" | "poems"
    args: dict


_SIMPLE = {"u": "undo", "undo": "undo", "?": "help", "h": "help", "help": "help", "show": "show",
           "s": "show", "log": "log", "q": "quit", "quit": "quit", "exit": "quit", "poems": "poems"}


def _int(word: str, what: str) -> int:
    try:
        return int(word)
    except (TypeError, ValueError):
        raise ActionError(f"{what} must be a whole number, not {word!r}") from None


def _split_kv(words: list[str]) -> tuple[list[str], dict[str, str], set[str]]:
    pos, kv, flags = [], {}, set()
    for w in words:
        if "=" in w and not w.upper().startswith(("JK=", "JOKER=")):
            k, v = w.split("=", 1)
            kv[k.lower()] = v
        else:
            pos.append(w)
    return pos, kv, flags


def _need(pos: list[str], n: int, usage: str) -> None:
    if len(pos) < n:
        raise ActionError(f"usage: {usage}")


def parse(system: str, line: str):
    words = line.strip().split()
    if not words:
        return None
    head = words[0].lower()
    if head in _SIMPLE and len(words) == 1:
        return Command(_SIMPLE[head], {})
    if head == "recite" and system == "genkan":
        pos, kv, _ = _split_kv(words[1:])
        return Command("recite", {"poem": _int(pos[0], "the poem number") if pos else None,
                                  "out": kv.get("out")})
    if system == "cards":
        return _parse_cards(head, words[1:])
    return _parse_genkan(head, words[1:])


def _parse_cards(head: str, rest: list[str]) -> dict:
    pos, kv, _ = _split_kv(rest)
    if head == "player" or head == "npc":
        _need(pos, 1, f"{head} NAME [MODE]")
        return {"do": head, "name": pos[0], "mode": pos[1] if len(pos) > 1 else None}
    if head == "draw":
        _need(pos, 1, "draw WHO [N]")
        return {"do": "draw", "who": pos[0], "n": _int(pos[1], "N") if len(pos) > 1 else 1}
    if head in ("open", "peek"):
        return {"do": head, "n": _int(pos[0], "N") if pos else 1}
    if head in ("reshuffle", "partend", "combatend"):
        return {"do": head}
    if head == "discard":
        _need(pos, 2, "discard WHO CARD… | all")
        if pos[1].lower() == "all":
            return {"do": "discard", "who": pos[0], "all": True}
        return {"do": "discard", "who": pos[0], "cards": pos[1:]}
    if head == "npchand":
        _need(pos, 1, "npchand NPC")
        return {"do": "npchand", "who": pos[0]}
    if head == "combat":
        _need(pos, 1, "combat N [per=K]")
        a = {"do": "combat", "enemies": _int(pos[0], "the number of enemies")}
        if "per" in kv:
            a["per"] = _int(kv["per"], "per")
        return a
    if head in ("judge", "j"):
        _need(pos, 4, "judge WHO SKILL LEVEL ABILITY [CARD…] [t=TARGET] [limit] [vs=N]")
        limit = any(w.lower() in ("limit", "限界突破") for w in pos[4:])
        cards = [w for w in pos[4:] if w.lower() not in ("limit", "限界突破")]
        a = {"do": "judge", "who": pos[0], "skill": pos[1], "level": _int(pos[2], "LEVEL"),
             "ability": _int(pos[3], "ABILITY"), "cards": cards, "limit": limit}
        if "t" in kv:
            a["target"] = _int(kv["t"], "the target")
        if "vs" in kv:
            a["vs"] = _int(kv["vs"], "vs")
        return a
    raise ActionError(f"what is {head!r}? ('?' for help)")


def _cards(words: list[str]) -> list[int]:
    return [_int(w, "a card (poem number)") for w in words]


def _parse_genkan(head: str, rest: list[str]) -> dict:
    pos, kv, _ = _split_kv(rest)
    sp = _int(kv["sp"], "sp") if "sp" in kv else None

    def special(cards):
        if cards and sp is None:
            raise ActionError("hand cards need the 特技 value: add sp=N")
        return sp or 0

    if head == "player":
        _need(pos, 2, "player NAME KAGAKU")
        return {"do": "player", "name": pos[0], "kagaku": _int(pos[1], "KAGAKU")}
    if head == "kagaku":
        _need(pos, 2, "kagaku WHO N")
        return {"do": "kagaku", "who": pos[0], "kagaku": _int(pos[1], "N")}
    if head == "refill":
        _need(pos, 1, "refill WHO")
        return {"do": "refill", "who": pos[0]}
    if head in ("scene", "talkend"):
        return {"do": head}
    if head == "key":
        _need(pos, 1, "key N")
        return {"do": "key", "no": _int(pos[0], "the key card")}
    if head == "act":
        _need(pos, 4, "act WHO ATTR DICE DIFF [CARD…] [sp=N]")
        cards = _cards(pos[4:])
        return {"do": "act", "who": pos[0], "attr": pos[1], "dice": _int(pos[2], "DICE"),
                "difficulty": _int(pos[3], "DIFF"), "cards": cards, "special": special(cards)}
    if head == "contest":
        if pos and pos[0].lower() == "stop":
            return {"do": "conteststop"}
        if pos and pos[0].lower() == "join":
            _need(pos, 2, "contest join NAME [team=T]")
            return {"do": "contestjoin", "name": pos[1], "team": kv.get("team")}
        _need(pos, 3, "contest A,B,C ATTR DICE [min=N] [sp=N] [teams=A:x,B:y] [join]")
        teams = {}
        for part in filter(None, kv.get("teams", "").split(",")):
            if ":" not in part:
                raise ActionError(f"teams: {part!r} should be NAME:TEAM")
            n, t = part.split(":", 1)
            teams[n] = t
        return {"do": "contest", "names": [n for n in pos[0].split(",") if n], "attr": pos[1],
                "dice": _int(pos[2], "DICE"), "min": _int(kv.get("min", "1"), "min"),
                "special": sp or 0, "teams": teams, "joinable": "join" in (w.lower() for w in pos[3:])}
    if head == "turn":
        if pos and pos[0].lower() == "pass":
            return {"do": "turn", "pass": True}
        _need(pos, 1, "turn DIFF [CARD…] | turn pass")
        cards = _cards(pos[1:])
        a = {"do": "turn", "difficulty": _int(pos[0], "DIFF"), "cards": cards}
        return a
    if head == "talk":
        _need(pos, 4, "talk WHO TARGET ATTR DICE [DIFF] [CARD…] [sp=N]")
        a = {"do": "talk", "who": pos[0], "target": pos[1], "attr": pos[2],
             "dice": _int(pos[3], "DICE")}
        if len(pos) > 4:
            a["difficulty"] = _int(pos[4], "DIFF")
        a["cards"] = _cards(pos[5:])
        a["special"] = special(a["cards"])
        return a
    if head == "compose":
        _need(pos, 2, "compose solo|henka|renga|senka WHO [of=POEM#] [ku=N] [before]")
        a = {"do": "compose", "mode": pos[0].lower(), "who": pos[1],
             "before": any(w.lower() == "before" for w in pos[2:])}
        if "of" in kv:
            a["of"] = _int(kv["of"].lstrip("#"), "of")
        if "ku" in kv:
            a["ku"] = _int(kv["ku"], "ku")
        for k in ("hand", "advice"):
            if k in kv:
                a[k] = kv[k]
        return a
    if head == "place":
        _need(pos, 1, "place POEM.KU …")
        return {"do": "place", "ku": pos}
    if head == "score":
        _need(pos, 1, "score POEM# gm=0-2 pl=N scene=N")
        return {"do": "score", "poem": _int(pos[0].lstrip("#"), "POEM#"),
                "gm": _int(kv.get("gm", "0"), "gm"), "players": _int(kv.get("pl", "0"), "pl"),
                "scene": _int(kv.get("scene", "0"), "scene")}
    raise ActionError(f"what is {head!r}? ('?' for help)")
