"""Long work made of plain runs: follow-ups, marathons, swarms."""
