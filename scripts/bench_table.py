"""How `karuta table` keeps up with a long session: action + save, and loading a save.

The store keeps every state for undo and rewrites the save (and the GM's log) after every
action; loading replays every action.  This measures both for sessions of N actions of each
system (wall time; the machine is shared, so figures are noisy), then the peak memory of a
second, identical run (tracemalloc, Python allocations only).

    python scripts/bench_table.py [--actions 1000]
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
import tracemalloc
from pathlib import Path

from reader.table import ActionError
from reader.table.store import Table, load


def cards_actions(rng: random.Random, t: Table) -> dict:
    who = rng.choice(["a", "b", "c"])
    hand = t.state["hands"].get(who, [])
    op = rng.random()
    if op < 0.2:
        return {"do": "judge", "who": who, "level": 2, "ability": 10, "cards": hand[:2]}
    if op < 0.35:   # from the sheet, with a modifier and 《限界突破》 when the hand is short
        return {"do": "judge", "who": who, "skill": "思考", "level": None, "ability": None,
                "cards": hand[:2], "mod": 2, "limit": len(hand) < 2}
    if op < 0.4:    # an NPC outside combat: draws 5 when its hand is empty
        oni = t.state["hands"].get("oni", [])
        return {"do": "judge", "who": "oni", "level": 1, "ability": 6, "cards": oni[:1]}
    if op < 0.7:
        return {"do": "draw", "who": who, "n": 2}
    if op < 0.9:
        return {"do": "open", "n": 3}
    return {"do": "reshuffle"}


def genkan_actions(rng: random.Random, t: Table) -> dict:
    st = t.state
    if st["compose"]:
        d = st["compose"]["drawn"]
        return {"do": "place", "ku": [f"{n}.{k}" for n, k in zip(d, (1, 2, 3, 4, 5))]}
    who = rng.choice(["a", "b", "c"])
    op = rng.random()
    if op < 0.6:
        return {"do": "act", "who": who, "attr": rng.choice(["男", "女", "官僧"]), "dice": 5,
                "special": 1, "difficulty": 2, "cards": st["players"][who]["hand"][:1]}
    if op < 0.95:
        return {"do": "scene"}
    return {"do": "compose", "mode": "solo", "who": who}


def session(system: str, n: int, folder: Path) -> tuple[float, float, float, float, int]:
    t = Table(system, {}, seed=1)
    for name in ("a", "b", "c"):
        t.push({"do": "player", "name": name, **({"kagaku": 4} if system == "genkan" else {})})
        if system == "cards":
            t.push({"do": "sheet", "who": name, "abilities": {"理力": 12}, "skills": {"思考": [2, "理力"]}})
    if system == "cards":
        t.push({"do": "npc", "name": "oni"})
    save = folder / f"{system}.json"
    rng = random.Random(2)
    gen = genkan_actions if system == "genkan" else cards_actions
    slowest = 0.0
    start = time.perf_counter()
    cpu0 = time.process_time()
    done = 0
    while done < n:
        a = gen(rng, t)
        t0 = time.perf_counter()
        try:
            t.push(a)
        except ActionError:
            continue
        t.save(save)
        slowest = max(slowest, time.perf_counter() - t0)
        done += 1
    per = (time.perf_counter() - start) / n
    cpu = (time.process_time() - cpu0) / n
    t0 = time.perf_counter()
    loaded = load(save, system)
    load_s = time.perf_counter() - t0
    assert loaded.state == t.state
    return per, cpu, slowest, load_s, save.stat().st_size


def _mem_run(system: str, n: int, folder: Path) -> None:
    sub = folder / "mem"
    sub.mkdir(exist_ok=True)
    session(system, n, sub)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--actions", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for system in ("cards", "genkan"):
            per, cpu, slowest, load_s, size = session(system, args.actions, Path(d))
            tracemalloc.start()  # a second run for memory: tracemalloc slows everything down
            _mem_run(system, args.actions, Path(d))
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"{system}: {args.actions} actions, each saved: mean {per * 1000:.1f} ms an action "
                  f"(CPU {cpu * 1000:.1f} ms; the rest is waiting: fsync of the save and log, a busy machine; slowest "
                  f"{slowest * 1000:.0f} ms; target <= 100 ms); save {size / 1024:.0f} KiB; "
                  f"load (replay all) {load_s * 1000:.0f} ms (target <= 2000 ms); "
                  f"peak Python memory {peak / 2**20:.1f} MiB (target <= 200 MiB)")


if __name__ == "__main__":
    main()
