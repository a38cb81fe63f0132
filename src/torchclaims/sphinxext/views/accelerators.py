"""The ``accelerator`` directive: what is known about moving PyTorch code to one backend, on one screen.

A page per backend (``docs/accelerators/<backend>.md`` holds only the
directive) opens with a tally computed from the records
(torchclaims.sphinxext.views.backend_summary): the claims about the backend, those that are
only their claimants' word, those checked on the backend's own hardware (when,
with which versions, from which source) and those checked only on a stand-in
(XLA on the CPU counts as one, never as the hardware) and what the stand-ins
showed, and a line leading to ``torchclaims check`` for a reader's own model.
Then the claims grouped by what a team must do (torchclaims.sphinxext.reading):
each with its runs (a chip leading to the evidence, and the layer of the stack
it exercised), which of them speak for the accelerator and why, the workaround
of a claim known to differ (torchclaims.sphinxext.views.workaround), and the command
that would decide it on the hardware; and the command a hardware owner runs to
fill the column. ``accelerator-choice`` lists the pages with their tallies, after
the same line to ``torchclaims check`` (the home page); ``accelerator-groups``
and ``accelerator-layers`` list the groups and the layers in words (the page that explains them). Every number here is
counted from the records at build time.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from docutils import nodes
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective

from ...backends import all_backends
from ...evidence.records import Verdict
from ...evidence.scope import and_words, reader_name
from ...project import Folders
from ...site_addresses import evidence_anchor
from ...vendor_word import VendorWord, load_vendor_words
from ..build.links import claim_ref
from ..build.state import get_state, warn
from ..build.tracking import ALL_CLAIMS, note_shown
from .backend_summary import ON_HARDWARE, ON_STAND_IN, Group, Summary, summarize
from .evidence import SYMBOLS, UNCONFINED
from .grid import Cell, Grid
from .markup import badge, bullets, doc_link, paragraph
from .reading import Action, Layer, Reading, action_title, decided_by, read
from .vendor_word import vendor_section
from .workaround import workaround_block

REFERENCE = "cpu"  # the reference every other backend is compared with: it gets no page of its own
WORDS = {"holds": "held", "refuted": "refuted", "unverified": "unverified", "error": "error"}


def accelerator_backends() -> list[str]:
    """The backends that get a page: every descriptor but the CPU reference."""
    return [name for name in all_backends() if name != REFERENCE]


def page_docname(env: BuildEnvironment, backend: str) -> str | None:
    """The accelerator page of a backend, when the site has one."""
    docname = f"{env.config.torchclaims_accelerator_pages}/{backend}"
    return docname if docname in env.found_docs else None


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def _counts(verdicts: Counter) -> str:
    """'✔ 20 held, ✘ 2 refuted, ? 9 unverified' (verdicts absent from the counter are left out)."""
    parts = [f"{SYMBOLS[v]} {verdicts[v.value]} {WORDS[v.value]}" for v in SYMBOLS if verdicts[v.value]]
    return ", ".join(parts)


def chip(cell: Cell) -> nodes.Node:
    """'cpu ✔ holds · torch 2.13.0' ('XLA on the CPU ✘ refuted · …' for a stand-in run), its source and scope,
    leading to that run's evidence."""
    record = cell.entry.record
    out = nodes.inline(classes=["tc-chip", cell.entry.source.css_class])
    core = nodes.inline(classes=["tc-chip-core"])  # the verdict with its version and date: never broken across lines
    core += badge(f"{cell.where} {SYMBOLS[record.verdict]} {record.verdict.value}", record.verdict.value)
    core += nodes.inline("", f" {cell.version}, {record.date}", classes=["tc-date"])
    out += core
    out += badge(cell.entry.source.mark, "source")
    if record.unconfined:
        out += badge(UNCONFINED, "unconfined")
    if cell.stale:
        out += badge("stale", "stale")
    if not cell.target:
        out += nodes.inline("", " outside its scope", classes=["tc-scope"])
    return claim_ref(cell.claim.id, out, anchor=evidence_anchor(cell.claim.id, cell.backend, cell.version))


def what_differed(cell: Cell) -> str:
    """The record's own words on why it did not hold: its first refuted check's detail, else its reason."""
    record = cell.entry.record
    failed = next((c for c in record.checks if c.outcome is Verdict.REFUTED and c.detail), None)
    return f"{failed.name}: {failed.detail}" if failed else record.reason


