"""What the front ends share: ``keys`` (the terminal key reader, key names and bindings),
``window`` (pygame helpers), ``torifuda`` (the grabbed cards drawn by the app: 下の句 in
hiragana, vertical, green border), ``term`` (terminal output below the CLI)."""
