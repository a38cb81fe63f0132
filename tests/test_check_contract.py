"""``torchclaims check`` as a team puts it in CI: findings that apply to the model, every target backend named,
distinct exit codes, one-line errors for the model's own faults, absolute links and SARIF.

The defect triggers are checked against the committed claim ``xla-slice-negative-start`` (a model that truly
slices before the front of a dimension, one that does not) and against a knowledge base written here, whose
claim states a trigger, to show the trigger can both spare and flag a model.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import torch

from factories import (
    XLA_ENV,
    make_kb,
    make_record,
    script_info,
    write_claim,
    write_xla_table,
)
from torchclaims.check import check_step
from torchclaims.check.recorder import record_step
from torchclaims.check.report import NATIVE, WRONG
from torchclaims.check.sarif import sarif
from torchclaims.check.standing import TARGET_BACKENDS
from torchclaims.check.target import as_step, load_target
from torchclaims.claims import Trigger, load_claims
from torchclaims.cli import ExitCode, main
from torchclaims.coverage.operators import OUTCOMES
from torchclaims.evidence.coverage_table import TableBuilder
from torchclaims.project import BUILD, FOLDER_NAMES, PUBLISH_DIR
from torchclaims.site_addresses import SITE_URL_VAR

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "check"
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"  # OASIS, SARIF 2.1.0 errata 01


def kinds_of(fn, *inputs) -> dict[str, set[str]]:
    step = as_step((fn, inputs))
    return {u.name: {k.value for k in u.kinds} for u in record_step(step)}


# -- triggers ----------------------------------------------------------------------------------------------------


def test_recorder_notes_the_argument_kinds_of_each_call():
    x = torch.randn(6)
    assert kinds_of(lambda t: t[-6:], x)["aten::slice.Tensor"] == {"negative-slice-start"}
    assert kinds_of(lambda t: t[-15:], x)["aten::slice.Tensor"] == {"negative-slice-start", "slice-start-before-front"}
    assert kinds_of(lambda t: t.reshape(1, 6)[:, -15:], x)["aten::slice.Tensor"] >= {"slice-start-before-front"}
    assert kinds_of(lambda t: t[2:100], x)["aten::slice.Tensor"] == set()
    assert "zero-dim-input" in kinds_of(lambda t: t.sum() * 2, x)["aten::mul.Tensor"]
    assert kinds_of(lambda t: t * 2, x)["aten::mul.Tensor"] == set()
    assert "complex-input" in kinds_of(lambda t: torch.view_as_complex(t.reshape(3, 2)) * 2, x)["aten::mul.Tensor"]


def triggered_kb(root: Path, trigger: list[str]) -> Path:
    """A refuted defect claim about aten::mul that needs the given argument kinds, and a table where mul is native."""
    make_kb(root, "opinfo-coverage", "defect-mul")
    write_claim(root / "claims", "defect-mul", topic="op-coverage", aten_operators=["aten::mul"], trigger=trigger)
    builder = TableBuilder("operators", "operator", ["mul"], {"float32": OUTCOMES})
    builder.set("mul", "float32", "N", "")
    builder.add_operators("mul", ["aten::mul.Tensor"])
    defect = make_record("defect-mul", "refuted", environment=XLA_ENV, script=script_info(root, "defect-mul"))
    return write_xla_table(root, builder.table(), "holds", (defect,))


def mul_finding(root: Path, x: torch.Tensor):
    weight = torch.ones(())
    report = check_step(as_step((lambda t: t * weight, (x,))), root=root)
    (found,) = [f for f in report.columns[0].operators if f.operator == "aten::mul.Tensor"]
    return report, found


def test_a_defect_claim_flags_a_model_only_where_its_calls_meet_the_trigger(tmp_path):
    root = triggered_kb(tmp_path, ["complex-input"])
    report, mul = mul_finding(root, torch.randn(4, 3))
    assert mul.status == NATIVE and not report.failed
    (claim,) = [e for e in mul.evidence if "defect-mul" in e.what]
    assert claim.status == "" and "your calls: 0-D and 2-D inputs" in claim.what and claim.what.endswith("not affected")
    report, mul = mul_finding(root, torch.randn(4, 3, dtype=torch.complex64))
    assert mul.status == WRONG and report.failed and "affected" in mul.evidence[-1].what


def test_a_defect_claim_without_a_trigger_flags_every_call(tmp_path):
    report, mul = mul_finding(triggered_kb(tmp_path, []), torch.randn(4, 3))
    assert mul.status == WRONG and report.failed


def test_a_model_that_never_slices_before_the_front_passes_and_one_that_does_is_at_risk(capsys):
    clean_model = str(EXAMPLES / "fft_model.py:spectral_step")
    clean = main(["check", clean_model, "--root", str(ROOT), "--target-backend", "xla"])
    out = capsys.readouterr()
    assert clean == ExitCode.OK, out.out
    risky = str(EXAMPLES / "sliding_window.py:sliding_window_step")
    assert main(["check", risky, "--root", str(ROOT), "--target-backend", "xla"]) == ExitCode.FAILED
    flagged = capsys.readouterr()
    assert "xla-slice-negative-start" in flagged.out and ": affected" in flagged.out
    assert "Traceback" not in out.out + out.err + flagged.out + flagged.err


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(trigger=["negative-slice-start"]), "list them in aten_operators"),
        (dict(aten_operators=["aten::slice"], trigger=["sometimes"]), "trigger.0"),
        (dict(aten_operators=["aten::slice"], trigger=["complex-input", "complex-input"]), "listed twice"),
    ],
)
def test_a_bad_trigger_is_a_clear_error_naming_the_field(tmp_path, fields, message):
    write_claim(tmp_path, "bad-trigger", **fields)
    problems = [str(p) for p in load_claims(tmp_path).problems]
    assert any("bad-trigger.toml" in p and "trigger" in p and message in p for p in problems), problems


def test_the_claims_reference_lists_every_trigger_kind_from_the_code():
    text = (ROOT / "docs" / "claims-reference.md").read_text()
    assert "```{claim-triggers}\n```" in text  # the table of claims.Trigger (tests/doctrees/claim-triggers.txt)
    listed = (ROOT / "tests" / "doctrees" / "claim-triggers.txt").read_text()
    assert all(f"{trigger.value}\n" in listed and trigger.meaning in listed for trigger in Trigger)


# -- errors of the model's own -----------------------------------------------------------------------------------

MODEL = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x @ torch.ones(5, 2)


def factory_raises():
    return {}["model"]


def forward_raises():
    return Net(), (torch.randn(2, 3),)


def loss_raises():
    return torch.nn.Linear(3, 2), (torch.randn(2, 3),), lambda out: out.nonexistent
"""


