"""A claim's workaround: what a team does where the claim does not hold, and who says it works."""

from __future__ import annotations

from pathlib import Path

import pytest
from markupsafe import Markup

from factories import (
    default_source,
    make_environment,
    make_kb,
    make_record,
    script_info,
    write_claim,
    write_results_file,
)
from test_accelerator_reading import grid_of, read_all
from test_backend_summary import XLA_CPU
from test_check import XLA_ENV, scale_step
from torchclaims.authoring.lint import lint
from torchclaims.check import check_step, html_report
from torchclaims.check.report import WRONG
from torchclaims.check.sarif import sarif
from torchclaims.check.terminal import summary
from torchclaims.claims import load_claim, load_claims
from torchclaims.errors import InvalidFileError
from torchclaims.evidence.records import Verdict
from torchclaims.evidence.store import Entry
from torchclaims.sphinxext.views.accelerators import reading_line

WHAT = "Pass the flag that turns the defect off."
CITED = default_source()["url"]


def problems(tmp_path, **workaround) -> list[str]:
    path = write_claim(tmp_path, "with-workaround", workaround=workaround)
    with pytest.raises(InvalidFileError) as info:
        load_claim(path)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    "attribution",
    [
        dict(cites=CITED),
        dict(source=default_source(url="https://example.com/issues/1", quote="Set the flag to avoid it.")),
        dict(measured_by="other-claim"),
    ],
)
def test_a_workaround_loads_with_one_attribution(tmp_path, attribution):
    claim = load_claim(write_claim(tmp_path, "with-workaround", workaround=dict(what=WHAT, **attribution)))
    assert claim.workaround is not None and claim.workaround.what == WHAT
    key, value = next(iter(attribution.items()))
    assert getattr(claim.workaround, key) is not None


def test_a_claim_without_a_workaround_has_none(tmp_path):
    assert load_claim(write_claim(tmp_path, "plain")).workaround is None


@pytest.mark.parametrize(
    "workaround, says",
    [
        (dict(what=WHAT), "say who states the workaround"),
        (dict(what=WHAT, cites=CITED, measured_by="other-claim"), "in one way"),
        (dict(what=WHAT, cites="https://example.com/elsewhere"), "not the url of any of the claim's sources"),
        (dict(what=WHAT, measured_by="with-workaround"), "names the claim itself"),
        (dict(what=WHAT, measured_by="Not An Id"), "String should match pattern"),
        (dict(what="short", cites=CITED), "at least 10 characters"),
        (dict(what=WHAT, cites=CITED, flag="--fast"), "Extra inputs are not permitted"),
        (
            dict(what=WHAT, source=default_source(claimant="Vendor", about=["cpu"])),
            "not a claim: leave claimant and about out",
        ),
        (dict(what=WHAT, source=default_source(quote="")), "at least 1 character"),
    ],
)
def test_a_bad_workaround_is_a_clear_error_naming_the_file_and_field(tmp_path, workaround, says):
    found = problems(tmp_path, **workaround)
    assert any("with-workaround.toml" in p and "[workaround" in p and says in p for p in found), found


def test_a_bad_workaround_takes_no_other_record_down(tmp_path):
    write_claim(tmp_path, "with-workaround", workaround=dict(what=WHAT))
    write_claim(tmp_path, "plain")
    loaded = load_claims(tmp_path)
    assert set(loaded.claims) == {"plain"} and loaded.broken == {"with-workaround"}


# -- lint: a measured workaround needs a claim whose records can measure it ---------------------------------


@pytest.mark.parametrize(
    "measured_by, says",
    [("second-claim", None), ("nowhere-claim", "no claim with id 'nowhere-claim'"), ("vendor-testimony", "attributed")],
)
def test_lint_requires_the_measuring_claim_to_exist_and_run(tmp_path, measured_by, says):
    kb = make_kb(tmp_path, "first-claim", "second-claim")
    write_claim(kb / "claims", "vendor-testimony", kind="attributed", topic="status")
    write_claim(kb / "claims", "first-claim", workaround=dict(what=WHAT, measured_by=measured_by))
    found = [p for p in lint(kb) if p.path.name == "first-claim.toml"]
    if says is None:
        assert found == []
    else:
        assert [p.field for p in found] == ["workaround.measured_by"] and says in found[0].message, found


