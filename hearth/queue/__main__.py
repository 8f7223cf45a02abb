"""`python -m hearth.queue`: the request's JSON Schemas, as queue-spec/ keeps them.

python -m hearth.queue --schema          request.schema.json on stdout
python -m hearth.queue --legacy-schema   legacy-request.schema.json on stdout
python -m hearth.queue --write DIR       both files into DIR (tests/hearth/queue/test_request.py
                                         fails when queue-spec/ drifts from the model)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hearth.queue.request import LegacyRequest, Request, schema_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hearth.queue", description="The queue's request schema.")
    parser.add_argument("--schema", action="store_true", help="print request.schema.json")
    parser.add_argument("--legacy-schema", action="store_true", help="print legacy-request.schema.json")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write both schema files into DIR")
    args = parser.parse_args(argv)
    if args.write:
        (args.write / "request.schema.json").write_text(schema_text(Request))
        (args.write / "legacy-request.schema.json").write_text(schema_text(LegacyRequest))
    elif args.legacy_schema:
        sys.stdout.write(schema_text(LegacyRequest))
    else:
        sys.stdout.write(schema_text(Request))
    return 0


if __name__ == "__main__":
    sys.exit(main())