@pytest.mark.parametrize(
    "function, where, said",
    [
        ("factory_raises", "model.py:10 in factory_raises", "raised KeyError"),
        ("forward_raises", "model.py:6 in forward", "the model's forward pass raised RuntimeError: mat1 and mat2"),
        ("loss_raises", "model.py:18 in <lambda>", "the loss function raised AttributeError"),
        ("syntax", "syntax.py:3", "raised SyntaxError"),
    ],
)
def test_the_models_own_error_is_one_line_naming_its_frame_and_exits_4(tmp_path, capsys, function, where, said):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "syntax.py").write_text("import torch\n\ndef syntax(:\n    pass\n")
    file = "syntax.py" if function == "syntax" else "model.py"
    assert main(["check", f"{tmp_path / file}:{function}", "--root", str(ROOT)]) == ExitCode.CHECK_ERROR == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{tmp_path}/{where}" in err and said in err


def test_a_missing_module_is_a_usage_error_and_a_failing_import_inside_it_the_models(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "imports_missing.py").write_text("import no_such_dependency_here\n\ndef f():\n    pass\n")
    assert main(["check", "no_such_module_here:f", "--root", str(ROOT)]) == ExitCode.USAGE_ERROR
    assert main(["check", "imports_missing:f", "--root", str(ROOT)]) == ExitCode.CHECK_ERROR
    assert "imports_missing.py:1" in capsys.readouterr().err


# -- every target backend, links, SARIF ---------------------------------------------------------------------------


def test_every_report_names_every_target_backend(tmp_path, capsys):
    target = str(EXAMPLES / "native_mlp.py:mlp")
    outputs = ["--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")]
    code = main(["check", target, "--root", str(ROOT), *outputs])
    out = capsys.readouterr().out
    assert code == ExitCode.OK
    data = json.loads((tmp_path / "r.json").read_text())
    assert [b["backend"] for b in data["backends"]] == list(TARGET_BACKENDS)
    page = (tmp_path / "r.html").read_text()
    for backend in TARGET_BACKENDS:
        assert re.search(rf"^  {backend}\s", out, re.M), backend
        assert f"<th>{backend}" in page
    neuron = next(b for b in data["backends"] if b["backend"] == "neuron")
    assert neuron["measured"] == [] and neuron["vendor"] and all(v["publisher"] for v in neuron["vendor"])
    xla = next(b for b in data["backends"] if b["backend"] == "xla")
    assert xla["measured"] and xla["unknown"] < xla["pairs"]


