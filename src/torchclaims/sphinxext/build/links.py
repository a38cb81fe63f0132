"""Links to claims and to their evidence, resolved once every page is read.

The anchors are the site's addresses (torchclaims.site_addresses). Which page
shows a claim is known only after reading, so links are resolved by a
post-transform: docutils ``claim_link`` nodes, and markers inside the raw HTML
of the matrix and the gallery cards.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from ...site_addresses import claim_anchor, matrix_anchor
from ..views.safe_html import LINK_MARK, Html
from .state import get_state, warn

_MARKER = re.compile(f"{LINK_MARK}label:([a-z0-9-]+)(#[A-Za-z0-9_.-]*)?{LINK_MARK}")


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


def href_marker(claim_id: str, anchor: str = "") -> Html:
    """Stands for the URL of a claim's page (plus ``#anchor``) in raw HTML until resolved."""
    # \ue000 is LINK_MARK, in the literal markup: escaping drops it from every value
    return Html("\ue000label:{}{}\ue000").format(claim_anchor(claim_id), "#" + anchor if anchor else "")


def raw_html(markup: str) -> nodes.raw:
    """Raw HTML holding href markers; ResolveClaimLinks fills them in."""
    node = nodes.raw("", markup, format="html")  # no classes: Sphinx would wrap it in a <div>
    node["tc_links"] = True
    return node


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
        for node in list(self.document.findall(nodes.raw)):
            if node.get("tc_links"):
                text = _MARKER.sub(lambda m, node=node: self._uri(m[1], (m[2] or "#")[1:], node) or "#", node.astext())
                node.replace_self(nodes.raw("", text, format="html"))

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