# -- the "known to differ" group of an accelerator page ----------------------------------------------------


def reading_text(tmp_path, backend: str, claims: dict[str, dict], entries: list[Entry], claim_id: str) -> str:
    grid = grid_of(tmp_path, claims, entries)
    return " ".join(reading_line(read_all(grid, backend)[claim_id], grid).astext().split())


MEASURED = dict(what=WHAT, measured_by="fix")


def test_a_claim_known_to_differ_shows_its_workaround_with_the_verdict_that_measures_it(tmp_path):
    text = reading_text(
        tmp_path,
        "xla",
        {"defect": {"about": ["xla"], "workaround": MEASURED}, "fix": {"about": ["xla"]}},
        [
            Entry(make_record("defect", Verdict.REFUTED, environment=XLA_CPU), "xla.json"),
            Entry(make_record("fix", Verdict.HOLDS, environment=XLA_CPU), "xla.json"),
        ],
        "defect",
    )
    assert f"Workaround: {WHAT}" in text
    measured = "Measured by: Claim fix xla · XLA on the CPU (Test CPU) · torch_xla 2.9.0 on torch 2.9.0 ✔ holds"
    assert measured in text, text


@pytest.mark.parametrize("verdict", [Verdict.REFUTED, Verdict.UNVERIFIED])
def test_a_measuring_claim_that_did_not_hold_is_shown_as_it_is(tmp_path, verdict):
    text = reading_text(
        tmp_path,
        "xla",
        {"defect": {"about": ["xla"], "workaround": MEASURED}, "fix": {"about": ["xla"]}},
        [
            Entry(make_record("defect", Verdict.REFUTED, environment=XLA_CPU), "xla.json"),
            Entry(make_record("fix", verdict, environment=XLA_CPU), "xla.json"),
        ],
        "defect",
    )
    assert f"{verdict.value}" in text.split("Measured by:")[1] and "✔ holds" not in text


def test_a_workaround_no_record_measures_says_so(tmp_path):
    text = reading_text(
        tmp_path,
        "xla",
        {"defect": {"about": ["xla"], "workaround": MEASURED}, "fix": {"about": ["xla"]}},
        [Entry(make_record("defect", Verdict.REFUTED, environment=XLA_CPU), "xla.json")],
        "defect",
    )
    assert "Measured by: Claim fix; no record of it on xla yet, so nothing shows that it works there" in text


@pytest.mark.parametrize(
    "attribution, stated",
    [
        (dict(cites=CITED), "Stated by: PyTorch documentation (2025-03), a source of this claim"),
        (
            dict(source=default_source(url="https://example.com/issues/1", quote="Set the flag to avoid it.")),
            "Stated by: “Set the flag to avoid it.” — PyTorch documentation (2025-03)",
        ),
    ],
)
def test_a_workaround_a_source_states_names_that_source(tmp_path, attribution, stated):
    text = reading_text(
        tmp_path,
        "xla",
        {"defect": {"about": ["xla"], "workaround": dict(what=WHAT, **attribution)}},
        [Entry(make_record("defect", Verdict.REFUTED, environment=XLA_CPU), "xla.json")],
        "defect",
    )
    assert f"Workaround: {WHAT}" in text and stated in text, text


def test_a_claim_that_works_as_written_shows_no_workaround(tmp_path):
    text = reading_text(
        tmp_path,
        "xla",
        {"defect": {"about": ["xla"], "workaround": dict(what=WHAT, cites=CITED)}},
        [Entry(make_record("defect", Verdict.HOLDS, environment=XLA_CPU), "xla.json")],
        "defect",
    )
    assert "Workaround" not in text