def reading_line(reading: Reading, grid: Grid) -> nodes.container:
    """One claim read for the accelerator: its runs with the layer each exercised, which of them speak and why,
    what differed and the workaround, and what would decide it on the hardware."""
    claim, backend = reading.standing.claim, reading.backend
    out = nodes.container(classes=["tc-standing", "tc-reading"])
    out += paragraph(claim_ref(claim.id, nodes.strong("", claim.title)))
    if reading.action is Action.WORD_ONLY:
        source = claim.sources[0]
        out += paragraph(badge(f"❝ {and_words(claim.claimed_by)}'s word, {source.date}", "attributed"))
        return out
    runs = [
        nodes.list_item("", paragraph(chip(cell), nodes.inline("", f" {layer.value}", classes=["tc-layer"])))
        for cell, layer in reading.layers()
    ]
    if runs:
        out += nodes.bullet_list("", *runs, classes=["tc-runs"])
    out += paragraph(nodes.emphasis("", "Reading: "), f"{reading.why}.")
    differed = [what_differed(c) for c in reading.speakers if c.kind == Verdict.REFUTED.value]
    if differed and differed[0]:
        out += paragraph(nodes.emphasis("", "What differed: "), differed[0])
    if reading.action is Action.DIFFERS:
        out.extend(workaround_block(grid, claim, [backend]))
    if not reading.on_hardware:
        hardware, command = decided_by(backend, claim.id)
        out += paragraph(nodes.emphasis("", "Decided by: "), f"a run on {hardware}: ", nodes.literal("", command))
    return out


def tally(summary: Summary, name: str) -> nodes.bullet_list:
    """The head of the page: every figure counted from the records."""
    about = len(summary.standings)
    executable = about - summary.count(Group.ATTRIBUTED)
    items = [paragraph(nodes.strong("", str(about)), f" {'claim is' if about == 1 else 'claims are'} about {name}.")]
    attributed = summary.count(Group.ATTRIBUTED)
    if attributed:
        who = ", ".join(f"{k} in {n}" for k, n in summary.attributed_by.most_common())
        items.append(
            paragraph(
                nodes.strong("", str(attributed)),
                f" {'is' if attributed == 1 else 'are'} only their claimants' word (claimed by {who}): "
                "attributed, no public method to check.",
            )
        )
    ran = summary.count(*ON_HARDWARE)
    if ran:
        first, last = summary.dates()
        when = first if first == last else f"between {first} and {last}"
        sources = ", ".join(f"{mark} {n}" for mark, n in summary.sources().most_common())
        verdicts = _counts(Counter(cell.kind for cell in summary.hardware_runs))
        items.append(
            paragraph(
                nodes.strong("", str(ran)),
                f" of the {executable} executable ones ran on {summary.hardware} ({and_words(summary.devices())}), "
                f"with {and_words(summary.versions())}, {when}: {verdicts}. From: {sources}.",
            )
        )
    else:
        items.append(
            paragraph(
                nodes.strong("", "0"),
                f" of the {executable} executable ones ran on {summary.hardware}: no record from there yet.",
            )
        )
    only = summary.count(*ON_STAND_IN)
    if only:
        shown = [
            f"on {s.backend} ({and_words(list(s.devices))}, {and_words(list(s.versions))}), "
            f"{_plural(sum(s.verdicts.values()), 'claim')}: {_counts(s.verdicts)}"
            for s in summary.stand_ins()
        ]
        items.append(
            paragraph(
                nodes.strong("", str(only)),
                f" {'was' if only == 1 else 'were'} checked only on a stand-in: {'; '.join(shown)}. "
                f"A stand-in's verdict is evidence about what ran there, never about {name}.",
            )
        )
    unchecked = summary.count(Group.UNCHECKED)
    if unchecked:
        items.append(
            paragraph(
                nodes.strong("", str(unchecked)), f" {'is' if unchecked == 1 else 'are'} not yet checked anywhere."
            )
        )
    out = bullets(items)
    out["classes"].append("tc-tally")
    return out


def fill_the_column(env: BuildEnvironment, backend: str, name: str, executable: int, about: int) -> nodes.section:
    """The one command a hardware owner runs, and what to do with its file."""
    descriptor = all_backends()[backend]
    shared = set(all_backends()[REFERENCE].packages)
    packages = [p for p in descriptor.packages if p not in shared]
    section = nodes.section(ids=[f"fill-{backend}"])
    section += nodes.title("", f"Fill the {backend} column")
    needs = f", with {and_words(packages)}" if packages else ""
    section += paragraph(
        f"On a machine with {name}, the torch build for it installed{needs}, in a clone of this repository:"
    )
    command = f'torchclaims verify --backend {backend} --label "your machine, driver and lab" --output results/'
    section += nodes.literal_block(command, command, language="bash")
    parts = [
        f"runs every executable claim ({executable}; {about} of them {'is' if about == 1 else 'are'} about {backend}), "
        "each in its own process with a time limit, and writes ",
        nodes.literal("", f"results/{backend}-torch<version>-<time>.json"),
        " with its figures. Commit the file and its figures folder in a pull request; ",
        nodes.literal("", "torchclaims merge FILE"),
        " checks a file made on another machine and copies it into results/.",
    ]
    if "docs/results-files" in env.found_docs:
        parts += [
            " ",
            doc_link("Results from your hardware", "docs/results-files"),
            " says what the file holds and how it is checked.",
        ]
    section += paragraph(*parts)
    return section


def check_your_model(env: BuildEnvironment) -> list[nodes.paragraph]:
    """The line to ``torchclaims check``, for the first screen of the pages a migrating team opens first."""
    if "docs/check" not in env.found_docs:
        return []
    line = paragraph(
        nodes.strong("", "Check your own model: "),
        doc_link("torchclaims check", "docs/check"),
        " lists the operators one step of it dispatches and what every measured backend and release did with each.",
    )
    line["classes"].append("tc-check-line")
    return [line]


