"""Lint: every cross-file problem of a knowledge base, each with file, field or line."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import default_source, make_kb, script_text, write_claim, write_script
from torchclaims.authoring.lint import lint


def where(problem) -> str:
    """The problem's file as a project-relative posix path."""
    parts = Path(problem.path).parts
    for anchor in ("claims", "gallery"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) :])
    return Path(problem.path).as_posix()


def about(problems, file: str):
    return [p for p in problems if where(p) == file]


def only(problems, file: str):
    found = about(problems, file)
    assert len(found) == 1, f"expected one problem for {file}, got {[str(p) for p in problems]}"
    return found[0]


def line_of(path: Path, text: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture
def kb(tmp_path):
    """A clean knowledge base with two claims (tests then break one thing)."""
    return make_kb(tmp_path, "first-claim", "second-claim")


def test_clean_knowledge_base_has_no_problems(kb):
    write_claim(kb / "claims", "vendor-testimony", kind="attributed", topic="status", see_also=["first-claim"])
    (kb / "gallery" / "_helper.py").write_text("def shared():\n    return 1\n")  # helpers are not scripts
    (kb / "gallery" / "GALLERY_HEADER.rst").write_text("Gallery\n=======\n")
    assert lint(kb) == []


def test_knowledge_base_without_gallery_reports_missing_scripts_only(tmp_path):
    write_claim(tmp_path / "claims", "lonely-claim")
    problems = lint(tmp_path)
    assert [(where(p), p.field) for p in problems] == [("claims/lonely-claim.toml", "script")]


def test_schema_problems_of_records_are_included(kb):
    write_claim(kb / "claims", "bad-topic", topic="speed")
    problem = only(lint(kb), "claims/bad-topic.toml")
    assert problem.field == "topic"


def test_script_of_an_invalid_record_is_not_said_to_have_no_record(kb):
    # claims/first-claim.toml exists but fails validation: the contributor must be sent
    # to that record's problem, not told that the record does not exist.
    write_claim(kb / "claims", "first-claim", topic="speed")
    problems = lint(kb)
    assert only(problems, "claims/first-claim.toml").field == "topic"
    assert not any("no record" in p.message for p in problems), [str(p) for p in problems]


def test_executable_claim_whose_script_is_missing(kb):
    write_claim(kb / "claims", "no-script")
    problem = only(lint(kb), "claims/no-script.toml")
    assert problem.field == "script"
    assert "gallery/no_script.py" in problem.message
    assert "does not exist" in problem.message
    assert "torchclaims new" in problem.message  # says how to fix it


def test_script_verifying_an_unknown_claim(kb):
    write_script(kb, "ghost-claim")
    problem = only(lint(kb), "gallery/ghost_claim.py")
    assert "'ghost-claim'" in problem.message
    assert "no record" in problem.message and "claims/" in problem.message


def test_script_verifying_a_claim_whose_record_names_another_script(kb):
    write_claim(kb / "claims", "third-claim")
    write_script(kb, "first-claim", name="third_claim.py")  # verifies the wrong claim
    problems = lint(kb)
    problem = only(problems, "gallery/third_claim.py")
    assert "'first-claim'" in problem.message
    assert "gallery/first_claim.py" in problem.message


@pytest.mark.parametrize(
    "verified, script_name", [("ghost-claim", "ghost_claim.py"), ("first-claim", "third_claim.py")]
)
def test_wrong_claim_id_in_a_script_names_the_verification_line(kb, verified, script_name):
    # The id is judged at the verification("...") call; the problem should point there,
    # as it does for a non-literal id.
    write_claim(kb / "claims", "third-claim")
    script = write_script(kb, verified, name=script_name)
    problem = only(lint(kb), f"gallery/{script_name}")
    assert problem.line == line_of(script, f'verification("{verified}"')


def test_script_that_never_calls_verification(kb):
    write_script(kb, "x", name="no_verification.py", text='"""\nTitle\n=====\n"""\nimport torch\n\nx = torch.ones(2)\n')
    problem = only(lint(kb), "gallery/no_verification.py")
    assert "never calls" in problem.message
    assert 'verification("<claim-id>")' in problem.message


def test_verification_with_a_non_literal_id(kb):
    text = script_text("first-claim").replace('verification("first-claim"', "verification(CLAIM")
    text = text.replace("import torch\n", 'import torch\n\nCLAIM = "first-claim"\n', 1)
    script = write_script(kb, "first-claim", text=text)
    problem = only(lint(kb), "gallery/first_claim.py")
    assert "string literal" in problem.message
    assert problem.line == line_of(script, "verification(CLAIM")


def test_script_without_docstring(kb):
    write_script(kb, "first-claim", text=script_text("first-claim", docstring=False))
    problem = only(lint(kb), "gallery/first_claim.py")
    assert "docstring" in problem.message
    assert problem.line == 1


def test_script_with_a_syntax_error_is_reported_with_its_line(kb):
    script = write_script(kb, "first-claim", text=script_text("first-claim") + "\ndef broken(:\n")
    problem = only(lint(kb), "gallery/first_claim.py")
    assert "syntax error" in problem.message
    assert problem.line == line_of(script, "def broken(")


@pytest.mark.parametrize(
    "text, marker, why",
    [
        (".. raw:: html\n\n   <script>alert(1)</script>", ".. raw::", "raw directive"),
        (".. |x| raw:: html\n\n   <b>x</b>", ".. |x| raw::", "raw directive"),
        (".. role:: html(raw)\n   :format: html", ".. role::", "role built on raw"),
        (".. include:: /etc/passwd", ".. include::", "include reads another file"),
        ("`click <javascript:alert(1)>`_", "javascript:", "javascript: link"),
        (".. csv-table::\n   :url: https://example.com/x.csv", ":url:", ":file: or :url:"),
    ],
)
@pytest.mark.parametrize("where_", ["docstring", "comment block"])
def test_markup_that_would_render_as_html_is_reported_with_its_line(kb, text, marker, why, where_):
    if where_ == "docstring":
        source = script_text("first-claim").replace("What the script checks.", "What the script checks.\n\n" + text)
    else:
        comment = "\n".join("# " + line if line else "#" for line in text.splitlines())
        source = script_text("first-claim", body=f"\n# %%\n# A section\n#\n{comment}\n\nx = 1\n")
    script = write_script(kb, "first-claim", text=source)
    problem = only(lint(kb), "gallery/first_claim.py")
    assert why in problem.message
    assert problem.line == line_of(script, marker)


def test_html_inside_code_or_as_plain_words_is_not_markup(kb):
    body = 'html = "<b>bold</b>"\n# a comment about javascript: not in a text block\n'
    write_script(kb, "first-claim", text=script_text("first-claim", body=body))
    assert about(lint(kb), "gallery/first_claim.py") == []


@pytest.mark.parametrize(
    "code, literal",
    [
        ('y = x.to("cuda")', "cuda"),
        ('y = x.to("cuda:1")', "cuda:1"),
        ('y = torch.zeros(2, device="cpu")', "cpu"),
        ('d = torch.device("xla")', "xla"),
        ('state = torch.load("weights.pt", map_location="cpu")', "cpu"),
        ('with torch.autocast(device_type="cuda"):\n    pass', "cuda"),
        ('y = x.to(device="mps")', "mps"),
    ],
)
def test_literal_device_strings_are_reported_with_their_line(kb, code, literal):
    script = write_script(kb, "first-claim", text=script_text("first-claim", body=code + "\n"))
    problem = only(lint(kb), "gallery/first_claim.py")
    assert f"literal device {literal!r}" in problem.message
    assert "v.device" in problem.message  # the fix
    assert problem.line == line_of(script, code.splitlines()[0])


def test_device_taken_from_the_verification_is_not_reported(kb):
    body = "y = x.to(v.device)\nz = torch.zeros(2, device=v.reference_device)\nname = 'cuda'\n"
    write_script(kb, "first-claim", text=script_text("first-claim", body=body))
    assert lint(kb) == []


def test_a_device_literal_marked_as_under_test_is_allowed_on_its_own_line_only(kb):
    """A claim about code written for CUDA names the device on purpose; the mark
    covers the line it is on, and an unmarked literal beside it is still reported."""
    marked = "y = x.cuda()  # device under test"
    unmarked = 'z = x.to("cuda")'
    script = write_script(kb, "first-claim", text=script_text("first-claim", body=f"{marked}\n{unmarked}\n"))
    problem = only(lint(kb), "gallery/first_claim.py")
    assert "literal device 'cuda'" in problem.message
    assert problem.line == line_of(script, unmarked)


TABLE = 'EXPECTED = {"cpu": "gloo", "cuda": "nccl"}\nname = EXPECTED.get(v.backend.name)\n'


@pytest.mark.parametrize(
    "code, flagged",
    [
        ('check.equal(3, 3, "three")', "check.equal(3, 3)"),
        (
            'check.equal(name, v.backend.dist_backend, "descriptor vs table")',
            "check.equal(name, v.backend.dist_backend)",
        ),
        ('check.equal(EXPECTED, EXPECTED, "table")', "check.equal(EXPECTED, EXPECTED)"),
        ('check.equal(EXPECTED["cpu"], "gloo", "entry")', "check.equal(EXPECTED['cpu'], 'gloo')"),
        ('check.expect(name == v.backend.dist_backend, "differs")', "check.expect(name == v.backend.dist_backend)"),
        ('check.expect(len(EXPECTED) == 2, "size")', "check.expect(len(EXPECTED) == 2)"),
        ('check.equal(f"{name}", EXPECTED.get("cpu"), "f-string")', "check.equal(f'{name}', EXPECTED.get('cpu'))"),
    ],
)
def test_judgements_of_values_fixed_before_the_run_are_reported_with_their_line(kb, code, flagged):
    body = TABLE + 'with v.check("a constant comparison") as check:\n    ' + code + "\n"
    script = write_script(kb, "first-claim", text=script_text("first-claim", body=body))
    problem = only(lint(kb), "gallery/first_claim.py")
    assert problem.message.startswith(flagged)
    assert "cannot fail" in problem.message
    assert problem.line == line_of(script, code)


@pytest.mark.parametrize(
    "code",
    [
        'check.equal(x.device.type, v.device.type, "device type")',  # measured against the configuration
        'check.equal(run(name), EXPECTED["cpu"], "result")',  # a call computes one side
        'check.expect(False, "raised")',  # a failing branch: the control flow is the judgement
        'check.equal(parses, False, "parses")',  # bound differently in two branches
        'check.equal(seen, [], "failures")',  # a list the script filled
        'check.equal(torch.randn(2), torch.randn(2), "two draws")',  # same text, two values
        'check.expect(backend_name in torch._dynamo.list_backends(), "missing")',
    ],
)
def test_judgements_of_measured_values_are_not_reported(kb, code):
    setup = (
        "def run(n):\n    return n\n"
        "try:\n    torch.device('nope')\n    parses = True\nexcept RuntimeError:\n    parses = False\n"
        "seen = []\nseen.append(1)\nbackend_name = v.backend.compile_backend\n"
    )
    body = TABLE + setup + 'with v.check("a measured comparison") as check:\n    ' + code + "\n"
    write_script(kb, "first-claim", text=script_text("first-claim", body=body))
    assert lint(kb) == []


def test_duplicate_propositions_are_reported_on_the_later_record(kb):
    write_claim(kb / "claims", "dup-a", proposition="Both records say exactly the same thing here.")
    write_claim(kb / "claims", "dup-b", proposition="  both records say EXACTLY the same\nthing here. ")
    write_script(kb, "dup-a")
    write_script(kb, "dup-b")
    problems = lint(kb)
    assert about(problems, "claims/dup-a.toml") == []
    problem = only(problems, "claims/dup-b.toml")
    assert problem.field == "proposition"
    assert "'dup-a'" in problem.message and "merge" in problem.message


def test_unknown_see_also_id(kb):
    write_claim(kb / "claims", "first-claim", see_also=["second-claim", "nowhere-claim"])
    problem = only(lint(kb), "claims/first-claim.toml")
    assert problem.field == "see_also"
    assert "'nowhere-claim'" in problem.message


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"title": "TODO: a short title"}, "title"),
        ({"claimed_by": ["TODO: who makes the claim"]}, "sources.0.claimant"),
        ({"caveats": ["Fine caveat.", "TODO: what a run can tell"]}, "caveats.1"),
        ({"sources": [default_source(url="https://example.org/TODO")]}, "sources.0.url"),
        ({"sources": [default_source(), default_source(publisher="TODO: who")]}, "sources.1.publisher"),
    ],
)
def test_template_placeholders_name_the_field(kb, fields, field):
    write_claim(kb / "claims", "first-claim", **fields)
    problem = only(lint(kb), "claims/first-claim.toml")
    assert problem.field == field
    assert "template text" in problem.message and "replace" in problem.message


