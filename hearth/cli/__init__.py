"""The edges: the two console scripts, their commands, completion, the man page, a run printed."""
