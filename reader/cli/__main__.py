"""``python -m reader.cli`` runs the ``karuta`` command."""
from reader.cli import main

main()
