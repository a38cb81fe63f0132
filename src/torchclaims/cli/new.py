"""``torchclaims new``: scaffold a claim record and its verification script."""

from __future__ import annotations

from . import ExitCode
from .common import project_root


def register(add) -> None:
    new = add("new", "scaffold a claim record and its verification script")
    new.add_argument("claim_id")
    new.add_argument("--topic", default="device-switch")
    new.set_defaults(run=run)


def run(args) -> ExitCode:
    from ..authoring.scaffold import scaffold

    for path in scaffold(project_root(args), args.claim_id, topic=args.topic):
        print(f"created {path}")
    print(f"next: edit both files, then run `torchclaims verify {args.claim_id}` and `torchclaims lint`")
    return ExitCode.OK