def test_two_claims_sharing_one_script(kb):
    write_claim(kb / "claims", "third-claim", script="gallery/first_claim.py")
    problems = lint(kb)
    problem = only(problems, "claims/third-claim.toml")
    assert problem.field == "script"
    assert "gallery/first_claim.py" in problem.message and "'first-claim'" in problem.message
    assert about(problems, "claims/first-claim.toml") == []


def test_every_problem_is_reported_in_one_call(kb):
    claims = kb / "claims"
    write_claim(claims, "no-script")
    write_claim(claims, "bad-topic", topic="speed")
    write_claim(claims, "sees-nothing", see_also=["nowhere-claim"])
    write_claim(claims, "placeholder", title="TODO: title")
    write_claim(
        claims,
        "third-copy",
        proposition=(claims / "first-claim.toml").read_text().split('proposition = "')[1].split('"')[0],
    )
    write_claim(claims, "sharer", script="gallery/second_claim.py")
    for claim_id in ("sees-nothing", "placeholder", "third-copy"):
        write_script(kb, claim_id)
    write_script(kb, "ghost-claim")
    write_script(kb, "x", name="never.py", text='"""\nT\n=\n"""\n')
    write_script(kb, "first-claim", text=script_text("first-claim", body='y = x.to("cuda")\n', docstring=False))

    found = {(where(p), p.field) for p in lint(kb)}
    expected = {
        ("claims/no-script.toml", "script"),
        ("claims/bad-topic.toml", "topic"),
        ("claims/sees-nothing.toml", "see_also"),
        ("claims/placeholder.toml", "title"),
        ("claims/third-copy.toml", "proposition"),
        ("claims/sharer.toml", "script"),
        ("gallery/ghost_claim.py", ""),
        ("gallery/never.py", ""),
        ("gallery/first_claim.py", ""),
    }
    assert expected <= found
    messages = [p.message for p in lint(kb) if where(p) == "gallery/first_claim.py"]
    assert any("docstring" in m for m in messages) and any("literal device" in m for m in messages)


