"""No published page weighs more than the limit on a page's HTML (torchclaims.limits).

The published site is the real one, as ``nox -s docs`` leaves it in _build/html
(TORCHCLAIMS_SITE names another folder); without it the test is skipped, except
under CI, where it fails. What a page would be too heavy to carry is loaded on
demand from a file beside it (sphinxext/build/page_data.py); a page that grows past
the limit fails here, naming the page and its size.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from torchclaims import limits
from torchclaims.sphinxext.build.site import heavy_pages

ROOT = Path(__file__).resolve().parents[1]


def test_no_published_page_is_over_the_html_limit():
    site = Path(os.environ.get("TORCHCLAIMS_SITE") or ROOT / "_build" / "html")
    if not (site / "index.html").is_file():
        reason = f"no built site in {site}: run `nox -s docs` first"
        pytest.fail(reason + "; CI must run this test") if os.environ.get("CI") else pytest.skip(reason)
    heavy = heavy_pages(site)
    assert heavy == [], f"pages over {limits.LIMITS.page_html_bytes:,} bytes of HTML: " + ", ".join(
        f"{p} ({n:,})" for p, n in heavy
    )


def test_a_page_over_the_limit_is_named_with_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "LIMITS", dataclasses.replace(limits.LIMITS, page_html_bytes=1000))
    (tmp_path / "docs").mkdir()
    (tmp_path / "index.html").write_bytes(b"x" * 1000)  # at the limit: allowed
    (tmp_path / "docs" / "heavy.html").write_bytes(b"x" * 1001)
    (tmp_path / "docs" / "heavier.html").write_bytes(b"x" * 2000)
    (tmp_path / "data.js").write_bytes(b"x" * 5000)  # data beside the pages is not a page
    assert heavy_pages(tmp_path) == [("docs/heavier.html", 2000), ("docs/heavy.html", 1001)]
