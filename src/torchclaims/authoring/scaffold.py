"""``torchclaims new``: a claim record and a verification script that already run.

The script reports ``unverified`` until its checks are written, so a new claim
can never show ``holds`` by accident.
"""

from __future__ import annotations

import re
from datetime import date
from importlib import resources
from pathlib import Path

from ..claims import CLAIM_ID
from ..errors import UsageError
from ..project import IN_GALLERY, Folders
from ..topics import TOPICS


def scaffold(root: Path, claim_id: str, topic: str = "device-switch") -> list[Path]:
    if not re.fullmatch(CLAIM_ID, claim_id):
        raise UsageError(
            f"claim id {claim_id!r} is malformed: use lowercase words joined by '-', e.g. 'compile-matches-eager'"
        )
    if topic not in TOPICS:
        raise UsageError(f"unknown topic {topic!r}; choose one of {', '.join(TOPICS)}")
    script = f"{IN_GALLERY}{claim_id.replace('-', '_')}.py"
    record_path, script_path = Folders(root).claims / f"{claim_id}.toml", root / script
    for path in (record_path, script_path):
        if path.exists():
            raise UsageError(f"{path.relative_to(root)} already exists; pick another id or edit the existing claim")
    values = {"claim_id": claim_id, "topic": topic, "script": script, "year": str(date.today().year)}
    templates = resources.files("torchclaims.authoring") / "templates"
    for path, template in ((record_path, "claim.toml.tmpl"), (script_path, "script.py.tmpl")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(templates.joinpath(template).read_text().format(**values))
    return [record_path, script_path]
