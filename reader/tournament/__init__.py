"""``karuta tournament``: a goshiki (五色百人一首) competition day on one laptop (issue 14).

Modules (who calls what: ``reader.cli.tournament`` -> ``store.Tournament`` -> the pure parts):

  players   the players' CSV (UTF-8 / Shift_JIS) and blocks balanced automatically
  pairing   one preliminary round inside one block (minimum-cost matching; pure)
  scoring   table results (the goshiki rules' ``outcome_of``) and their checks, standings,
            lots, semi-finals and finals
  day       the day's settings: stages of the rounds, colours (pure)
  rows      the typed rows the store hands out (Player, Table, Round, Lot, Undone, Status)
  store     the SQLite file (WAL, one transaction per change, a context manager): storage only
  files     the results CSV, a round paired by hand, the export (JSON, CSV)
  pages     print-ready HTML (pairing lists, score sheets) and the projector page
  reading   ``karuta tournament read``: the round's goshiki reading through the club reader
  desk      ``karuta tournament desk``: one line per score sheet as the sheets come in
"""
