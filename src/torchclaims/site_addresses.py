"""Where things are on the published site: a claim, its evidence, a coverage row, and the site itself.

The Sphinx extension gives pages these anchors and ``torchclaims check`` links to
them, from this one module, so a report's links land where the site put the
evidence. A claim's section is ``#claim-<id>``; the evidence of one backend is
``#claim-<id>--<backend>`` and one version's run inside it
``#claim-<id>--<backend>--<version>`` (claim ids never hold ``--``, so these never
collide). They depend only on the claim, the backend and the version, so links
to them stay valid across builds.

A link starts with the site's address (:func:`site_address`): ``--site-url``,
else ``$TORCHCLAIMS_SITE_URL``, else the project's own (``site-url`` under
``[tool.torchclaims]`` in its pyproject.toml), else the site built in the
project (a ``file://`` address of its published folder); where none is, with
nothing: a path from the site's root, never a guessed address.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from .claims import Claim
from .errors import UsageError
from .project import PUBLISH_DIR

SITE_URL_VAR = "TORCHCLAIMS_SITE_URL"  # the published site's address, set where the site is published
PROJECT_FILE = "pyproject.toml"
SITE_URL_SETTING = "site-url"  # the project's own published address, under [tool.torchclaims] in PROJECT_FILE
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


@dataclass(frozen=True)
class SiteAddress:
    base: str  # what links start with, ending in '/'; '': paths from the site's root
    source: str  # where it came from, in words, for the report

    def describe(self) -> str:
        return f"{self.base} ({self.source})" if self.base else f"paths from the site's root ({self.source})"


NO_ADDRESS = (
    f"no address: give --site-url, set ${SITE_URL_VAR} or {SITE_URL_SETTING} in {PROJECT_FILE}, or build the site"
)


def site_address(given: str | None = None, environ=os.environ, root: Path | None = None) -> SiteAddress:
    """Where links point, the first that is set: ``given`` (--site-url; '' asks for paths from the site's root),
    $TORCHCLAIMS_SITE_URL, the project's ``site-url`` setting, the site built in the project at ``root``."""
    if given is not None:
        return SiteAddress(_ending(given), "--site-url" if given.strip() else "an empty --site-url asks for them")
    if environ.get(SITE_URL_VAR, "").strip():
        return SiteAddress(_ending(environ[SITE_URL_VAR]), f"${SITE_URL_VAR}")
    if root is None:
        return SiteAddress("", NO_ADDRESS)
    configured = project_site_url(Path(root) / PROJECT_FILE)
    if configured:
        return SiteAddress(_ending(configured), f"{SITE_URL_SETTING} in {PROJECT_FILE}")
    built = Path(root).resolve() / PUBLISH_DIR
    if (built / "index.html").is_file():
        return SiteAddress(_ending(built.as_uri()), f"the site built in {PUBLISH_DIR}")
    return SiteAddress("", NO_ADDRESS)


def project_site_url(path: Path) -> str:
    """``[tool.torchclaims] site-url`` of a pyproject.toml: an http(s) address, or '' where none is set."""
    if not path.is_file():
        return ""
    field = f"{path}: [tool.torchclaims] {SITE_URL_SETTING}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not readable TOML ({exc}), so its {SITE_URL_SETTING} cannot be read") from None
    tool = data.get("tool", {})
    section = tool.get("torchclaims", {}) if isinstance(tool, dict) else {}
    url = section.get(SITE_URL_SETTING, "") if isinstance(section, dict) else ""
    if not isinstance(url, str):
        raise UsageError(f"{field} must be text (an https:// address), not {type(url).__name__}")
    parts = urlsplit(url.strip())
    if url.strip() and (parts.scheme not in ("http", "https") or not parts.netloc):
        raise UsageError(f"{field} must be an http(s) address of the published site, not {url[:200]!r}")
    return url.strip()


def _ending(url: str) -> str:
    url = url.strip()
    return url if not url or url.endswith("/") else url + "/"


@dataclass(frozen=True)
class Links:
    """Addresses on the site at ``base`` (see :func:`site_address`)."""

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
