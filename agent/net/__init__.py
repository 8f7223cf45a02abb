"""Everything that leaves the box: the network guard and its special-purpose address tables, the guarded
HTTP client, its proxy, readable text."""
