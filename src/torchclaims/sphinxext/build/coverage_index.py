"""The rows of the coverage tables (operators, architectures) in the site search.

A coverage table's rows live in its data files, not in the page's text, so
Sphinx's full-text index never sees ``fft.fft`` or ``pixel_shuffle``. This
domain lists every row name a page's table holds as an object of the search
index (``Domain.get_objects``, Sphinx's documented way to put names there):
searching a name lists it first, as "operator, in <page title>", and the result
links to ``<page>#row-<name>``, which the table opens (static/torchclaims-sweep.js).
The rows add nothing to the page itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sphinx.domains import Domain

from ...site_addresses import row_anchor


class CoverageDomain(Domain):
    """docname -> (item, row names) of the coverage table on that page."""

    name = "tc-coverage"
    label = "Coverage tables"
    initial_data: dict = {"rows": {}}

    def note_rows(self, docname: str, item: str, names: Iterable[str]) -> None:
        self.data["rows"][docname] = (item, sorted(set(names)))

    def has_table(self, docname: str) -> bool:
        return docname in self.data["rows"]

    def clear_doc(self, docname: str) -> None:
        self.data["rows"].pop(docname, None)

    def merge_domaindata(self, docnames: set[str], otherdata: dict) -> None:
        for docname in docnames:
            if docname in otherdata["rows"]:
                self.data["rows"][docname] = otherdata["rows"][docname]

    def resolve_any_xref(self, env, fromdocname, builder, target, node, contnode) -> list:
        return []  # rows are found by the search, never cross-referenced

    def get_objects(self) -> Iterator[tuple[str, str, str, str, str, int]]:
        for docname, (item, names) in self.data["rows"].items():
            for name in names:
                yield name, name, item, docname, row_anchor(name), 1  # 1: listed before full-text matches


def setup_coverage_index(app) -> None:
    app.add_domain(CoverageDomain)
