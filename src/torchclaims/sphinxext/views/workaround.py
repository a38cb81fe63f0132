"""A claim's workaround on a page: what a team does where the claim does not hold, and who says it works.

The claim's page shows it under the claim, and each accelerator page in its
"known to differ" group (accelerators.py). A workaround a source states names
that source (with its quote when the source is the workaround's own); one
another claim measures shows that claim's newest verdict on each backend the
page is about, leading to its evidence, or says that no record shows it there:
a measured workaround is only as good as its record, and a missing record is
never read as "it works".
"""

from __future__ import annotations

from docutils import nodes

from ...claims import Claim, Source
from ...evidence.scope import and_words
from ...site_addresses import evidence_anchor
from ..build.links import claim_ref
from .evidence import run_line
from .grid import Grid
from .markup import badge, link, paragraph


def quoted(source: Source) -> list:
    """“quote” — publisher (date), marked when the quote is unconfirmed."""
    parts = [nodes.emphasis("", f"“{source.quote}”"), " — ", link(source.publisher, source.url), f" ({source.date})"]
    return parts + ([badge("unconfirmed", "unconfirmed")] if not source.confirmed else [])


def _stated(claim: Claim) -> nodes.paragraph:
    """Who states the workaround: its own source with the quote, or the claim's source it cites."""
    workaround = claim.workaround
    if workaround.source is not None:
        return paragraph("Stated by: ", *quoted(workaround.source))
    cited = next(s for s in claim.sources if s.url == workaround.cites)  # the model holds it among them
    return paragraph("Stated by: ", link(cited.publisher, cited.url), f" ({cited.date}), a source of this claim")


def _measured(grid: Grid, claim: Claim, backends: list[str]) -> list[nodes.Node]:
    """The measuring claim's newest verdict on each backend, or why nothing shows that the workaround works."""
    other_id = claim.workaround.measured_by
    other = grid.claims.claims.get(other_id)
    if other is None:
        return [paragraph("Measured by: ", nodes.literal("", other_id), ", a claim that did not load: nothing shows")]
    head = paragraph("Measured by: ", claim_ref(other.id, nodes.inline("", other.title)))
    newest = {backend: grid.newest(other, backend) for backend in backends}
    missing = [backend for backend, cell in newest.items() if cell is None]
    if missing:
        head += nodes.Text(f"; no record of it on {and_words(missing)} yet, so nothing shows that it works there")
    lines = [head]
    for cell in filter(None, newest.values()):
        where, space, verdict, *rest = run_line(grid, cell)
        anchor = evidence_anchor(other.id, cell.backend, cell.version)
        lines.append(paragraph(where, space, claim_ref(other.id, verdict, anchor=anchor), *rest))
    return lines


def workaround_block(grid: Grid, claim: Claim, backends: list[str]) -> list[nodes.Node]:
    """The workaround of ``claim`` with its attribution, measured on ``backends``; nothing when it has none."""
    if claim.workaround is None:
        return []
    out = nodes.container(classes=["tc-workaround"])
    out += paragraph(nodes.emphasis("", "Workaround: "), claim.workaround.what)
    if claim.workaround.measured_by is not None:
        out.extend(_measured(grid, claim, backends))
    else:
        out += _stated(claim)
    return [out]
