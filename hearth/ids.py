"""The one pattern every id hearth names a run or a request by must match (queue-spec/README.md)."""

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
