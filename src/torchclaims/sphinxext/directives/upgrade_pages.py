"""Upgrade sections: what each release changed, and what this build changed against the history.

For every series of sweep/releases.toml and every kind of build its committed
runs used (evidence.builds: a CPU-only and a CUDA wheel of one release are
never compared as an upgrade), each pair of neighbouring releases that both
have a committed run gets a section of the page that holds ``upgrade-index``
(``docs/upgrades``), with its own anchor
(``#upgrade-<series>-<build>-<old>-<new>``). No page is generated: Sphinx has no
documented way to add a document that has no source file (sphinx-doc/sphinx
issue 10641), and writing sources into the source tree would let data decide
what is written there. A section on a fixed page is in the page's table of
contents, the site's navigation and its search index like any other. What
goes into an anchor is :func:`myst_token`, which passes only validated names
and versions; titles and tables are docutils text, escaped by the writer. A
section holds the two runs it compares, the packages that differ, the
verdicts that moved, the measurements that moved beyond their tolerance and
whatever else upgrades.RECORD_COMPARERS finds. ``build-against-history``
compares this build with the committed run of its release (or the nearest
older one) of the same kind of build, and names the build when only another
kind has a committed run. The comparison itself is torchclaims.history.upgrades, the same as
``torchclaims diff``.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ...evidence.builds import NO_KNOWN_KIND, build_of, builds_named
from ...evidence.scope import ran_on
from ...evidence.store import THIS_BUILD
from ...history.releases import Series, version_key
from ...history.upgrades import Comparison, compare
from ...history.version_history import Run, Strand, baseline_for, consecutive, strand_of
from ..build.links import claim_ref
from ..build.state import get_state, warn
from ..build.tracking import ALL_CLAIMS, note_shown
from ..views.evidence import verdict_badge
from ..views.markup import bullets, paragraph, table
from ..views.versions import get_versions

TITLES = {"measurements": "Measurements that moved beyond their tolerance", "coverage": "Coverage rows that changed"}


TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*(\.[A-Za-z0-9_+-]+)*$")  # no '/', no '..', no markup


def myst_token(text: str) -> str:
    """``text`` as it may stand in an upgrade section's anchor: a series name,
    a package or a version (PEP 440, checked when its results file was
    admitted); ValueError for anything else."""
    if not (TOKEN.match(text) and len(text) <= 100):
        raise ValueError(f"{text!r} is not a name or version a generated page may carry")
    return text


def section_id(series: Series, strand: Strand, old: str, new: str) -> str:
    """The anchor of the section comparing ``old`` with ``new`` on one kind of build; ValueError for a
    name or version that is not a token."""
    parts = (series.name, strand.kind, old, new)
    return nodes.make_id("-".join(["upgrade", *(myst_token(part) for part in parts)]))


def comparison_nodes(comparison: Comparison) -> list[nodes.Node]:
    """The body of an upgrade page (and of the build's comparison): runs, packages, moves."""
    old, new = comparison.old, comparison.new
    out: list[nodes.Node] = [
        paragraph(nodes.strong("", "Before: "), old.describe()),
        paragraph(nodes.strong("", "After: "), new.describe()),
        paragraph(
            f"Both runs ran on {ran_on(new.environment)}: a verdict here is evidence about PyTorch on that device, "
            "not about the accelerators the claims name."
        ),
    ]
    packages = [[name, a, b] for name, (a, b) in comparison.packages.items()]
    out.append(nodes.rubric("", "Packages that differ"))
    out.append(
        table(["Package", "Before", "After"], packages, ["tc-upgrade-packages"])
        if packages
        else paragraph("No package versions differ.")
    )
    out.append(nodes.rubric("", "Verdicts that moved"))
    summary = f"{comparison.compared} claims compared; {len(comparison.verdicts)} changed verdict"
    regressions = len(comparison.regressions)
    out.append(
        paragraph(summary + (f", {regressions} of them held before and no longer hold." if regressions else "."))
    )
    rows = [
        [
            claim_ref(c.claim_id, nodes.literal("", c.claim_id)),
            verdict_badge(old.entry(c.claim_id)),
            verdict_badge(new.entry(c.claim_id)),
            c.new.reason[:200],
        ]
        for c in comparison.verdicts
    ]
    if rows:
        out.append(table(["Claim", "Before", "After", "Reason now"], rows, ["tc-upgrade-verdicts"]))
    for name, moved in comparison.moved.items():
        out.append(nodes.rubric("", TITLES.get(name, name)))
        if not moved:
            out.append(paragraph("None."))
            continue
        cells = [
            [claim_ref(m.claim_id, nodes.literal("", m.claim_id)), m.what, m.before, m.after, m.note] for m in moved
        ]
        out.append(table(["Claim", "What", "Before", "After", "Read with"], cells, [f"tc-upgrade-{name}"]))
    for label, ids in (("Only in the run before", comparison.only_old), ("Only in the run after", comparison.only_new)):
        if ids:
            out.append(paragraph(f"{label} (not compared): ", ", ".join(ids)))
    return out


class UpgradeIndexDirective(SphinxDirective):
    """``{upgrade-index}``: per series, a list of its upgrades, newest first, with
    their counts and the releases without a run, then a section for each upgrade."""

    def run(self) -> list[nodes.Node]:
        state, versions = get_state(self.env), get_versions(self.env)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        out: list[nodes.Node] = []
        for series in (s for s in versions.series() if s.default or versions.committed[s.name]):
            part = nodes.section(ids=[nodes.make_id(f"upgrades-{series.name}")])
            part += nodes.title("", f"{series.package} on {series.backend}")
            strands = versions.committed[series.name] or [Strand("", {})]  # none: every release is missing
            for strand in strands:
                part.extend(self.strand_nodes(series, strand, len(strands) > 1))
            out.append(part)
        return out

    def strand_nodes(self, series: Series, strand: Strand, named: bool) -> list[nodes.Node]:
        """One kind of build's upgrades: the list, the releases without a run, a section per upgrade;
        ``named``: other builds have runs too, so the list says which build it is about."""
        committed = strand.runs
        items, sections = [], []
        for old, new in reversed(consecutive(committed)):
            try:
                anchor = section_id(series, strand, old, new)
            except ValueError as exc:
                warn(f"no upgrade section for {series.name}: {exc}", "releases", location=self.get_location())
                continue
            comparison = compare(committed[old], committed[new])
            counts = (
                f": {len(comparison.verdicts)} verdicts moved, "
                f"{sum(len(m) for m in comparison.moved.values())} measurements or rows moved"
            )
            title = f"{series.package} {old} → {new}"
            items.append(paragraph(nodes.reference("", title, refid=anchor, internal=True), counts))
            section = nodes.section(ids=[anchor])
            section += nodes.title("", f"{title} on {series.backend}, {strand.builds_under(series.package)}")
            section.extend(comparison_nodes(comparison))
            sections.append(section)
        out: list[nodes.Node] = (
            [paragraph(nodes.strong("", f"{strand.builds_under(series.package)}:"))] if named else []
        )
        out.append(
            bullets(items) if items else paragraph("Fewer than two releases of this series have a committed run.")
        )
        missing = [v for v in series.versions if v not in committed]
        if missing:
            out.append(
                paragraph(
                    f"No committed run yet of {', '.join(missing)} (",
                    nodes.literal("", "nox -s sweep"),
                    " makes them).",
                )
            )
        return out + sections


class BuildAgainstHistoryDirective(SphinxDirective):
    """``{build-against-history}``: which claims moved in this build against the committed run of its release."""

    def run(self) -> list[nodes.Node]:
        state, versions = get_state(self.env), get_versions(self.env)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        build = next((run for run in versions.runs if run.origin == THIS_BUILD), None)
        if build is None:
            return [paragraph("This build ran no claim, so there is nothing to compare with the committed history.")]
        for series in versions.series():
            version = series.release_of(build.environment) if series.backend == build.environment.backend else None
            strands = versions.committed[series.name]
            # like with like: a committed run of this build's kind, else (named as such) of another kind
            strand = strand_of(strands, build.environment) or (strands[0] if strands else None)
            baseline = baseline_for(strand.runs, version) if version and strand else None
            if baseline is not None:
                return self.compared(build, baseline, series, version)
        return [
            paragraph(
                f"This build ({build.describe()}) stands for no release of sweep/releases.toml with the held versions, "
                "or no committed run exists for its backend: there is no committed history to compare it with."
            )
        ]

    def compared(self, build: Run, baseline: Run, series: Series, version: str) -> list[nodes.Node]:
        comparison = compare(baseline, build)
        moved = [c.claim_id for c in comparison.verdicts]
        base = series.release_of(baseline.environment)
        if base == version:
            against = "the committed run of the same release"
        elif version_key(base) < version_key(version):
            against = f"the committed run of the nearest earlier release, {series.package} {base}"
        else:
            against = (
                f"the committed run of the nearest later release, {series.package} {base} (no earlier release has one)"
            )
        ours, theirs = build_of(build.environment), build_of(baseline.environment)
        if ours is None or ours.kind != theirs.kind:
            mine = builds_named([ours]) if ours else f"torch {NO_KNOWN_KIND}"
            against += f", a {builds_named([theirs])} (this build is a {mine}: what moved may be the build's)"
        headline = f"This build ({series.package} {version}) against {against}: " + (
            f"{len(moved)} claim{'s' if len(moved) != 1 else ''} moved: {', '.join(moved)}."
            if moved
            else "no claim moved."
        )
        return [paragraph(nodes.strong("", headline)), *comparison_nodes(comparison)]


def setup_upgrade_pages(app: Sphinx) -> None:
    app.add_directive("upgrade-index", UpgradeIndexDirective)
    app.add_directive("build-against-history", BuildAgainstHistoryDirective)
