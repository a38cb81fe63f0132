"""One site built from hostile input: a claim record, a script and a results file
with HTML and JavaScript in every text field, a script that floods its page,
unreadable files, and results files that are forged, misplaced, dated in the
future, nested too deeply or too large. The build finishes, names each bad
file, renders no markup from the input, and marks what was submitted by hand."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from datetime import timedelta
from pathlib import Path

import pytest
from docutils import nodes

from factories import claim_fields, claim_toml, default_source, make_environment, make_record, make_results, script_info
from hostile import PAYLOAD, SCRIPT_TAG, active_markup, assert_clean_exit
from kb import HEADER, build, page_text, write_claim
from torchclaims import limits
from torchclaims.evidence.records import now
from torchclaims.evidence.results import ResultsFile, write_results

pytestmark = pytest.mark.processes  # Sphinx builds of a small knowledge base, which run its claims

# Fields whose format is fixed (patterns, enums, dates) keep their valid values.

STRUCTURAL = {
    "format",
    "schema_version",
    "created",
    "started_at",
    "verdict",
    "outcome",
    "claim_id",
    "backend",
    "device",
    "sha256",
}
STRUCTURAL |= {"figures", "kind", "repository", "commit", "run_id", "run_attempt", "duration_s"}
# Identifiers are checked against their grammar on admission (markup-version.json carries markup in one).
STRUCTURAL |= {"torch", "python", "torchclaims", "packages", "accelerator_runtime", "path"}


def poisoned(value, key: str = ""):
    """``value`` with the payload in every free-text string, map keys included."""
    if key in STRUCTURAL:
        return value
    if isinstance(value, dict):
        free_keys = key in ("conditions", "env_vars", "inputs")
        return {(f"{k} {PAYLOAD}" if free_keys else k): poisoned(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [poisoned(v, key) for v in value]
    return f"{value} {PAYLOAD}" if isinstance(value, str) else value


HOSTILE_SCRIPT = f'''"""
Claim kb-html
=============

:claim-verdict:`kb-html`

Checks {SCRIPT_TAG} and `a link <javascript:alert("tc-xss")>`_.

.. raw:: html

   {SCRIPT_TAG}