# -- torchclaims check: the fix of a finding from a defect claim --------------------------------------------


def defect_kb(root: Path, workaround: dict, defect: str = "refuted", fix: str | None = "holds") -> Path:
    """A defect claim about aten::mul, measured on xla, with ``workaround``; ``fix``: the verdict of the claim
    measuring it there (None: no record)."""
    make_kb(root, "defect-mul", "fix")
    write_claim(root / "claims", "defect-mul", topic="op-coverage", aten_operators=["aten::mul"], workaround=workaround)
    records = [make_record("defect-mul", defect, environment=XLA_ENV, script=script_info(root, "defect-mul"))]
    if fix is not None:
        records.append(make_record("fix", fix, environment=XLA_ENV, script=script_info(root, "fix")))
    write_results_file(root / "results" / "xla.json", records, make_environment(**XLA_ENV))
    return root


def mul_evidence(report):
    (column,) = report.columns
    (mul,) = [f for f in column.operators if f.operator == "aten::mul.Tensor"]
    return mul.evidence[-1]


def test_check_carries_a_defect_claims_measured_workaround_into_every_report(tmp_path):
    report = check_step(scale_step(), root=defect_kb(tmp_path, MEASURED), site_url="")
    evidence = mul_evidence(report)
    assert evidence.status == WRONG
    assert evidence.workaround == (
        f"{WHAT} (claim fix measures it: holds on xla · torch_xla 2.9.0 on torch 2.13.0, "
        "docs/topics/numerics.html#claim-fix--xla--torch-xla-2-9-0-on-torch-2-13-0)"
    )
    assert f"workaround: {evidence.workaround}" in summary(report)
    assert Markup("<strong>Workaround:</strong> {}").format(evidence.workaround) in html_report.render(report)
    (mul,) = [f for f in report.as_dict()["columns"][0]["operators"] if f["operator"] == "aten::mul.Tensor"]
    assert mul["evidence"][-1]["workaround"] == evidence.workaround  # what --json writes
    (result,) = [r for r in sarif(report)["runs"][0]["results"] if r["properties"]["operator"] == "aten::mul.Tensor"]
    assert result["properties"]["fix"].startswith(f"workaround: {evidence.workaround}; ")
    assert f"Fix: workaround: {WHAT}" in result["message"]["text"]


def test_check_says_when_no_record_measures_the_workaround(tmp_path):
    evidence = mul_evidence(check_step(scale_step(), root=defect_kb(tmp_path, MEASURED, fix=None), site_url=""))
    assert evidence.workaround == f"{WHAT} (claim fix measures it: no record on xla · torch_xla 2.9.0 on torch 2.13.0)"


def test_check_names_who_states_a_cited_workaround(tmp_path):
    evidence = mul_evidence(check_step(scale_step(), root=defect_kb(tmp_path, dict(what=WHAT, cites=CITED))))
    assert evidence.workaround == f"{WHAT} (stated by PyTorch documentation, {CITED})"


def test_check_offers_no_workaround_where_the_defect_is_not_shown(tmp_path):
    report = check_step(scale_step(), root=defect_kb(tmp_path, MEASURED, defect="holds"))
    assert mul_evidence(report).workaround == ""
    assert all("workaround" not in r["properties"]["fix"] for r in sarif(report)["runs"][0]["results"])


def test_the_claims_reference_documents_every_field_and_each_key_of_a_workaround():
    from torchclaims.claims import Claim, Workaround

    text = (Path(__file__).resolve().parents[1] / "docs" / "claims-reference.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert all(any(row.startswith(f"| `{name}`") for row in rows) for name in Claim.model_fields), rows
    (row,) = [row for row in rows if row.startswith("| `workaround`")]
    assert all(f"`{key}`" in row or f"[workaround.{key}]" in row for key in Workaround.model_fields)
