"""``karuta match``: replay a match log, keep score of a real match.

Import-light on purpose: the rules, the log and the keeper are imported inside the commands.
"""
from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def match():
    """Score kyogi and goshiki matches (docs: reader/rules/README.md).

    \b
    Examples:
      karuta match keep --rules kyogi --seed 7 --log m.jsonl
      karuta match keep --log m.jsonl --resume
      karuta match replay m.jsonl --json
    """


@match.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def replay(file, as_json):
    """Replay a match log (JSON Lines) and print the result.

    A bad log is refused with one line naming the line number and the reason.
    """
    import json

    from reader import matchlog

    loaded = matchlog.load(file)
    if as_json:
        click.echo(json.dumps(matchlog.summary(loaded.match), ensure_ascii=False))
    else:
        click.echo(matchlog.report(loaded.match))


@match.command()
@click.option("--rules", type=click.Choice(["kyogi", "goshiki"]),
              help="Rules of the match (required unless --resume).")
@click.option("--seed", type=int, help="Draw the deal from this seed (printed for the players).")
@click.option("--deal", "deal_file", type=click.Path(dir_okay=False, exists=True),
              help='The real deal: a JSON object {"A": [...], "B": [...]} (or a match log).')
@click.option("--color", type=click.Choice(["blue", "pink", "yellow", "green", "orange"]),
              help="Goshiki colour for a seeded deal (default: drawn from the seed).")
@click.option("--players", type=click.IntRange(2, 3), default=2, show_default=True,
              help="Goshiki: two or three players.")
@click.option("--reads", type=click.IntRange(1, 20), default=17, show_default=True,
              help="Goshiki: reads in a match.")
@click.option("--finals", is_flag=True, help="Goshiki finals: a tie reads one more card.")
@click.option("--log", "log_file", type=click.Path(dir_okay=False),
              help="Match log to write (default: match-<rules>-<time>.jsonl here).")
@click.option("--resume", is_flag=True, help="Continue the match in --log after a crash or quit.")
@click.option("--last", type=click.IntRange(0, 100), default=5, show_default=True,
              help="How many recent reads the screen shows.")
@click.option("--read", "read_aloud", is_flag=True,
              help="The app reads the poems aloud too: each entered result reads on "
                   "(previous 下の句, 間, next 上の句).")
@click.option("--voice", "voice_spec", default=None, metavar="NAME|PATH", help="With --read: the voice.")
@click.option("--device", default=None, help="With --read: the sound device.")
def keep(rules, seed, deal_file, color, players, reads, finals, log_file, resume, last,
         read_aloud, voice_spec, device):
    """Keep score of a real match from the keyboard, saving the log after every read.

    Enter each read as one line: the poem number, then who took it and any faults
    ('?' on the screen lists the keys).  'u' undoes the last read, 'q' quits; the log is
    always saved, so quitting or a crash loses nothing: continue with --resume.
    """
    from reader import keeper

    announcer = None
    if read_aloud:
        import secrets

        from reader.announcer import ReadingAnnouncer
        from reader.cli_read import make_voice
        from reader.session import open_output

        voice = make_voice(voice_spec)
        output = open_output("sounddevice", device, voice.sample_rate)
        announcer = ReadingAnnouncer(voice, output, seed if seed is not None else secrets.randbelow(10**6))
    try:
        keeper.run(rules=rules, seed=seed, deal_file=deal_file, color=color, players=players,
                   reads=reads, finals=finals, log_file=log_file, resume=resume, last=last,
                   announcer=announcer)
    finally:
        if announcer is not None:
            announcer.close()
            from reader.cli_underruns import say_underruns

            say_underruns(output)
