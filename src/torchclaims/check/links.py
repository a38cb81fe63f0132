"""Addresses on the site of the evidence a report cites.

``base`` is the site's address (``https://.../``), or a relative path to its
root; the anchors are those the site gives (``torchclaims.sphinxext.links``,
which a test holds these to): a claim's evidence on one backend and version,
and a coverage page with its table searched for one row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from ..claims import Claim

COVERAGE_PAGES = {"operators": "docs/coverage/operators.html", "architectures": "docs/coverage/architectures.html"}


def site_base(url: str) -> str:
    """A site's address as links start with it: ending in '/' ('' stays: paths from the site's root)."""
    return url if not url or url.endswith("/") else url + "/"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def evidence_anchor(claim_id: str, backend: str, version: str) -> str:
    return f"claim-{claim_id}--{slug(backend)}--{slug(version)}"


@dataclass(frozen=True)
class Links:
    base: str = ""

    def claim(self, claim: Claim) -> str:
        return f"{self.base}docs/topics/{claim.topic}.html#claim-{claim.id}"

    def evidence(self, claim: Claim, backend: str, version: str) -> str:
        return f"{self.base}docs/topics/{claim.topic}.html#{evidence_anchor(claim.id, backend, version)}"

    def row(self, table: str, row: str) -> str:
        return f"{self.base}{COVERAGE_PAGES[table]}?row={quote(row, safe='')}"