def test_problem_string_shows_file_field_and_line(kb):
    write_claim(kb / "claims", "first-claim", see_also=["nowhere-claim"])
    write_script(kb, "second-claim", text=script_text("second-claim", body='y = x.to("cuda")\n'))
    texts = [str(p) for p in lint(kb)]
    assert any(t.endswith("first-claim.toml [see_also]: no claim with id 'nowhere-claim'") for t in texts)
    assert any(t.startswith("gallery/second_claim.py:") and "literal device 'cuda'" in t for t in texts)


def test_lint_reads_records_from_another_claims_directory(tmp_path):
    write_claim(tmp_path / "records", "first-claim", topic="speed")
    problems = lint(tmp_path, claims_dir="records")
    assert [(p.path.name, p.field) for p in problems] == [("first-claim.toml", "topic")]


def test_script_template_leftovers_missing_badge_and_missing_finish_are_reported(tmp_path):
    make_kb(tmp_path, "a-claim")
    write_script(
        tmp_path,
        "a-claim",
        '"""\nTODO: the title\n===============\n"""\n'
        "from torchclaims.verify import verification\n"
        'v = verification("a-claim")\n',
    )
    messages = [p.message for p in lint(tmp_path)]
    assert any("template text (TODO)" in m for m in messages)
    assert any(":claim-verdict:`a-claim`" in m for m in messages)
    assert any("never calls v.finish()" in m for m in messages)


