"""Who starts a waiting request: the spawner, the launchers, watch, the claimed run, settlement."""
