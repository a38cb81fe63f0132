"""``torchclaims lint``: what CI's lint and inventory would say of a knowledge base, before a push.

The review of records and scripts (:mod:`.lint`), the breaking-test inventory the test
suite enforces (:mod:`.breaking_tests`) and ruff on the claim scripts (:mod:`.formatting`),
so the quick path a contributor runs fails wherever a later CI step would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..claims import load_claims
from ..errors import Problem
from ..project import GALLERY, Folders
from .breaking_tests import inventory_problems
from .formatting import check_formatting
from .lint import cross_check

SCRIPTS = GALLERY  # the claim scripts: the part of nox -s lint's ruff paths that a claim adds to


@dataclass
class Review:
    problems: list[Problem]
    unchecked: str  # why the scripts' formatting could not be judged; "" when it was


def review(root: Path) -> Review:
    claims = load_claims(Folders(root).claims)
    problems = claims.problems + cross_check(root, claims) + inventory_problems(root, claims)
    formatting = check_formatting(root, [SCRIPTS] if (root / SCRIPTS).is_dir() else [])
    return Review(problems + formatting.problems, formatting.unchecked)
