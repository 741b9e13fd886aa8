"""What a player knows of each poem: the FSRS deck (``deck``), below the drills that train it and
the practice matches that teach it too."""