@pytest.mark.parametrize("heading", ["Title\n===", "Title\n-----", "Title only"])
def test_script_title_must_be_underlined_with_equals_signs_long_enough(tmp_path, heading):
    make_kb(tmp_path, "a-claim")
    text = script_text("a-claim").replace("Claim a-claim\n" + "=" * len("Claim a-claim"), heading)
    assert heading in text
    write_script(tmp_path, "a-claim", text)
    assert any("title underlined by '='" in p.message for p in lint(tmp_path))


def test_a_script_carries_its_claims_title_word_for_word(tmp_path):
    make_kb(tmp_path, "titled")
    path = tmp_path / "gallery" / "titled.py"
    path.write_text(
        path.read_text().replace("Claim titled\n============", "Another title for it\n====================")
    )
    problem = only(lint(tmp_path), "gallery/titled.py")
    assert problem.line == 2
    assert "the docstring's title must be the claim's title" in problem.message and "'Claim titled'" in problem.message


def test_a_proposition_about_a_backend_no_source_speaks_about_is_reported(kb):
    sources = [default_source(claimant="AWS", about=["neuron"])]
    write_claim(kb / "claims", "first-claim", about=["neuron", "cpu"], relation="narrows", sources=sources)
    problem = only(lint(kb), "claims/first-claim.toml")
    assert problem.field == "about"
    assert "cpu" in problem.message and "own finding" in problem.message


