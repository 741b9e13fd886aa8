"""``karuta poems`` and ``karuta kimariji``: the poem data and kimariji, as text or stable JSON."""
from __future__ import annotations

import json

import click


def _pad(kana: str, width: int = 7) -> str:
    """Left-align kana in a column (each kana is two terminal cells wide)."""
    return kana + "\u3000" * (width - len(kana))


def _numbers(value: str | None, what: str) -> list[int]:
    from reader.reading.selection import parse_selection

    if not value:
        return []
    return list(parse_selection(value))


@click.command("poems")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form (100 objects).")
@click.option("--poems", "spec", default=None, help="Only these poems (1-20, blue, むすめふさほせ, あさ).")
@click.option("--color", "colors", multiple=True, help="Only this goshiki colour's 20 poems.")
def poems(as_json: bool, spec: str | None, colors: tuple[str, ...]):
    """List the 100 poems: number, kimariji, colour, poet and the poem.

    \b
    JSON fields per poem: no, author, author_kana, kanji, kana, reading (5 ku each),
    kimariji (card form, historical kana: あふこ), kimariji_sound (one kana a mora: おおこ),
    color (blue, pink, yellow, green, orange), torifuda (the card's 下の句 as printed).
    """
    import poems as data
    from reader.reading.selection import parse_selection

    chosen = set(parse_selection(spec, colors))
    rows = [p for p in data.all_poems() if p.no in chosen]
    if as_json:
        out = [
            {
                "no": p.no, "author": p.author, "author_kana": p.author_kana,
                "kanji": list(p.kanji), "kana": list(p.kana), "reading": list(p.reading),
                "kimariji": p.kimariji, "kimariji_sound": p.kimariji_sound, "color": p.color,
                "torifuda": p.torifuda,
            }
            for p in rows
        ]
        click.echo(json.dumps(out, ensure_ascii=False, indent=1))
        return
    for p in rows:
        click.echo(f"{p.no:3d}  {_pad(p.kimariji)}{data.COLOR_JA[p.color]}  "
                   f"{' '.join(p.kanji[:3])}　{' '.join(p.kanji[3:])}　— {p.author}")


@click.command("kimariji")
@click.option("--read", "read_spec", default=None, metavar="N,N…",
              help="Poems already read (taken or karafuda), e.g. 21,61.")
@click.option("--among", "among_spec", default=None, metavar="N,N…",
              help="The universe: poems that can be read (default all 100); also colours, ranges.")
@click.option("--color", default=None, help="The universe is this goshiki colour's 20 poems.")
@click.option("--json", "as_json", is_flag=True, help="Stable JSON: {no: {kimariji, kimariji_sound}}.")
def kimariji_cmd(read_spec: str | None, among_spec: str | None, color: str | None, as_json: bool):
    """Kimariji of every unread poem after some poems were read.

    \b
    Examples:
      karuta kimariji --read 21           # いまは (63) becomes いま
      karuta kimariji --color blue --json  # counted among the blue 20
    """
    import poems as data
    from poems.kimariji import kimariji
    from reader.reading.selection import parse_selection

    universe = parse_selection(among_spec, [color] if color else [])
    read = _numbers(read_spec, "read")
    km = kimariji(universe, read)
    if as_json:
        click.echo(json.dumps({str(n): {"kimariji": k.card, "kimariji_sound": k.sound}
                               for n, k in sorted(km.items())}, ensure_ascii=False, indent=1))
        return
    static = {p.no: p.kimariji for p in data.all_poems()}
    for n, k in sorted(km.items(), key=lambda kv: kv[1].sound):
        note = "" if k.card == static[n] else f"  (was {static[n]})"
        click.echo(f"{n:3d}  {_pad(k.card)}{''.join(data.poem(n).kanji[:3])}{note}")
