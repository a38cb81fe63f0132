"""Replace one group's rows of benchmarks/measured.json, which docs pages render ({measured} GROUP).

The benchmarks that time or check something themselves write their rows here,
so the pages show what a run measured and nobody types a figure. The file
keeps one row a line, so a diff shows which figures moved.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

MEASURED = Path(__file__).resolve().parent / "measured.json"


def row(group: str, what: str, figure: str, how: str) -> dict[str, str]:
    return {"group": group, "what": what, "figure": figure, "date": date.today().isoformat(), "how": how}


def replace_group(group: str, rows: list[dict[str, str]]) -> None:
    """The group's rows become ``rows``, where the group's first row was (at the end for a new group)."""
    path = MEASURED
    data = json.loads(path.read_text(encoding="utf-8"))
    figures = data["figures"]
    at = next((i for i, f in enumerate(figures) if f["group"] == group), len(figures))
    kept = [f for f in figures if f["group"] != group]
    at -= sum(1 for f in figures[:at] if f["group"] == group)
    figures = kept[:at] + rows + kept[at:]
    lines = ",\n".join("  " + json.dumps(f, ensure_ascii=False) for f in figures)
    about = json.dumps(data["about"], ensure_ascii=False)
    path.write_text(f'{{\n "about": {about},\n "figures": [\n{lines}\n ]\n}}\n', encoding="utf-8")