"""
import torch
from torchclaims.verify import verification
v = verification("kb-html", model='{SCRIPT_TAG}')

# %%
# A comment block with raw HTML
#
# .. raw:: html
#
#    <img src=x onerror=alert("tc-xss")>

class Shown:
    def _repr_html_(self):
        return '{SCRIPT_TAG}'

Shown()

# %%
# A block that asks for HTML reprs

# sphinx_gallery_capture_repr_block = ("_repr_html_", "__repr__")
Shown()

# %%
# A flood of output

for line in range(12000):
    print("flood " * 20)
print("z" * 600000)

with v.check('{SCRIPT_TAG}') as check:
    check.expect(True, "")
v.finish()
'''


@pytest.fixture(scope="module")
def site(new_site, tmp_path_factory):
    root = new_site("hostile-site", ("kb-holds", "holds"), ("kb-html", "holds"))
    html_claim = claim_fields(
        "kb-html",
        title="Claim with <script> in its title",
        proposition=f"The statement {PAYLOAD} is checked by its script.",
        claimed_by=[PAYLOAD],
        topic="device-switch",
        caveats=[PAYLOAD],
        sources=[
            default_source(
                quote=f"quote {SCRIPT_TAG}",
                publisher=PAYLOAD,
                note=PAYLOAD,
                url='https://e.com/"><script>alert("tc-xss")</script>',
            )
        ],
    )
    (root / "claims" / "kb-html.toml").write_text(claim_toml(html_claim))
    (root / "gallery" / "kb_html.py").write_text(HOSTILE_SCRIPT)
    write_claim(root, "kb-badscript", "holds")
    (root / "gallery" / "kb_badscript.py").write_bytes(HEADER.format(id="kb-badscript").encode() + b"# caf\xe9\n")
    (root / "claims" / "latin.toml").write_bytes('id = "latin"\ntitle = "caf\xe9"\n'.encode("latin-1"))
    write_results_files(root)
    write_outside_links(root, tmp_path_factory.mktemp("outside"))
    write_claim(root, "kb-bidi", "holds")
    bidi = (
        (root / "claims" / "kb-bidi.toml")
        .read_text()
        .replace('title = "Claim kb-bidi"', 'title = "Claim kb-bidi \u202eTXET"')
    )
    (root / "claims" / "kb-bidi.toml").write_text(bidi)
    before = sources(root)
    run = build(root)
    assert sources(root) == before, "the build changed a file outside _build and the generated gallery pages"
    return root, run


def sources(root: Path) -> dict[str, bytes]:
    """Every file outside what a build may write (_build, the generated gallery pages)."""
    generated = ("_build/", "docs/auto_gallery/")
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and not p.relative_to(root).as_posix().startswith(generated)
    }


SECRET = "TC-SECRET-4242"


def write_outside_links(root: Path, outside: Path) -> None:
    """Links out of the repository in claims/, gallery/ and results/, and a forged attestation note."""
    (outside / "secret.py").write_text(f'"""\nClaim kb-linked\n===============\n"""\nprint("{SECRET}")\n')
    write_claim(root, "kb-linked", "holds")
    (root / "gallery" / "kb_linked.py").unlink()
    (root / "gallery" / "kb_linked.py").symlink_to(outside / "secret.py")
    write_claim(outside, "kb-far", "holds")
    (root / "claims" / "kb-far.toml").symlink_to(outside / "claims" / "kb-far.toml")
    env = make_environment(torch="9.9.9", packages={"torch": "9.9.9"})
    write_results(
        outside / "linked.json",
        make_results([make_record("kb-holds", "refuted", script=script_info(root, "kb-holds"), environment=env)], env),
    )
    (root / "results" / "linked.json").symlink_to(outside / "linked.json")
    digest = hashlib.sha256((root / "results" / "hostile.json").read_bytes()).hexdigest()
    note = {
        "format": "torchclaims-attestation",
        "results_sha256": digest,
        "repository": "torchclaims/torchclaims",
        "signer_workflow": ".github/workflows/accelerators.yml",
        "commit": "c" * 40,
        "run_url": "https://github.com/torchclaims/torchclaims/actions/runs/1",
        "verified_at": "2026-03-01T12:00:00Z",
        "verified_with": "gh attestation verify",
    }
    (root / "results" / "attestations").mkdir()
    (root / "results" / "attestations" / "hostile.json").write_text(json.dumps(note))


def write_results_files(root: Path) -> None:
    results = root / "results"
    results.mkdir()
    env = make_environment(torch="9.9.9", packages={"torch": "9.9.9"})
    hostile_record = make_record("kb-holds", "unverified", script=script_info(root, "kb-holds"), environment=env)
    hostile_record = hostile_record.model_copy(update={"conditions": {"model": "m"}, "log_tail": "tail"})
    data = make_results([hostile_record], env, label="a label").model_dump(mode="json")
    (results / "hostile.json").write_text(json.dumps(poisoned(data)))
    ResultsFile.model_validate(json.loads((results / "hostile.json").read_text()))  # still a valid file
    info = script_info(root, "kb-holds")
    write_results(
        results / "forged.json",
        make_results([make_record("kb-holds", "holds", checks=[], script=info, environment=env)], env),
    )
    cuda = make_environment(backend="cuda", device="cpu", device_name="Intel Xeon", torch="2.13.0+cpu")
    write_results(
        results / "cuda-on-cpu.json", make_results([make_record("kb-holds", script=info, environment=cuda)], cuda)
    )
    soon = now() + timedelta(days=2)
    build_env = make_environment(torch="9.9.8", packages={"torch": "9.9.8"})
    future = make_results(
        [make_record("kb-holds", script=info, environment=build_env, started_at=soon)], build_env, created=soon
    )
    write_results(results / "future.json", future)
    (results / "deep.json").write_text('{"format": "torchclaims-results", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for name, bad in (
        ("markup-version.json", {"numpy": PAYLOAD}),
        ("path-version.json", {"numpy": "9.9.9/../../../../tmp/x"}),
    ):
        wrong = make_environment(torch="9.9.7", packages={"torch": "9.9.7", **bad})
        write_results(results / name, make_results([make_record("kb-holds", script=info, environment=wrong)], wrong))
    nan = make_results([make_record("kb-holds", script=info, environment=env)], env).model_dump(mode="json")
    (results / "nan.json").write_text(json.dumps(nan).replace('"duration_s": 1.5', '"duration_s": NaN'))
    with (results / "huge.json").open("wb") as handle:
        handle.truncate(limits.LIMITS.results_file_bytes + 1)


def html(root: Path, page: str) -> str:
    return page_text(root / "_build" / "html" / f"{page}.html")


def test_the_build_finishes_without_a_traceback(site):
    _, run = site
    assert run.returncode == 0, run.stderr[-3000:]
    assert_clean_exit(run)


def test_no_markup_from_the_input_renders(site):
    root, _ = site
    assert active_markup(root / "_build" / "html") == []
    topic = html(root, "docs/topic")
    assert "The statement <script>alert(" in topic  # shown as text (escaped in the HTML; quotes made typographic)
    assert "onerror=alert" in html(root, "docs/auto_gallery/kb_html")  # the comment block, as text


@pytest.mark.parametrize(
    "name, field",
    [
        ("latin.toml", "not UTF-8"),
        ("kb_badscript.py", "not UTF-8"),
        ("deep.json", "deeper than"),
        ("huge.json", "the limit is"),
        ("forged.json", "[records.0.verdict]"),
        ("cuda-on-cpu.json", "[environment.device]"),
        ("future.json", "[created]"),
        ("kb_html.py", "raw directive"),
        ("markup-version.json", "[environment.packages.numpy]"),
        ("path-version.json", "[environment.packages.numpy]"),
        ("nan.json", "[records.0.duration_s]"),
        ("linked.json", "outside the repository"),
        ("kb_linked.py", "outside the repository"),
        ("kb-far.toml", "outside the repository"),
        ("attestations/hostile.json", "cannot attest a results file"),
    ],
)
def test_each_bad_file_is_named_with_its_problem(site, name, field):
    _, run = site
    lines = [line for line in run.stderr.splitlines() if name in line]
    assert any(field in line for line in lines), "\n".join(lines) or run.stderr[-2000:]


def test_submitted_records_are_marked_and_rejected_ones_are_listed(site):
    root, _ = site
    topic = html(root, "docs/topic")
    holds = topic[topic.index("Claim kb-holds") :]
    assert "submitted by hand, not reproduced" in holds
    assert "Records left out" in holds and "forged.json [records.0.verdict]" in holds
    raw = (root / "_build" / "html" / "docs" / "matrix.html").read_text()
    row = re.search(r'<tr class="tc-claim-row" id="[^"]*kb-holds[^"]*".*?</tr>', raw, re.S).group()
    assert (
        '<td data-backend="cuda"' not in row and '<th scope="col" data-backend="cuda"' not in raw
    )  # nothing from the rejected file
    assert "kb-badscript" in topic and "cannot be run: not UTF-8" in topic


def test_a_flooded_page_is_bounded(site):
    root, _ = site
    page = root / "_build" / "html" / "docs" / "auto_gallery" / "kb_html.html"
    assert page.stat().st_size < limits.LIMITS.page_output_bytes * 2 + 200_000
    assert "output cut here" in page_text(page)
    doctree = root / "_build" / "html" / ".doctrees" / "docs" / "auto_gallery" / "kb_html.doctree"
    assert doctree.stat().st_size < limits.LIMITS.page_output_bytes * 3 + 200_000
    tree = pickle.loads(doctree.read_bytes())
    outputs = [
        block.astext() for block in tree.findall(nodes.literal_block) if "sphx-glr-script-out" in block["classes"]
    ]
    assert any(SCRIPT_TAG in text for text in outputs)  # the HTML repr a block asked for, as text
    assert not list(tree.findall(nodes.raw))


def test_what_leaves_the_repository_or_breaks_a_grammar_shows_nothing(site):
    root, run = site
    pages = [
        p
        for p in (root / "_build" / "html").rglob("*")
        if p.is_file() and p.suffix in (".html", ".md", ".txt", ".json", ".csv", ".js")
    ]
    text = {p: p.read_text(errors="replace") for p in pages}
    assert not [p for p, t in text.items() if SECRET in t]  # the linked script's content is published nowhere
    assert not [
        p for p, t in text.items() if "9.9.7" in t
    ]  # no record of the rejected files (only the line saying why)
    assert not [p for p, t in text.items() if "\u202e" in t]
    assert "Claim kb-bidi \ufffdTXET" in html(root, "docs/topic")
    assert not [p for p, t in text.items() if "nan s" in t]
    for line in run.stderr.splitlines():
        if "outside the repository" in line or "cannot attest" in line:
            assert line.count("\n") == 0 and ("[" not in line or "]" in line)


def test_a_forged_attestation_note_marks_nothing_attested(site):
    root, _ = site
    topic = html(root, "docs/topic")
    assert "attested" not in topic.replace("no attestation verified by this build", "")
    assert "project workflow, attested" not in (root / "_build" / "html" / "docs" / "matrix.html").read_text()