def card_facts(summary: Summary) -> str:
    """'40 claims about it · 0 only their word · 0 ran on its hardware · 40 only on a stand-in (XLA on the CPU)'."""
    stand_ins = summary.stand_in_names(*ON_STAND_IN)
    return (
        f"{_plural(len(summary.standings), 'claim')} about it · "
        f"{summary.count(Group.ATTRIBUTED)} only their word · "
        f"{summary.count(*ON_HARDWARE)} ran on its hardware · {summary.count(*ON_STAND_IN)} only on a stand-in"
        + (f" ({and_words(stand_ins)})" if stand_ins else "")
    )


def vendor_word(env: BuildEnvironment, root: Path, backend: str, claim_ids, location) -> VendorWord | None:
    """The vendor's statements about the backend, if a file holds them; what is wrong with any file, or a
    statement measured by a claim that does not exist, is warned."""
    folder = Folders(root).vendor_word
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        env.note_dependency(str(path))  # the page changes when a statement does
    words = load_vendor_words(folder)
    for problem in words.problems:
        warn(str(problem), "vendor-word", location=location)
    word = words.by_backend.get(backend)
    for statement in word.statements if word else []:
        for unknown in sorted(set(statement.measured_by) - set(claim_ids)):
            warn(f"{folder.name}/{backend}.toml [measured_by]: no claim {unknown!r}", "vendor-word", location=location)
    return word


class AcceleratorDirective(SphinxDirective):
    """``{accelerator} <backend>``: the page of one backend."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        backend = self.arguments[0]
        if backend not in all_backends():
            warn(
                f"unknown backend {backend!r}; expected one of {', '.join(all_backends())}",
                "directive",
                location=self.get_location(),
            )
            return []
        note_shown(self.env, list(state.claims.claims), state.digest(list(state.claims.claims)), key=ALL_CLAIMS)
        name = reader_name(backend)
        summary = summarize(state.grid, backend)
        page = nodes.section(ids=[f"accelerator-{backend}"], classes=["tc-accelerator"])
        page += nodes.title("", f"Moving PyTorch code to {name}")
        page += paragraph(all_backends()[backend].description)
        page += tally(summary, name)
        page += check_your_model(self.env)
        readings = [read(standing, backend) for standing in summary.standings]
        for action in Action:
            mine = [r for r in readings if r.action is action]
            if not mine:
                continue
            part = nodes.section(ids=[f"{backend}-{action.name.lower().replace('_', '-')}"], classes=["tc-group"])
            part += nodes.title("", action_title(action, mine, backend))
            part += nodes.container("", *[reading_line(r, state.grid) for r in mine], classes=["tc-standings"])
            page += part
        word = vendor_word(self.env, state.root, backend, state.claims.claims, self.get_location())
        if word is not None:
            page += vendor_section(word, summary, state.grid)
        about = len(summary.standings) - summary.count(Group.ATTRIBUTED)
        page += fill_the_column(self.env, backend, name, len(state.claims.executable()), about)
        return [page]


class AcceleratorChoiceDirective(SphinxDirective):
    """``{accelerator-choice}``: a link to every accelerator page, with its tally in one line."""

    def run(self) -> list[nodes.Node]:
        state = get_state(self.env)
        note_shown(self.env, list(state.claims.claims), state.digest(list(state.claims.claims)), key=ALL_CLAIMS)
        items = []
        summaries = [summarize(state.grid, b) for b in accelerator_backends() if page_docname(self.env, b)]
        for summary in sorted(summaries, key=lambda s: -len(s.standings)):
            facts = card_facts(summary)
            link = doc_link(
                f"{summary.backend} · {reader_name(summary.backend)}", page_docname(self.env, summary.backend)
            )
            items.append(paragraph(link, nodes.inline("", facts, classes=["tc-choice-facts"])))
        if not items:
            return []
        out = bullets(items)
        out["classes"].append("tc-choice")
        return check_your_model(self.env) + [out]


class AcceleratorGroupsDirective(SphinxDirective):
    """``{accelerator-groups}``: the groups an accelerator page sorts claims into, in its order."""

    def run(self) -> list[nodes.Node]:
        items = [nodes.list_item("", paragraph(a.value)) for a in Action]
        return [nodes.enumerated_list("", *items)]


class AcceleratorLayersDirective(SphinxDirective):
    """``{accelerator-layers}``: the layers of the stack a reading names a run by."""

    def run(self) -> list[nodes.Node]:
        return [bullets([paragraph(layer.value) for layer in Layer])]


def setup_accelerators(app) -> None:
    app.add_directive("accelerator", AcceleratorDirective)
    app.add_directive("accelerator-choice", AcceleratorChoiceDirective)
    app.add_directive("accelerator-groups", AcceleratorGroupsDirective)
    app.add_directive("accelerator-layers", AcceleratorLayersDirective)
