"""The table ``torchclaims show`` prints: claims x columns (backend, package, version) in blocks a terminal can hold."""

from __future__ import annotations

from ..evidence.builds import build_of
from ..history.releases import label_key, label_parts

SHOW_WIDTH = 120  # show's table fits a terminal this wide; more columns go on in another block below
CELL = 9  # a verdict word and a trust mark, and a space
SHORT = {"holds": "holds", "refuted": "refuted", "unverified": "unverif", "error": "error"}


def column_blocks(columns: list[str], per_block: int) -> list[list[str]]:
    """Columns in blocks of at most ``per_block``; a group (backend and package) starts a new
    block where it would not fit whole."""
    blocks: list[list[str]] = [[]]
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(label_parts(column)[0], []).append(column)
    for group in groups.values():
        if blocks[-1] and len(blocks[-1]) + len(group) > per_block:
            blocks.append([])
        for column in group:
            if len(blocks[-1]) == per_block:
                blocks.append([])
            blocks[-1].append(column)
    return blocks


def torch_builds(store) -> dict[str, str]:
    """column -> torch's local label as a header names it ('+cu130'; '' when torch reports none)."""
    out: dict[str, str] = {}
    for entries in store.entries.values():
        for entry in entries:
            build = build_of(entry.record.environment)
            out.setdefault(entry.column, f"+{build.label}" if build and build.label else "")
    return out


def matrix_lines(claims, store) -> list[str]:
    """The claims x columns table in blocks of at most SHOW_WIDTH characters, then where each
    column's records come from."""
    from ..evidence.provenance import Trust

    mark = {Trust.BY_HAND: "*", Trust.ATTESTED: "+"}
    columns = sorted(store.columns(), key=label_key)
    width = min(max([len(c) for c in claims.claims] + [5]), 40)
    per_block = max(2, (SHOW_WIDTH - width - 2) // CELL)  # two: a group label always has room
    rows = sorted(claims.claims.items())
    lines = []
    builds = torch_builds(store)
    for block in column_blocks(columns, per_block):
        groups, versions, labels = "", "", ""
        for i, column in enumerate(block):
            group, version, _ = label_parts(column)
            if i == 0 or label_parts(block[i - 1])[0] != group:
                following = next((j for j in range(i + 1, len(block)) if label_parts(block[j])[0] != group), None)
                room = (following - i) * CELL - 1 if following else SHOW_WIDTH
                groups = f"{groups:<{i * CELL}}" + (group if len(group) <= room else group[: room - 1] + "…")
            versions += f"{version.split('+')[0][: CELL - 1]:<{CELL}}"
            labels += f"{builds.get(column, '')[: CELL - 1]:<{CELL}}"
        lines += ["", f"{'claim':<{width}}  {groups}"[:SHOW_WIDTH], f"{'':<{width}}  " + versions.rstrip()]
        if labels.strip():  # the wheel: two builds of one release are two columns with one version
            lines.append(f"{'':<{width}}  " + labels.rstrip())
        for claim_id, claim in rows:
            latest = store.latest_by_column(claim_id)
            cells = ""
            for column in block:
                entry = latest.get(column) if claim.executable else None
                cell = (
                    "-"
                    if claim.executable and entry is None
                    else SHORT[entry.record.verdict.value] + mark.get(entry.source.trust, "")
                    if entry
                    else ""
                )
                cells += f"{cell:<{CELL}}"
            text = cells.rstrip() if claim.executable else "attributed: no verdict"
            lines.append(f"{claim_id[:width]:<{width}}  {text}")
    lines.append("")
    for column in columns:
        entries = [e for claim_id in claims.claims for e in [store.latest_by_column(claim_id).get(column)] if e]
        dates = sorted({e.record.date for e in entries})
        origins = sorted({e.origin for e in entries})
        more = f" and {len(origins) - 2} more" if len(origins) > 2 else ""
        span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}" if dates else "no records"
        lines.append(f"{column}: {len(entries)} records, {span}, from {', '.join(origins[:2])}{more}"[:SHOW_WIDTH])
    lines.append("-: not run; *: submitted by hand, not reproduced by the project; +: the project's workflow, attested")
    lines.append("every record in full, with its evidence: torchclaims show CLAIM-ID")
    return lines
