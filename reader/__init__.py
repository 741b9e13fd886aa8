"""karuta's reading engine, match rules, sessions and command line (everything that is not sound)."""
