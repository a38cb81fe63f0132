"""``torchclaims check``: a model's operators looked up in the tables and defect claims, and run on a backend.

The examples in examples/check/ are checked against the committed results
(the findings asserted are what those tables and claims say), and against a
small knowledge base written here, whose tables and verdicts are known, to
show each finding can fail for the reason it states.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torchclaims
from factories import make_environment, make_kb, make_record, script_info, write_claim, write_results_file
from torchclaims.check import check_step, html_report
from torchclaims.check.names import aten_names
from torchclaims.check.recorder import record_step
from torchclaims.check.report import BY_NAME, EXACT, FALLBACK, NATIVE, NOT_COVERED, RAISES, WRONG
from torchclaims.check.target import as_step, load_target
from torchclaims.cli import main
from torchclaims.coverage.operators import OUTCOMES
from torchclaims.errors import TorchclaimsError
from torchclaims.evidence.coverage_table import SweepTable, TableBuilder
from torchclaims.evidence.records import CheckResult

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "check"
XLA_290 = "xla · torch_xla 2.9.0 on torch 2.9.0+cu128 (CUDA build)"


def static(target: str, **options):
    options.setdefault("site_url", "")  # paths from the site's root, whether or not a site is built here
    return check_step(load_target(str(EXAMPLES / target)), root=ROOT, target=target, **options)


def column(report, label):
    (found,) = [c for c in report.columns if c.label == label]
    return found


def finding(col, operator, dtype="float32"):
    (found,) = [f for f in col.operators if f.operator == operator and f.dtype == dtype]
    return found


# -- the examples, against the committed results ------------------------------------------


def test_pixel_shuffle_model_is_flagged_on_torch_xla_290_with_its_defect_claim():
    report = static("pixel_cnn.py:pixel_cnn_step")
    shuffle = finding(column(report, XLA_290), "aten::pixel_shuffle")
    assert shuffle.status == WRONG and shuffle.phases == ["forward"]
    urls = [e.url for e in shuffle.evidence]
    assert (
        "docs/topics/op-coverage.html#claim-xla-pixel-shuffle-factor-order"
        "--xla--torch-xla-2-9-0-on-torch-2-9-0-cu128-cuda-build"
    ) in urls
    assert column(report, XLA_290).flagged and report.failed
    cpu = [c for c in report.columns if c.backend == "cpu"]
    assert cpu and all(finding(c, "aten::pixel_shuffle").status == NATIVE for c in cpu)


def test_fft_model_dispatches_fft_kernels_and_its_slice_does_not_meet_the_xla_defect():
    """The fft rows are named for the kernels the model dispatches, so they speak for its FFTs whatever
    else their samples dispatched: on torch_xla they fall back to the CPU, as the device run sees
    (test_examples_on_torch_xla_on_the_cpu); the slice of its complex spectrum never starts before the
    front, which the refuted defect claim on torch_xla needs."""
    report = static("fft_model.py:spectral_step")
    used = {(u["operator"], u["dtype"]) for u in report.used}
    assert ("aten::_fft_r2c", "float32") in used and ("aten::_fft_c2r", "complex64") in used
    xla = column(report, XLA_290)
    r2c = finding(xla, "aten::_fft_r2c")
    assert r2c.status == FALLBACK and any("row fft.rfft [float32]: CPU fallback" in e.what for e in r2c.evidence)
    sliced = finding(xla, "aten::slice.Tensor", "complex64")
    (claim,) = [e for e in sliced.evidence if "xla-slice-negative-start" in e.what]
    assert sliced.status != WRONG and claim.status == "" and claim.what.endswith(": not affected")


def test_hf_training_step_records_the_backward_pass_and_its_architecture_row():
    report = static("hf_causal_lm.py:tiny_llama_step")
    phases = {u["operator"]: u["phases"] for u in report.used}
    assert phases["aten::embedding_dense_backward"] == ["backward"]
    assert report.architecture == "llama"
    arch = column(report, XLA_290).architecture
    assert arch is not None and arch.url.endswith("architectures.html?row=llama")
    assert finding(column(report, XLA_290), "aten::embedding_dense_backward").status == NOT_COVERED


def test_native_model_is_clean_with_the_releases_covered(capsys):
    code = main(["check", str(EXAMPLES / "native_mlp.py:mlp"), "--root", str(ROOT)])
    out = capsys.readouterr().out
    assert code == 0
    assert XLA_290 in out and "cpu · torch 2.13.0" in out
    assert "result: no operator is known wrong on a targeted backend" in out
    report = static("native_mlp.py:mlp")
    statuses = {f.status for c in report.columns for f in c.operators}
    assert WRONG not in statuses and RAISES not in statuses


def test_cli_exits_1_for_known_wrong_and_narrowing_or_accepting_lets_it_pass(capsys):
    target = str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")
    assert main(["check", target, "--root", str(ROOT)]) == 1
    assert main(["check", target, "--root", str(ROOT), "--target-backend", "cpu"]) == 0
    accepted = ["--accept", "nn.functional.pixel_shuffle", "--accept", "xla-pixel-shuffle-factor-order"]
    assert main(["check", target, "--root", str(ROOT), "--target-backend", "xla", *accepted]) == 0
    assert "opinfo-coverage row nn.functional.pixel_shuffle [float32]: mismatch (accepted)" in capsys.readouterr().out


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["check", "nowhere.py:f", "--root", str(ROOT)]) == 2
    assert main(["check", "no-colon", "--root", str(ROOT)]) == 2
    (tmp_path / "bad.py").write_text("def f():\n    return 3\n")
    assert main(["check", f"{tmp_path / 'bad.py'}:f", "--root", str(ROOT)]) == 2
    assert "expected (model, example_inputs" in capsys.readouterr().err
    assert main(["check", str(EXAMPLES / "native_mlp.py:mlp"), "--root", str(ROOT), "--target-backend", "nope"]) == 2
    assert main(["check", str(EXAMPLES / "native_mlp.py:mlp"), "--root", str(ROOT), "--backend", "nope"]) == 2
    assert main(["check", str(EXAMPLES / "native_mlp.py:mlp"), "--root", str(tmp_path)]) == 2


def test_python_api_is_torchclaims_check():
    model = torch.nn.Linear(4, 2)
    report = torchclaims.check(model, (torch.randn(3, 4),), loss=lambda out: out.sum(), root=ROOT)
    assert {"aten::addmm", "aten::t"} <= {u["operator"] for u in report.used}
    assert any("backward" in u["phases"] for u in report.used)
    assert "torchclaims check Linear" in torchclaims.check.summary(report)


# -- a knowledge base whose answers are known -----------------------------------------------

XLA_ENV = dict(
    backend="xla", device="xla:0", device_name="XLA CPU (test)", packages={"torch": "2.13.0", "torch_xla": "2.9.0"}
)


def table(operators: dict[str, list[str]] | None, codes: dict[str, str]) -> SweepTable:
    builder = TableBuilder("operators", "operator", list(codes), {"float32": OUTCOMES})
    for row, code in codes.items():
        builder.set(row, "float32", code, f"detail of {row}")
        if operators is not None:
            builder.add_operators(row, operators.get(row, ()))
    return builder.table()


def knowledge_base(root: Path, sweep: SweepTable, defect_verdict: str = "refuted") -> Path:
    make_kb(root, "opinfo-coverage", "defect-mul")
    write_claim(root / "claims", "defect-mul", topic="op-coverage", aten_operators=["aten::mul"])
    records = [
        make_record(
            "opinfo-coverage",
            "refuted",
            environment=XLA_ENV,
            tables=[sweep],
            script=script_info(root, "opinfo-coverage"),
        ),
        make_record("defect-mul", defect_verdict, environment=XLA_ENV, script=script_info(root, "defect-mul")),
    ]
    write_results_file(root / "results" / "xla.json", records, make_environment(**XLA_ENV))
    return root


def scale_step():
    weight = torch.nn.Parameter(torch.ones(3))
    return as_step((lambda x: torch.relu(x * weight), (torch.randn(4, 3),)), "scale")


def test_exact_rows_speak_for_the_operator_they_are_named_for_whatever_else_they_dispatched(tmp_path):
    sweep = table(
        {
            "relu": ["aten::relu", "aten::clamp"],  # the model never calls clamp: relu's row still speaks for relu
            "mul": ["aten::mul.Tensor"],
            "softplus": ["aten::relu", "aten::softplus"],  # named for softplus: its mismatch is not relu's
        },
        {"relu": "N", "mul": "F", "softplus": "M"},
    )
    report = check_step(scale_step(), root=knowledge_base(tmp_path, sweep, "holds"))
    (col,) = report.columns
    assert col.matching == EXACT
    relu = finding(col, "aten::relu")
    assert relu.status == NATIVE and [e.what for e in relu.evidence] == ["opinfo-coverage row relu [float32]: native"]
    assert finding(col, "aten::mul.Tensor").status == FALLBACK  # the defect claim holds: cited, judges nothing
    assert not report.failed


def test_a_mismatching_row_flags_the_model_and_breaks_the_gate(tmp_path):
    sweep = table({"relu": ["aten::relu"], "mul": ["aten::mul.Tensor"]}, {"relu": "M", "mul": "N"})
    report = check_step(scale_step(), root=knowledge_base(tmp_path, sweep, "holds"))
    (col,) = report.columns
    assert finding(col, "aten::relu").status == WRONG and report.failed
    narrowed = check_step(scale_step(), root=tmp_path, targets={"xla"}, accept=["relu"])
    assert not narrowed.failed


def test_a_refuted_defect_claim_flags_the_operators_it_names(tmp_path):
    sweep = table(None, {"relu": "N", "mul": "N"})
    report = check_step(scale_step(), root=knowledge_base(tmp_path, sweep, "refuted"), site_url="")
    (col,) = report.columns
    assert col.matching == BY_NAME
    mul = finding(col, "aten::mul.Tensor")
    assert mul.status == WRONG
    assert mul.evidence[-1].url == "docs/topics/op-coverage.html#claim-defect-mul--xla--torch-xla-2-9-0-on-torch-2-13-0"
    assert finding(col, "aten::relu").status == NATIVE


def test_rows_outside_the_model_and_dtypes_outside_the_table_are_not_covered(tmp_path):
    sweep = table({"softplus": ["aten::relu", "aten::softplus"]}, {"softplus": "M"})
    report = check_step(scale_step(), root=knowledge_base(tmp_path, sweep, "holds"))
    relu = finding(report.columns[0], "aten::relu")
    assert relu.status == NOT_COVERED and "no row of the operator table is named for it and dispatched it" in relu.note
    double = as_step((lambda x: torch.relu(x), (torch.randn(3, dtype=torch.float64),)))
    relu_table = table({"relu": ["aten::relu"]}, {"relu": "N"})
    (f,) = check_step(double, root=knowledge_base(tmp_path / "relu", relu_table)).columns[0].operators
    assert f.status == NOT_COVERED and "no float64 column" in f.note


def test_html_report_escapes_what_it_shows_and_keeps_the_links(tmp_path):
    sweep = table({"relu": ["aten::relu"]}, {"relu": "M"})
    report = check_step(
        scale_step(), root=knowledge_base(tmp_path, sweep), target="<script>alert(1)</script>", site_url=""
    )
    page = html_report.render(report)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="docs/coverage/operators.html?row=relu"' in page
    assert "tc-o-mismatch" in page  # the site's outcome colours


def test_json_report_carries_every_finding(tmp_path, capsys):
    sweep = table({"relu": ["aten::relu"]}, {"relu": "N"})
    knowledge_base(tmp_path, sweep, "holds")
    (tmp_path / "model.py").write_text("import torch\n\ndef step():\n    return torch.nn.ReLU(), (torch.randn(2),)\n")
    assert main(["check", f"{tmp_path / 'model.py'}:step", "--root", str(tmp_path), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failed"] is False
    assert data["columns"][0]["operators"][0]["status"] == NATIVE


# -- the parts ----------------------------------------------------------------------------


def test_recorder_separates_forward_and_backward():
    step = scale_step()
    step.loss = lambda out: out.sum()
    used = {(u.name, u.dtype): u for u in record_step(step)}
    assert used[("aten::relu", "float32")].phases == {"forward"}
    assert used[("aten::threshold_backward", "float32")].phases == {"backward"}


@pytest.mark.parametrize(
    "row, expected",
    [
        ("nn.functional.pixel_shuffle", "aten::pixel_shuffle"),
        ("linalg.vector_norm", "aten::linalg_vector_norm"),
        ("fft.rfft", "aten::_fft_r2c"),
        ("max.reduction_with_dim", "aten::max"),
        ("add", "aten::add"),
    ],
)
def test_name_mapping(row, expected):
    assert expected in aten_names(row)


def test_table_rejects_hostile_operator_lists():
    good = table({"relu": ["aten::relu"]}, {"relu": "N"}).model_dump()
    for operators in ({5: ["aten::relu"]}, {0: ["<img src=x>"]}, {0: [f"aten::op{i}" for i in range(65)]}):
        with pytest.raises(ValueError):
            SweepTable.model_validate({**good, "operators": operators})


@pytest.mark.own_process  # op_db freezes the torch.backends flags (tests/conftest.py)
def test_sweep_cell_records_the_operators_its_samples_dispatched():
    from torch.testing._internal.common_methods_invocations import op_db

    from torchclaims.coverage.fallback import NoFallback
    from torchclaims.coverage.op_check import check_cell

    (shuffle,) = [op for op in op_db if op.name == "nn.functional.pixel_shuffle"]
    answer = check_cell(
        shuffle,
        "float32",
        torch.device("cpu"),
        atol=1e-3,
        rtol=1e-3,
        compare_with_cpu=True,
        probe=NoFallback(),
        sync=lambda: None,
        max_samples=2,
    )
    assert answer["operators"] == ["aten::pixel_shuffle"]


# -- on a backend ---------------------------------------------------------------------------


@pytest.mark.processes
def test_backend_run_on_the_cpu_writes_a_record_that_diff_accepts(tmp_path, capsys):
    target = str(EXAMPLES / "native_mlp.py:mlp")
    out = tmp_path / "run.json"
    assert main(["check", target, "--root", str(ROOT), "--backend", "cpu", "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "holds      outputs match the CPU" in captured.out
    assert "torchclaims: running check-" in captured.err and "[1/1 done, " in captured.err  # progress, off the report
    shutil.copy(out, tmp_path / "again.json")
    assert main(["diff", str(out), str(tmp_path / "again.json"), "--root", str(tmp_path)]) == 0
    assert "1 claims compared, 0 changed verdict" in capsys.readouterr().out


def test_a_model_file_under_tmp_is_seen_by_the_sandboxed_step(tmp_path, monkeypatch, capsys):
    """The sandbox hides /tmp from a script: the step's model file must be bound back in,
    wherever it lies (a team's file in a temporary folder, a clone under /tmp)."""
    model = tmp_path / "models" / "tmp_model.py"
    model.parent.mkdir()
    model.write_text((EXAMPLES / "native_mlp.py").read_text())
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # neither the working folder nor sys.path holds the model
    out = tmp_path / "run.json"
    code = main(["check", f"{model}:mlp", "--root", str(ROOT), "--backend", "cpu", "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]
    assert "holds      outputs match the CPU" in printed


WRITER_MODEL = """
from pathlib import Path

import torch


def write(path):
    try:
        path.write_text("written")
    except OSError:
        pass


for path in (Path(__file__).parents[1] / "outside", Path(__file__).with_name("beside"), Path.home() / "mark"):
    write(path)


def step():
    write(Path.home() / "in-step")
    return torch.nn.Linear(4, 2), (torch.randn(3, 4),)
"""


def test_a_model_whose_code_writes_outside_its_folder_fails_to_and_is_still_checked(tmp_path, monkeypatch, capsys):
    """The model's import and its step run in the claim scripts' sandbox, in static mode too."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    model = tmp_path / "models" / "writer.py"
    model.parent.mkdir()
    model.write_text(WRITER_MODEL)
    code = main(["check", f"{model}:step", "--root", str(ROOT), "--target-backend", "cpu"])
    printed = capsys.readouterr()
    assert code == 0, printed.err[-3000:]
    assert "result: no operator is known wrong on a targeted backend" in printed.out
    assert [
        p for p in (tmp_path / "outside", model.with_name("beside"), home / "mark", home / "in-step") if p.exists()
    ] == []


def trace_record(*values, runs="holds", detail="", failed_as=""):
    """A trace's record whose operator measurements are ``values`` (model type first)."""
    from torchclaims.check.traced import FAILED_AS, MODEL_TYPE, OPERATOR, RUNS, TRACED
    from torchclaims.evidence.records import Measurement

    measurements = [Measurement(name=MODEL_TYPE, value="llama")] + [Measurement(name=OPERATOR, value=v) for v in values]
    said = [Measurement(name=FAILED_AS, value=failed_as)] if failed_as else []
    checks = [CheckResult(name=RUNS, outcome=runs, detail=detail, measurements=said)]
    if runs == "holds":
        checks.append(CheckResult(name=TRACED, outcome="holds", measurements=measurements))
    return make_record("check-trace", runs, checks=checks, reason="")


GOOD_OPERATOR = {
    "operator": "aten::addmm",
    "dtype": "float32",
    "phases": ["forward"],
    "calls": 1,
    "ranks": [1, 2],
    "kinds": ["zero-dim-input"],
    "out_dtypes": ["float32"],
}


@pytest.mark.parametrize(
    "bad, said",
    [
        ("{not json", "measurement 2 (operator): not JSON"),
        (json.dumps({**GOOD_OPERATOR, "operator": "<script>x</script>"}), "operator: '<script>x</script>' is not one"),
        (json.dumps({**GOOD_OPERATOR, "dtype": "float32\u202e"}), "dtype"),
        (json.dumps({**GOOD_OPERATOR, "phases": ["sideways"]}), "phases must be forward and/or backward"),
        (json.dumps({**GOOD_OPERATOR, "calls": True}), "calls must be a whole number"),
        (json.dumps({**GOOD_OPERATOR, "ranks": [65]}), "ranks must be whole numbers from 0 to 64"),
        (json.dumps({**GOOD_OPERATOR, "kinds": ["<b>"]}), "kinds must be among complex-input"),
        (json.dumps({**GOOD_OPERATOR, "out_dtypes": ["<i>"]}), "out_dtypes: '<i>' is not one"),
        (json.dumps({**GOOD_OPERATOR, "extra": 1}), "needs exactly calls, dtype, kinds, operator, out_dtypes, phases"),
    ],
)
def test_a_trace_whose_measurement_is_malformed_is_an_error_naming_it(bad, said):
    from torchclaims.check.traced import read_trace

    traced = read_trace(trace_record(json.dumps(GOOD_OPERATOR)), "m.py:f")
    assert ([u.as_dict() for u in traced.used], traced.model_type) == ([GOOD_OPERATOR], "llama")
    with pytest.raises(TorchclaimsError, match=re.escape(said)) as raised:
        read_trace(trace_record(json.dumps(GOOD_OPERATOR), bad), "m.py:f")
    assert "the trace of m.py:f, measurement 2 (operator)" in str(raised.value)


def test_a_trace_that_could_not_load_its_target_is_a_usage_error_and_one_that_broke_a_model_error():
    from torchclaims.check.model_errors import ModelError
    from torchclaims.check.traced import MODEL, USAGE, read_trace
    from torchclaims.errors import UsageError

    with pytest.raises(UsageError, match="m.py: has no function 'f'"):
        read_trace(trace_record(runs="refuted", detail="m.py: has no function 'f'", failed_as=USAGE), "m.py:f")
    with pytest.raises(ModelError, match="importing m.py raised"):
        read_trace(trace_record(runs="refuted", detail="importing m.py raised ValueError", failed_as=MODEL), "m.py:f")
    broken = make_record("check-trace", "error", reason="the script raised RuntimeError: boom", log_tail="x\ny\n")
    with pytest.raises(ModelError, match=r"tracing m.py:f failed \(error\): the script raised .*boom; y"):
        read_trace(broken, "m.py:f")


@pytest.mark.processes
def test_where_the_sandbox_is_off_the_summary_says_so_and_under_ci_the_model_does_not_run(monkeypatch, capsys):
    """As for a claim script (torchclaims.run.sandbox): unconfined runs are named, and refused where CI=true."""
    target = str(EXAMPLES / "native_mlp.py:mlp")
    monkeypatch.setenv("TORCHCLAIMS_SANDBOX", "off")
    monkeypatch.delenv("CI", raising=False)
    assert main(["check", target, "--root", str(ROOT)]) == 0
    assert "the model's code ran without sandbox: turned off (TORCHCLAIMS_SANDBOX=off)" in capsys.readouterr().out
    monkeypatch.setenv("CI", "true")
    assert main(["check", target, "--root", str(ROOT)]) == 4  # the model could not run: no evidence either way
    assert "the sandbox is required here (CI=true)" in capsys.readouterr().err


class FakeRunner:
    """The isolated runner as backend mode uses it, on a CUDA machine whose run gives ``record``
    (``unavailable``: why the probe found the backend not usable)."""

    def __init__(self, record=None, unavailable=None):
        self.record, self.unavailable, self.env = record, unavailable, {}

    def __call__(self, backend, parallel, log=print):
        return self

    def sandbox_stops_device(self):
        return None  # the device works in the sandbox (torchclaims.run.runner.Runner.sandbox_stops_device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def probe(self):
        from torchclaims.run.runner import Probe

        return Probe("cuda", "asked for", self.unavailable, CUDA_ENV)

    def run(self, jobs, environment, **progress):  # on_done, on_tick: what a run reports as it goes
        (job,) = jobs
        return {job.claim_id: self.record.model_copy(update={"claim_id": job.claim_id, "environment": environment})}


CUDA_ENV = make_environment(backend="cuda", device="cuda:0", device_name="NVIDIA H200")
PARITY = [CheckResult(name="outputs match the CPU", outcome="holds")]
CRASH_LOG = "Traceback (most recent call last):\n  File step_script.py\n\nRuntimeError: CUDA error: no device\n"


@pytest.mark.parametrize(
    "runner, code, result, line",
    [
        (  # the case seen on an H200: the step never ran, and the record is an error with its cause and log
            FakeRunner(
                make_record(
                    "x", "error", reason="the script raised RuntimeError: CUDA error: no device", log_tail=CRASH_LOG
                )
            ),
            4,
            "error",
            "result: ERROR: the run on cuda errored: the script raised RuntimeError: CUDA error: no device",
        ),
        (  # parity held, but another check broke: an error still, never a pass
            FakeRunner(
                make_record(
                    "x",
                    "error",
                    reason="torch.compile traces the step without graph breaks: AssertionError: dynamo",
                    checks=[
                        *PARITY,
                        CheckResult(name="torch.compile traces the step without graph breaks", outcome="error"),
                    ],
                )
            ),
            4,
            "error",
            "result: ERROR: the run on cuda errored: torch.compile traces the step without graph breaks: Assertion",
        ),
        (
            FakeRunner(unavailable="torch.cuda.is_available() is False"),
            5,
            "unverified",
            "result: NOT CHECKED: could not check cuda: backend cuda is not usable here: torch.cuda.is_available()",
        ),
        (
            FakeRunner(make_record("x", "unverified", reason="the step could not be checked here")),
            5,
            "unverified",
            "result: NOT CHECKED: could not check cuda: the step could not be checked here",
        ),
        (
            FakeRunner(
                make_record(
                    "x", "refuted", checks=[CheckResult(name="outputs match the CPU", outcome="refuted", detail="off")]
                )
            ),
            1,
            "failed",
            "result: FAILED: parity failed on cuda",
        ),
        (FakeRunner(make_record("x", "holds", checks=PARITY)), 0, "passed", "and measured parity held on cuda"),
    ],
    ids=["step-errored", "check-errored", "backend-not-usable", "record-unverified", "parity-failed", "parity-held"],
)
def test_a_backend_run_reads_as_what_its_record_says(tmp_path, capsys, monkeypatch, runner, code, result, line):
    """An error or a backend not checked is neither a pass nor a parity failure: its own line, exit status and
    JSON result, with the cause; a parity failure keeps its own."""
    monkeypatch.setattr("torchclaims.run.runner.Runner", runner)
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    target = str(EXAMPLES / "native_mlp.py:mlp")
    options = ["--backend", "cuda", "--target-backend", "cpu", "--json", str(report), "--html", str(page)]
    assert main(["check", target, "--root", str(ROOT), "--output", str(tmp_path / "run.json"), *options]) == code
    out = capsys.readouterr().out
    assert line in out.splitlines()[-2], out  # the line before "wrote r.html"
    assert ("parity failed" in out) == (result == "failed")
    data = json.loads(report.read_text())
    (run,) = data["measured"]
    assert (data["result"], data["failed"]) == (result, result == "failed")
    assert run["outcome"] == {"failed": "refuted", "passed": "holds"}.get(result, result)
    assert html_report.Markup.escape(line.removeprefix("result: ")) in page.read_text()
    if run["reason"].startswith("the script raised"):
        assert run["log_tail"] == CRASH_LOG and "  | RuntimeError: CUDA error: no device" in out
        assert "RuntimeError: CUDA error: no device\n</pre>" in page.read_text()
    results = json.loads((tmp_path / "run.json").read_text())  # the record, for torchclaims diff, whatever it says
    assert results["records"][0]["verdict"] == data["measured"][0]["verdict"]


class BrokenRunner(FakeRunner):
    def probe(self):
        raise TorchclaimsError("probing backend 'cuda' crashed (exit code -11)")


def test_a_runner_that_breaks_before_any_record_is_an_error_not_a_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("torchclaims.run.runner.Runner", BrokenRunner())
    target = str(EXAMPLES / "native_mlp.py:mlp")
    options = ["--backend", "cuda", "--target-backend", "cpu", "--output", str(tmp_path / "run.json")]
    assert main(["check", target, "--root", str(ROOT), *options]) == 4
    out = capsys.readouterr().out
    assert "run on cuda: error, no evidence either way (no record)" in out
    assert (
        out.splitlines()[-1] == "result: ERROR: the run on cuda errored: probing backend 'cuda' crashed (exit code -11)"
    )
    assert not (tmp_path / "run.json").exists()


@pytest.mark.processes
def test_a_step_that_raises_in_the_runner_is_an_error_with_the_end_of_its_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(tmp_path)  # the sandbox shows the step what is on sys.path, the model's folder not yet
    (tmp_path / "broken.py").write_text(
        "import os\nimport torch\n\n\nclass Broken(torch.nn.Linear):\n    def forward(self, x):\n"
        "        if 'TORCHCLAIMS_CHECK_TARGET' in os.environ:  # in the backend run only\n"
        "            raise RuntimeError('device lost')\n        return super().forward(x)\n\n\n"
        "def step():\n    return Broken(4, 2), (torch.randn(3, 4),)\n"
    )
    target, out = f"{tmp_path / 'broken.py'}:step", str(tmp_path / "run.json")
    code = main(["check", target, "--root", str(ROOT), "--backend", "cpu", "--target-backend", "cpu", "--output", out])
    shown = capsys.readouterr().out
    assert code == 4, shown
    assert "result: ERROR: the run on cpu errored: the script raised RuntimeError: device lost" in shown
    assert "  | RuntimeError: device lost" in shown and "parity failed" not in shown


def xla_python() -> str | None:
    """An interpreter with torch_xla: this one, or $TORCHCLAIMS_XLA_PYTHON."""
    try:
        import torch_xla  # noqa: F401

        return sys.executable
    except ImportError:
        return os.environ.get("TORCHCLAIMS_XLA_PYTHON")


@pytest.mark.parametrize(
    "target, flagged, code",
    [
        ("pixel_cnn.py:pixel_cnn_step", "aten::pixel_shuffle", 1),  # known wrong on torch_xla (the static findings)
        ("fft_model.py:spectral_step", "aten::_fft_r2c", 0),  # falls back to the CPU, which only the run reports
        ("hf_causal_lm.py:tiny_llama_step", "aten::nll_loss_forward", 1),
    ],
)
def test_examples_on_torch_xla_on_the_cpu(tmp_path, target, flagged, code):
    python = xla_python()
    if python is None:
        pytest.skip("no torch_xla here: set TORCHCLAIMS_XLA_PYTHON to an interpreter that has it")
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": f"{ROOT / 'src'}"}
    run = subprocess.run(
        [
            python,
            "-m",
            "torchclaims",
            "check",
            str(EXAMPLES / target),
            "--root",
            str(ROOT),
            "--backend",
            "xla",
            "--output",
            str(tmp_path / "xla.json"),
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == code, run.stdout + run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (measured,) = report["measured"]
    checks = {c["name"]: c["outcome"] for c in measured["checks"]}
    assert checks["outputs match the CPU"] == "holds"
    assert "the same input shape compiles nothing the second time" in checks
    assert checks["torch.compile traces the step without graph breaks"] in ("holds", "refuted")  # it ran
    if flagged == "aten::_fft_r2c":  # torch_xla's counters saw the FFTs run on the CPU
        (fallback,) = [c for c in measured["checks"] if c["name"] == "the step runs without a CPU fallback"]
        assert fallback["outcome"] == "refuted" and "aten::_fft_r2c" in fallback["detail"]
    else:  # the static findings: the committed xla table's own row for the operator
        xla = [c for c in report["columns"] if c["label"] == XLA_290][0]
        assert any(f["operator"] == flagged and f["status"] in (WRONG, FALLBACK) for f in xla["operators"])
    results = json.loads((tmp_path / "xla.json").read_text())
    assert results["environment"]["backend"] == "xla" and results["records"][0]["claim_id"].startswith("check-")


def test_pytest_helper_fails_with_the_summary_when_the_gate_fails(tmp_path):
    from torchclaims.check.testing import assert_moves

    knowledge_base(tmp_path, table({"relu": ["aten::relu"]}, {"relu": "M"}), "holds")
    with pytest.raises(AssertionError, match="known wrong on xla · torch_xla 2.9.0"):
        assert_moves(torch.nn.ReLU(), (torch.randn(3),), root=tmp_path)
    assert_moves(torch.nn.ReLU(), (torch.randn(3),), root=tmp_path, accept=["relu"])


@pytest.mark.processes
def test_a_training_step_run_on_the_cpu_has_its_gradient_check_judged_again_as_it_says(tmp_path, capsys):
    """The build judges every record again from its measurements: the gradients' worst error
    must come with the reference magnitude it is judged against, or the run is an error."""
    target = str(EXAMPLES / "pixel_cnn.py:pixel_cnn_step")
    out = tmp_path / "run.json"
    code = main(
        ["check", target, "--root", str(ROOT), "--backend", "cpu", "--target-backend", "cpu", "--output", str(out)]
    )
    shown = capsys.readouterr().out
    assert "holds      gradients match the CPU" in shown, shown
    assert code == 0, shown
