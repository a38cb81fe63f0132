"""``torchclaims schema``: the JSON Schema of claim records, for editors."""

from __future__ import annotations

import json
from pathlib import Path

from ..claims import claim_json_schema
from . import ExitCode


def register(add) -> None:
    schema = add("schema", "print the JSON Schema of claim records")
    schema.add_argument("--output")
    schema.set_defaults(run=run)


def run(args) -> ExitCode:
    text = json.dumps(claim_json_schema(), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return ExitCode.OK
