"""Claims across releases: the version strip of a claim, and the matrix's range columns.

The data side (which runs stand for which release, the sentence a strip says)
is torchclaims.history.version_history; this module only reads it and draws it. A
claim section's line for a backend holds a ``version_strip`` placeholder
(claim.py adds it); a post-transform replaces it with a line per strand (one
kind of build: evidence.builds) of each of that backend's series that has runs
and whose package the claim's script uses: the build named, a badge per
release, oldest first, and the inferred sentence. The matrix asks
:func:`range_views` for each backend's ranges: its version picker offers them
beside the single versions (``?v.cpu=range:torch:cuda`` in the URL), and each cell
holds a hidden slice with the strip and the sentence, HTML elements
(elements.py) loaded with the matrix's other versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform

from ...errors import InvalidFileError
from ...evidence.freshness import stale_reason
from ...history.releases import CONSTRAINTS_FILE, RELEASES_FILE, Releases, Series, load_releases
from ...history.version_history import Run, Step, Strand, range_sentence, runs, series_runs, strip
from ...run.cache import InputScanner
from ..build.state import BuildState, get_state, warn
from ..build.tracking import shown
from .elements import element, html_element, joined
from .evidence import SYMBOLS
from .markup import badge, paragraph

NOT_RUN_SYMBOL = "∅"


@dataclass
class VersionsState:
    """The release list and the runs that stand for its releases, for this build."""

    releases: Releases | None
    runs: list[Run]
    shown: dict[str, list[Strand]] = field(default_factory=dict)  # series -> its strands (this build first)
    committed: dict[str, list[Strand]] = field(default_factory=dict)  # series -> strands of committed results files
    imports: dict[str, frozenset[str]] = field(default_factory=dict)  # claim id -> what its script imports
    digest: str = ""  # of the release list and held versions: a change re-reads every claim page

    def series(self) -> list[Series]:
        return list(self.releases.series.values()) if self.releases else []

    def concerned(self, series: Series, claim_id: str) -> bool:
        """Whether the claim's script uses the series' package (torch always; transformers only when imported)."""
        return series.concerns(self.imports.get(claim_id, frozenset()))

    def shown_series(self) -> list[Series]:
        """Series a page draws: a default one with any run, another once a committed file stands for one of its releases
        (this build alone stands for a release of the transformers series too, but nobody swept it)."""
        return [s for s in self.series() if self.committed[s.name] or (s.default and self.shown[s.name])]


def get_versions(env: BuildEnvironment) -> VersionsState:
    return get_state(env).versions


def prepare_versions(app: Sphinx) -> None:
    """builder-inited, after the build state: read the release list, group the store's runs."""
    root = Path(app.confdir)
    releases = None
    try:
        releases = (
            load_releases(root) if (root / RELEASES_FILE).exists() else None
        )  # a site without a sweep has no strips
    except InvalidFileError as exc:
        for problem in exc.problems:
            warn(f"release list ignored: {problem}", "releases", location=str(problem.path))
    build_state = get_state(app.env)
    all_runs = runs(build_state.store)
    scanner = InputScanner(root)
    imports = {  # only scripts the build could read (state.readable_scripts): the others name no package
        claim_id: scanner.uses_of(root / build_state.claims.claims[claim_id].script, harness=False)
        for claim_id in build_state.script_sha
        if claim_id in build_state.claims.claims
    }
    state = VersionsState(releases, all_runs, imports=imports)
    for series in state.series():
        state.shown[series.name] = series_runs(all_runs, series)
        state.committed[series.name] = series_runs([run for run in all_runs if run.committed], series)
    digest = hashlib.sha256()
    for name in (RELEASES_FILE, CONSTRAINTS_FILE):
        path = root / name
        digest.update(path.read_bytes() if path.is_file() else b"")
    state.digest = digest.hexdigest()
    get_state(app.env).versions = state


def outdated_by_releases(app: Sphinx, env, added, changed, removed) -> list[str]:
    """A new release list or new held versions change every strip: re-read the pages that show claims."""
    state = get_versions(app.env)
    if getattr(env, "torchclaims_releases_digest", None) == state.digest:
        return []
    env.torchclaims_releases_digest = state.digest
    return [docname for docname in shown(env) if docname not in changed and docname not in removed]


def steps_for(state: BuildState, series: Series, strand: Strand, claim_id: str) -> list[Step]:
    sha = state.script_sha.get(claim_id)
    return strip(
        series,
        strand.runs,
        claim_id,
        lambda record: bool(stale_reason(record, sha, state.max_age_days)),
    )