def test_an_own_finding_needs_no_source_about_its_backends(kb):
    write_claim(kb / "claims", "first-claim", about=["xla", "cpu"], claimed_by=["torchclaims"], relation="own-finding")
    assert about(lint(kb), "claims/first-claim.toml") == []


def test_relation_is_with_two_claimants_is_reported_as_a_merge(kb):
    sources = [default_source(claimant="AWS", about=["neuron"]), default_source(claimant="PyTorch", about=["cpu"])]
    write_claim(kb / "claims", "first-claim", about=["neuron", "cpu"], relation="is", sources=sources)
    problem = only(lint(kb), "claims/first-claim.toml")
    assert problem.field == "relation"
    assert "AWS, PyTorch" in problem.message and "narrows" in problem.message
    write_claim(kb / "claims", "first-claim", about=["neuron", "cpu"], relation="narrows", sources=sources)
    assert about(lint(kb), "claims/first-claim.toml") == []


@pytest.mark.parametrize(
    "code",
    [
        "from torchclaims.evidence.records import Verdict",
        "import torchclaims.run.runner",
        "from torchclaims.verifyx import thing",
    ],
)
def test_a_script_importing_the_engine_outside_the_scripts_interface_is_reported(kb, code):
    script = write_script(kb, "first-claim", text=script_text("first-claim", body=code + "\n"))
    problem = only(lint(kb), "gallery/first_claim.py")
    assert "not part of the scripts' interface" in problem.message
    assert problem.line == line_of(script, code)


def test_a_helper_importing_the_engine_outside_the_scripts_interface_is_reported(kb):
    (kb / "gallery" / "_helper.py").write_text("from torchclaims.backends import resolve_backend\n")
    problem = only(lint(kb), "gallery/_helper.py")
    assert "torchclaims.backends" in problem.message and problem.line == 1


def test_the_scripts_interface_and_its_submodules_are_not_reported(kb):
    body = (
        "from torchclaims.verify import distributed, load_claim, resolve_backend\n"
        "from torchclaims.verify.distributed import free_port\n"
        "from torchclaims.coverage.operators import OUTCOMES\n"
    )
    write_script(kb, "first-claim", text=script_text("first-claim", body=body))
    assert lint(kb) == []