def test_a_targeted_backend_nothing_measured_is_not_checked_and_not_a_usage_error(capsys):
    code = main(["check", str(EXAMPLES / "native_mlp.py:mlp"), "--root", str(ROOT), "--target-backend", "neuron"])
    out = capsys.readouterr().out
    assert code == ExitCode.CHECK_UNVERIFIED == 5
    assert "result: NOT CHECKED: nothing measured on neuron" in out
    assert "neuron  (targeted) not measured" in out


SITE = "https://site.test/torchclaims/"
LINK = r'"([^"]*docs/(?:topics|coverage)/[^"]+)"'  # the report's links into the site (sources link elsewhere)


def test_evidence_links_point_at_the_site_address_the_publisher_set(tmp_path, monkeypatch, capsys):
    target = str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")
    monkeypatch.setenv(SITE_URL_VAR, SITE.rstrip("/"))
    main(["check", target, "--root", str(ROOT), "--json", str(tmp_path / "r.json")])
    urls = re.findall(LINK, (tmp_path / "r.json").read_text())
    assert urls and all(u.startswith(SITE + "docs/") for u in urls)
    main(["check", target, "--root", str(ROOT), "--json", str(tmp_path / "m.json"), "--site-url", "https://x.test"])
    mirrored = re.findall(LINK, (tmp_path / "m.json").read_text())
    assert mirrored and all(u.startswith("https://x.test/docs/") for u in mirrored)


def test_without_a_site_address_links_go_to_the_site_built_here_else_are_paths_from_the_site_root(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.delenv(SITE_URL_VAR, raising=False)
    knowledge = tmp_path / "kb"  # the committed knowledge, in a project with no address and no site built
    knowledge.mkdir()
    for folder in FOLDER_NAMES:
        if (ROOT / folder).is_dir() and folder != BUILD:
            shutil.copytree(ROOT / folder, knowledge / folder)  # a copy, as a checkout holds them
    target = str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")

    def links(name: str) -> list[str]:
        main(["check", target, "--root", str(knowledge), "--json", str(tmp_path / name)])
        return re.findall(LINK, (tmp_path / name).read_text())

    urls = links("r.json")
    assert urls and all(u.startswith("docs/") for u in urls)  # not a guessed address
    assert "evidence links: paths from the site's root (no address: give --site-url" in capsys.readouterr().out
    site = knowledge / PUBLISH_DIR
    site.mkdir(parents=True)
    (site / "index.html").write_text("<html></html>")
    built = links("b.json")
    assert built and all(u.startswith(site.resolve().as_uri() + "/docs/") for u in built)
    (knowledge / "pyproject.toml").write_text('[tool.torchclaims]\nsite-url = "https://kb.test/"\n')
    configured = links("c.json")
    assert configured and all(u.startswith("https://kb.test/docs/") for u in configured)
    assert "evidence links: https://kb.test/ (site-url in pyproject.toml)" in capsys.readouterr().out


def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def test_sarif_validates_and_has_one_result_per_operator_and_backend(tmp_path, capsys):
    target = str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")
    accept = ["--accept", "nn.functional.pixel_shuffle", "--accept", "xla-pixel-shuffle-factor-order"]
    site = ["--site-url", SITE]
    assert main(["check", target, "--root", str(ROOT), "--sarif", str(tmp_path / "r.sarif"), *site, *accept]) == 0
    log = json.loads((tmp_path / "r.sarif").read_text())
    validator().validate(log)
    (run,) = log["runs"]
    keys = [r["partialFingerprints"]["operatorBackend"] for r in run["results"]]
    assert len(keys) == len(set(keys))
    (shuffle,) = [r for r in run["results"] if r["partialFingerprints"]["operatorBackend"].startswith("aten::pixel_sh")]
    assert shuffle["ruleId"] == "known-wrong" and shuffle["properties"]["backend"] == "xla"
    assert all(u.startswith(SITE) for u in shuffle["properties"]["evidence"])
    assert "--accept" in shuffle["properties"]["fix"] and shuffle["suppressions"][0]["kind"] == "external"
    assert shuffle["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("pixel_cnn.py")


def test_the_schema_check_rejects_a_log_that_breaks_it():
    report = check_step(load_target(str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")), root=ROOT)
    log = sarif(report)
    validator().validate(log)
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(log)