def step_badge(step: Step) -> nodes.inline:
    symbol = SYMBOLS[step.record.verdict] if step.record else NOT_RUN_SYMBOL
    words = step.kind if step.record else "not run"
    text = f"{step.version} {symbol}" + (" stale" if step.stale else "")
    out = badge(text, step.kind)
    out["classes"].append("tc-step")
    out += nodes.inline("", f" {words}", classes=["tc-sr"])  # the verdict in words for screen readers and text browsers
    return out


def strip_line(steps: list[Step]) -> nodes.inline:
    line = nodes.inline(classes=["tc-strip"])
    for i, step in enumerate(steps):
        line += nodes.Text(" " if i else "")
        line += step_badge(step)
    return line


class version_strip(nodes.General, nodes.Element):  # noqa: N801 (docutils node naming)
    """Where a claim section shows its strips; filled in once every run is known."""


def strip_placeholder(claim_id: str, backend: str, said: str = "") -> version_strip:
    """``said``: the reason the line shows already, which the sentence leaves out."""
    return version_strip("", claim_id=claim_id, backend=backend, said=said)


class RenderVersionStrips(SphinxPostTransform):
    default_priority = 10

    def run(self, **kwargs) -> None:
        state, versions = get_state(self.env), get_versions(self.env)
        for node in list(self.document.findall(version_strip)):
            lines = []
            for series in versions.shown_series():
                if series.backend != node["backend"] or not versions.concerned(series, node["claim_id"]):
                    continue
                for strand in versions.shown[series.name]:
                    steps = steps_for(state, series, strand, node["claim_id"])
                    sentence = range_sentence(series, steps, said=node["said"])
                    lines.append(
                        paragraph(
                            nodes.strong("", f"{series.package}, {strand.builds_under(series.package)}: "),
                            strip_line(steps),
                            nodes.inline("", " " + sentence, classes=["tc-range-sentence"]),
                        )
                    )
            node.replace_self(lines or [paragraph(f"no release sweep ran on {node['backend']}")])


@dataclass(frozen=True)
class RangeView:
    """A series' whole range on one kind of build, offered by the matrix beside the single versions of its backend."""

    series: Series
    strand: Strand
    label: str  # "torch 2.9.0–2.15.0, CUDA builds (+cu128, +cu130) (range)"
    state: BuildState
    versions: VersionsState

    @property
    def value(self) -> str:
        """The version picker's value (and the URL's): 'range:torch:cuda'."""
        return f"range:{self.series.name}:{self.strand.kind}"

    def run_element(self, claim_id: str) -> html_element:
        """The matrix cell's slice for this range: the strip and its sentence, hidden until picked."""
        if not self.versions.concerned(self.series, claim_id):
            return element(
                "span",
                element("span", f"its script does not use {self.series.package}", class_="tc-range-sentence"),
                class_="tc-run tc-range",
                data_version=self.value,
                data_verdict="notrun",
                hidden=True,
            )
        steps = steps_for(self.state, self.series, self.strand, claim_id)
        badges = [
            element(
                "span",
                f"{s.version} {SYMBOLS[s.record.verdict] if s.record else NOT_RUN_SYMBOL}{' stale' if s.stale else ''}",
                element("span", f" {s.kind if s.record else 'not run'}", class_="tc-sr"),
                class_=f"tc-badge tc-{s.kind} tc-step",
            )
            for s in steps
        ]
        newest = [s for s in steps if s.record]
        return element(
            "span",
            element("span", *joined(" ", badges), class_="tc-strip"),
            element("span", range_sentence(self.series, steps), class_="tc-range-sentence"),
            class_="tc-run tc-range",
            data_version=self.value,
            data_verdict=newest[-1].kind if newest else "notrun",
            hidden=True,
        )


def range_views(env: BuildEnvironment) -> dict[str, list[RangeView]]:
    """backend -> one range per series with runs there (the matrix's hook)."""
    state, versions = get_state(env), get_versions(env)
    out: dict[str, list[RangeView]] = {}
    for series in versions.shown_series():
        for strand in versions.shown[series.name]:
            chosen = list(strand.runs)
            span = chosen[0] if len(chosen) == 1 else f"{chosen[0]}–{chosen[-1]}"
            out.setdefault(series.backend, []).append(
                RangeView(
                    series,
                    strand,
                    f"{series.package} {span}, {strand.builds_under(series.package)} (range)",
                    state,
                    versions,
                )
            )
    return out


def setup_versions(app: Sphinx) -> None:
    app.connect("builder-inited", prepare_versions, priority=450)  # after the build state (400)
    app.connect("env-get-outdated", outdated_by_releases)
    app.add_node(version_strip)
    app.add_post_transform(RenderVersionStrips)
