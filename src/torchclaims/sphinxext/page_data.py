"""Data a page loads when it needs it, shipped once, as a script.

What a page would be too heavy to carry (a coverage table's cells) goes in a
file of its own under ``_static``: a script that files its payload under its
name in ``window.tcPageData``. The page loads it on demand with
``tcLoadData(name, src)`` (static/torchclaims.js). A script rather than fetched
JSON because browsers refuse fetch() on a page opened from a file, and a script
loads there too. Each data set exists once: a download of the same data links
to where the data already is, never to a second copy.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..records import write_if_changed

GLOBAL = "tcPageData"  # torchclaims.js reads the same name


def data_script(name: str, payload) -> str:
    """The script that files ``payload`` under ``name``; JSON inside, ASCII only."""
    data = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
    return f"(window.{GLOBAL} = window.{GLOBAL} || {{}})[{json.dumps(name)}] = {data};\n"


def write_data_script(path: Path, name: str, payload) -> None:
    """Rewritten only when changed: the published copy is updated by what changed (torchclaims.site)."""
    write_if_changed(path, data_script(name, payload))
