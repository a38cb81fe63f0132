"""Where things are on the published site: a claim, its evidence, a coverage row, and the site itself.

The Sphinx extension gives pages these anchors and ``torchclaims check`` links to
them, from this one module, so a report's links land where the site put the
evidence. A claim's section is ``#claim-<id>``; the evidence of one backend is
``#claim-<id>--<backend>`` and one version's run inside it
``#claim-<id>--<backend>--<version>`` (claim ids never hold ``--``, so these never
collide). They depend only on the claim, the backend and the version, so links
to them stay valid across builds.

A link starts with the site's address (``https://.../``: ``--site-url``, else
``$TORCHCLAIMS_SITE_URL``), or, where nobody set one, with nothing: a path from
the site's root, never a guessed address.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote

from .claims import Claim

SITE_URL_VAR = "TORCHCLAIMS_SITE_URL"  # the published site's address, set where the site is published
COVERAGE_PAGES = {"operators": "docs/coverage/operators", "architectures": "docs/coverage/architectures"}
CHECK_PAGE = "docs/check"  # what `torchclaims check` reports and how to read it
ROW_PREFIX = "row-"  # the anchor of a coverage row; torchclaims-sweep.js reads the same prefix
RUN_PREFIX = "run-"  # a row's anchor in one run of its table: run-<run>/row-<name>; the JS reads it too


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def claim_anchor(claim_id: str) -> str:
    return f"claim-{claim_id}"


def evidence_anchor(claim_id: str, backend: str, version: str = "") -> str:
    anchor = f"claim-{claim_id}--{slug(backend)}"
    return f"{anchor}--{slug(version)}" if version else anchor


def matrix_anchor(claim_id: str) -> str:
    return f"matrix-{claim_id}"


def row_anchor(name: str) -> str:
    """``row-<name>``, percent-encoded: a row name from a stranger's file is a safe fragment."""
    return ROW_PREFIX + quote(name, safe="._-~")


def run_row_anchor(run: str, name: str) -> str:
    """``run-<run>/row-<name>``: the row opened in that run; a run's name is a slug, so its first ``/`` ends it."""
    return f"{RUN_PREFIX}{slug(run)}/{row_anchor(name)}"


def site_base(given: str | None = None, environ=os.environ) -> str:
    """What links start with: ``given`` (--site-url), else $TORCHCLAIMS_SITE_URL, ending in '/';
    '' (paths from the site's root) where neither is set."""
    url = (environ.get(SITE_URL_VAR, "") if given is None else given).strip()
    return url if not url or url.endswith("/") else url + "/"


@dataclass(frozen=True)
class Links:
    """Addresses on the site at ``base`` (see :func:`site_base`)."""

    base: str = ""

    def page(self, docname: str) -> str:
        return f"{self.base}{docname}.html"

    def claim(self, claim: Claim) -> str:
        return f"{self.page(f'docs/topics/{claim.topic}')}#{claim_anchor(claim.id)}"

    def evidence(self, claim: Claim, backend: str, version: str) -> str:
        return f"{self.page(f'docs/topics/{claim.topic}')}#{evidence_anchor(claim.id, backend, version)}"

    def row(self, table: str, row: str) -> str:
        """The coverage page with its table opened at one row (torchclaims-sweep.js reads ?row=)."""
        return f"{self.page(COVERAGE_PAGES[table])}?row={quote(row, safe='')}"
