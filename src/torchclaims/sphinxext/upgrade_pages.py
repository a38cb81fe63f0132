"""Upgrade pages: what each release changed, and what this build changed against the history.

For every series of sweep/releases.toml, each pair of neighbouring releases
that both have a committed run gets a page (written into
``docs/upgrades/<series>-<old>-<new>.md`` when the build starts, removed when
the pair goes away) with the ``upgrade`` directive. Sphinx reads pages only
from its source folder, so the pages live in a folder git ignores; what goes
into their names and Markdown is :func:`myst_token`, the one way in, which
passes only validated names and versions and refuses anything else. A page
holds the two runs it compares, the packages that differ, the verdicts that moved, the measurements that moved
beyond their tolerance and whatever else upgrades.RECORD_COMPARERS finds.
``upgrade-index`` lists the pages; ``build-against-history`` compares this
build with the committed run of its release (or the nearest older one).
The comparison itself is torchclaims.upgrades, the same as ``torchclaims diff``.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from ..fileio import confined, leaves
from ..records import write_if_changed
from ..releases import Series, version_key
from ..scope import ran_on
from ..store import THIS_BUILD
from ..upgrades import Comparison, compare
from ..version_history import Run, baseline_for, consecutive
from .evidence import verdict_badge
from .links import claim_ref
from .markup import bullets, doc_link, paragraph, table
from .state import get_state, warn
from .tracking import ALL_CLAIMS, note_shown
from .versions import get_versions

TITLES = {"measurements": "Measurements that moved beyond their tolerance", "coverage": "Coverage rows that changed"}


TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*(\.[A-Za-z0-9_+-]+)*$")  # no '/', no '..', no markup


def myst_token(text: str) -> str:
    """``text`` as it may stand in a generated page's name and Markdown: a series
    name, a package or a version (PEP 440, checked when its results file was
    admitted); ValueError for anything else."""
    if not (TOKEN.match(text) and len(text) <= 100):
        raise ValueError(f"{text!r} is not a name or version a generated page may carry")
    return text


def page_name(series: Series, old: str, new: str) -> str:
    return "-".join(myst_token(part) for part in (series.name, old, new))


def write_upgrade_pages(app: Sphinx) -> None:
    """builder-inited, after the runs are grouped: one page per neighbouring pair of committed files."""
    versions = get_versions(app)
    folder = Path(app.srcdir, app.config.torchclaims_upgrades_dir)
    if versions.releases is None and not folder.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    outside = leaves(folder, Path(app.srcdir))
    if outside:
        warn(f"no upgrade pages written: {app.config.torchclaims_upgrades_dir} {outside}", "releases")
        return
    wanted = set()
    for series in versions.series():
        for old, new in consecutive(versions.committed[series.name]):
            try:
                name = page_name(series, old, new)
                title = f"{myst_token(series.package)} {old} → {new} on {myst_token(series.backend)}"
            except ValueError as exc:
                warn(f"no upgrade page for {series.name}: {exc}", "releases")
                continue
            wanted.add(f"{name}.md")
            write_if_changed(confined(folder, f"{name}.md"), f"# {title}\n\n```{{upgrade}} {series.name} {old} {new}\n```\n")
    for page in folder.glob("*.md"):
        if page.name not in wanted:
            page.unlink()
            # Sphinx keeps the output of a removed page; a pair that went away must not stay published.
            outfile = getattr(app.builder, "get_outfilename", None)
            if outfile is not None:
                Path(outfile(f"{app.config.torchclaims_upgrades_dir}/{page.stem}")).unlink(missing_ok=True)


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
    out.append(table(["Package", "Before", "After"], packages, ["tc-upgrade-packages"]) if packages else paragraph("No package versions differ."))
    out.append(nodes.rubric("", "Verdicts that moved"))
    summary = f"{comparison.compared} claims compared; {len(comparison.verdicts)} changed verdict"
    regressions = len(comparison.regressions)
    out.append(paragraph(summary + (f", {regressions} of them held before and no longer hold." if regressions else ".")))
    rows = [
        [claim_ref(c.claim_id, nodes.literal("", c.claim_id)), verdict_badge(old.entry(c.claim_id)), verdict_badge(new.entry(c.claim_id)), c.new.reason[:200]]
        for c in comparison.verdicts
    ]
    if rows:
        out.append(table(["Claim", "Before", "After", "Reason now"], rows, ["tc-upgrade-verdicts"]))
    for name, moved in comparison.moved.items():
        out.append(nodes.rubric("", TITLES.get(name, name)))
        if not moved:
            out.append(paragraph("None."))
            continue
        cells = [[claim_ref(m.claim_id, nodes.literal("", m.claim_id)), m.what, m.before, m.after, m.note] for m in moved]
        out.append(table(["Claim", "What", "Before", "After", "Read with"], cells, [f"tc-upgrade-{name}"]))
    for label, ids in (("Only in the run before", comparison.only_old), ("Only in the run after", comparison.only_new)):
        if ids:
            out.append(paragraph(f"{label} (not compared): ", ", ".join(ids)))
    return out


class UpgradeDirective(SphinxDirective):
    """``{upgrade} <series> <old> <new>``: what moving from one release to the next changed."""

    required_arguments = 3

    def run(self) -> list[nodes.Node]:
        state, versions = get_state(self.env.app), get_versions(self.env.app)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        name, old, new = self.arguments
        committed = versions.committed.get(name, {})
        if old not in committed or new not in committed:
            warn(f"upgrade: no committed runs of {name} {old} and {new}", "directive", location=self.get_location())
            return [paragraph(f"There is no committed run of both {old} and {new} in the {name} series.")]
        return comparison_nodes(compare(committed[old], committed[new]))


class UpgradeIndexDirective(SphinxDirective):
    """``{upgrade-index}``: every upgrade page, newest first, with its counts, and the releases without a run;
    it also puts the pages in the navigation, in that order."""

    def run(self) -> list[nodes.Node]:
        state, versions = get_state(self.env.app), get_versions(self.env.app)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        out: list[nodes.Node] = []
        folder = self.env.app.config.torchclaims_upgrades_dir
        pages = []
        for series in (s for s in versions.series() if s.default or versions.committed[s.name]):
            committed = versions.committed[series.name]
            out.append(nodes.rubric("", f"{series.package} on {series.backend}"))
            items = []
            for old, new in reversed(consecutive(committed)):
                try:
                    pages.append(f"{folder}/{page_name(series, old, new)}")
                except ValueError:
                    continue  # no page was written for it (write_upgrade_pages says why)
                comparison = compare(committed[old], committed[new])
                counts = f": {len(comparison.verdicts)} verdicts moved, {sum(len(m) for m in comparison.moved.values())} measurements or rows moved"
                items.append(paragraph(doc_link(f"{series.package} {old} → {new}", pages[-1]), counts))
            out.append(bullets(items) if items else paragraph("Fewer than two releases of this series have a committed run."))
            missing = [v for v in series.versions if v not in committed]
            if missing:
                out.append(paragraph(f"No committed run yet of {', '.join(missing)} (", nodes.literal("", "nox -s sweep"), " makes them)."))
        return [*out, hidden_toctree(self.env.docname, pages)]


def hidden_toctree(parent: str, docnames: list[str]) -> nodes.compound:
    """The upgrade pages in the navigation, newest first (a glob would sort 2.10 before 2.9)."""
    toctree = addnodes.toctree(
        parent=parent, entries=[(None, name) for name in docnames], includefiles=list(docnames), maxdepth=1,
        caption=None, glob=False, hidden=True, includehidden=False, numbered=0, titlesonly=False,
    )
    wrapper = nodes.compound(classes=["toctree-wrapper"])
    wrapper += toctree
    return wrapper


class BuildAgainstHistoryDirective(SphinxDirective):
    """``{build-against-history}``: which claims moved in this build against the committed run of its release."""

    def run(self) -> list[nodes.Node]:
        state, versions = get_state(self.env.app), get_versions(self.env.app)
        ids = list(state.claims.claims)
        note_shown(self.env, ids, state.digest(ids), key=ALL_CLAIMS)
        build = next((run for run in versions.runs if run.origin == THIS_BUILD), None)
        if build is None:
            return [paragraph("This build ran no claim, so there is nothing to compare with the committed history.")]
        for series in versions.series():
            version = series.release_of(build.environment) if series.backend == build.environment.backend else None
            baseline = baseline_for(versions.committed[series.name], version) if version else None
            if baseline is not None:
                return self.compared(build, baseline, series, version)
        return [paragraph(
            f"This build ({build.describe()}) stands for no release of sweep/releases.toml with the held versions, "
            "or no committed run exists for its backend: there is no committed history to compare it with."
        )]

    def compared(self, build: Run, baseline: Run, series: Series, version: str) -> list[nodes.Node]:
        comparison = compare(baseline, build)
        moved = [c.claim_id for c in comparison.verdicts]
        base = series.release_of(baseline.environment)
        if base == version:
            against = "the committed run of the same release"
        elif version_key(base) < version_key(version):
            against = f"the committed run of the nearest earlier release, {series.package} {base}"
        else:
            against = f"the committed run of the nearest later release, {series.package} {base} (no earlier release has one)"
        headline = (
            f"This build ({series.package} {version}) against {against}: "
            + (f"{len(moved)} claim{'s' if len(moved) != 1 else ''} moved: {', '.join(moved)}." if moved else "no claim moved.")
        )
        return [paragraph(nodes.strong("", headline)), *comparison_nodes(comparison)]


def setup_upgrade_pages(app: Sphinx) -> None:
    app.add_config_value("torchclaims_upgrades_dir", "docs/upgrades", "env", str)
    app.connect("builder-inited", write_upgrade_pages, priority=460)  # after the runs are grouped (450)
    app.add_directive("upgrade", UpgradeDirective)
    app.add_directive("upgrade-index", UpgradeIndexDirective)
    app.add_directive("build-against-history", BuildAgainstHistoryDirective)
