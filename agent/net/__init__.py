"""Everything that leaves the box: the network guard, the guarded HTTP client, its proxy, readable text."""
