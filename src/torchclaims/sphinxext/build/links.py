"""Links to claims and to their evidence, resolved once every page is read.

The anchors are the site's addresses (torchclaims.site_addresses). Which page
shows a claim is known only after reading, so links are resolved by a
post-transform: docutils ``claim_link`` nodes, and the ``href`` of the HTML
elements of the matrix (views/elements.py), a ``ClaimHref`` until then.
"""

from __future__ import annotations

from dataclasses import dataclass

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from ...site_addresses import claim_anchor, matrix_anchor
from ..views.elements import html_attributes, html_element
from .state import get_state, warn


class claim_link(nodes.Inline, nodes.Element):  # noqa: N801 (docutils node naming)
    """A link to a claim's section or matrix row (or an anchor on that page).

    Sphinx's own ``ref`` resolution would flatten the children to text, losing
    the verdict badges a link may carry.
    """


def claim_ref(claim_id: str, child: nodes.Node, anchor: str = "", title: str = "") -> claim_link:
    """A link to the claim's section, or to ``anchor`` on the page showing it."""
    return claim_link("", child, label=claim_anchor(claim_id), anchor=anchor, reftitle=title)


def matrix_ref(claim_id: str, child: nodes.Node) -> claim_link:
    return claim_link("", child, label=matrix_anchor(claim_id), anchor="")


@dataclass(frozen=True)
class ClaimHref:
    """An element's ``href`` to the page showing a claim (at ``anchor``, else its section), until resolved."""

    label: str
    anchor: str = ""

    def __str__(self) -> str:  # as a doctree prints it before resolution
        return f"claim-href:{self.label}#{self.anchor}"


def claim_href(claim_id: str, anchor: str = "") -> ClaimHref:
    return ClaimHref(claim_anchor(claim_id), anchor)


class ResolveClaimLinks(SphinxPostTransform):
    default_priority = 5  # before Sphinx resolves its own references

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(claim_link)):
            uri = self._uri(node["label"], node.get("anchor", ""), node)
            if uri is None:
                node.replace_self(node.children)
                continue
            reference = nodes.reference("", "", *node.children, refuri=uri, internal=True)
            if node.get("reftitle"):
                reference["reftitle"] = node["reftitle"]
            node.replace_self(reference)
        for node in self.document.findall(html_element):
            for name, value in html_attributes(node).items():
                if isinstance(value, ClaimHref):
                    node[name] = self._uri(value.label, value.anchor, node) or "#"  # in place: the order stays

    def _uri(self, label: str, anchor: str, node: nodes.Node) -> str | None:
        target = self.env.get_domain("std").labels.get(label)
        if target is None:
            what = "claim" if label.startswith("claim-") else "matrix row of claim"
            warn(
                f"{what} {label.partition('-')[2]!r} is not shown on any page, so it cannot be linked",
                "link",
                location=node,
            )
            return None
        docname = target[0]
        return get_state(self.env).relative_uri(self.env.docname, docname) + "#" + (anchor or target[1])


def register_label(env, label: str, title: str) -> None:
    """Make ``{ref}`<label>``` (and every link above) resolve to ``#<label>`` on the page being read."""
    domain = env.get_domain("std")
    domain.labels[label] = (env.docname, label, title)
    domain.anonlabels[label] = (env.docname, label)


def setup_links(app) -> None:
    app.add_node(claim_link)
    app.add_post_transform(ResolveClaimLinks)
