"""``torchclaims check --backend``: the run's evidence beyond its verdict.

Each difference's size against its tolerance and the ``--atol`` that would pass
(a device copy that differs from the CPU by a known amount, run in the real
runner, then run again with the suggested tolerance); the precision mode; each
operator the backend's counters saw fall back; and, where the backend has a
switch that forbids its CPU fallback, a second run with it set before the
runner starts, whose refusals are named in the backend's own words and which
never turns a run that could not check into a pass.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import jsonschema
import pytest

from factories import make_environment, make_record
from test_check import FakeRunner
from torchclaims.backends import all_backends
from torchclaims.check import device_evidence
from torchclaims.check.report import SET_ASIDE
from torchclaims.cli import main
from torchclaims.evidence.records import CheckResult, Measurement

ROOT = Path(__file__).resolve().parents[1]
MLP = str(ROOT / "examples" / "check" / "native_mlp.py:mlp")
SARIF_SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
CLOSE = "<= 1e-05 + 0.0001 x |reference|"  # as check.close writes it with the command's default tolerances
SWITCH = "PYTORCH_ENABLE_MPS_FALLBACK"
# MPS's words when its fallback is forbidden (aten/src/ATen/mps/MPSFallback.mm, mps_error_fallback)
MPS_REFUSAL = (
    "NotImplementedError: The operator 'aten::_fft_r2c' is not currently implemented for the MPS device. "
    "If you want this op to be considered for addition please comment on "
    "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in missing op as well "
    "as commit hash. As a temporary fix, you can set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` "
    "to use the CPU as a fallback for this op. WARNING: this will be slower than running natively on MPS."
)


def outputs_check(error, scale=1.0, outcome="holds", precision="torch.get_float32_matmul_precision() = 'highest'"):
    return CheckResult(
        name="outputs match the CPU",
        outcome=outcome,
        detail="" if outcome == "holds" else "output 0: max abs error exceeds atol",
        measurements=[
            Measurement(name=device_evidence.PRECISION, value=precision),
            Measurement(name="output 0: max abs error", value=error, tolerance=CLOSE),
            Measurement(name="output 0: largest reference magnitude", value=scale),
        ],
    )


def fallback_check(seen: str, outcome="refuted"):
    return CheckResult(
        name=device_evidence.FALLBACK_CHECK,
        outcome=outcome,
        measurements=[Measurement(name=device_evidence.FALLBACK_MEASUREMENT, value=seen)],
    )


# -- reading the record ----------------------------------------------------------------------------------------


def test_a_difference_is_sized_against_its_tolerance_and_the_atol_that_passes_is_suggested():
    record = make_record("check-x", "refuted", checks=[outputs_check(0.0123, scale=2.0, outcome="refuted")])
    (difference,) = device_evidence.differences(record)
    assert (difference.what, difference.max_abs, difference.scale) == ("output 0", 0.0123, 2.0)
    assert difference.allowed == pytest.approx(1e-5 + 1e-4 * 2.0)
    assert difference.ratio == pytest.approx(0.0123 / 2.1e-4) and not difference.passes
    assert device_evidence.passing_atol([difference]) == 0.02
    assert "max abs error 0.0123, 58.6x the 0.00021 allowed (atol 1e-05 + rtol 0.0001 x 2)" in difference.describe()


def test_no_atol_is_suggested_when_every_difference_passes_or_one_is_not_a_number():
    held = device_evidence.differences(make_record("check-x", "holds", checks=[outputs_check(5e-6)]))
    assert held[0].passes and device_evidence.passing_atol(held) is None
    nan = device_evidence.differences(
        make_record("check-x", "refuted", checks=[outputs_check("nan", outcome="refuted")])
    )
    assert nan[0].max_abs is None and not nan[0].passes and device_evidence.passing_atol(nan) is None
    assert "not a number, which no tolerance passes" in nan[0].describe()


def test_a_zero_tolerance_gives_no_ratio_and_the_report_stays_json():
    error = Measurement(name="output 0: max abs error", value=0.25, tolerance="<= 0 + 0 x |reference|")
    scale = Measurement(name="output 0: largest reference magnitude", value=1.0)
    zero = CheckResult(name="outputs match the CPU", outcome="refuted", detail="off", measurements=[error, scale])
    (difference,) = device_evidence.differences(make_record("check-x", "refuted", checks=[zero]))
    assert difference.ratio is None and "max abs error 0.25, over the 0 allowed" in difference.describe()
    json.dumps(asdict(difference), allow_nan=False)
    assert device_evidence.passing_atol([difference]) == 0.3


@pytest.mark.parametrize(
    "value, rounded", [(0.0123, 0.02), (0.03, 0.03), (0.099, 0.1), (1e-5, 1e-5), (1.0000001e-5, 2e-5), (7.0, 7.0)]
)
def test_the_suggested_atol_is_round_and_never_below_the_error(value, rounded):
    assert device_evidence.round_up(value) == rounded >= value


def test_fallbacks_are_read_from_the_counters_measurement_and_a_record_that_does_not_say_is_not_none():
    def seen(*checks):
        return device_evidence.fallbacks(make_record("check-x", "refuted", checks=list(checks)))

    assert seen(fallback_check("aten::_fft_r2c, aten::nonzero")) == ["aten::_fft_r2c", "aten::nonzero"]
    assert seen(fallback_check("none", outcome="holds")) == []
    assert seen(fallback_check("<img src=x onerror=alert(1)>")) is None  # not an operator's name: not read
    assert seen(outputs_check(0.0)) is None  # no fallback check: not "none"
    unsupported = CheckResult(name=device_evidence.FALLBACK_CHECK, outcome="unverified", detail="the CPU reference")
    assert seen(unsupported) is None


def test_the_operators_refused_are_read_in_the_backends_own_words():
    assert device_evidence.refused(f"the script raised {MPS_REFUSAL}\n{MPS_REFUSAL}") == ["aten::_fft_r2c"]
    assert device_evidence.refused("RuntimeError: device lost") == []


def test_each_backends_switch_is_in_force_as_its_variable_says():
    switches = {name: b.fallback_switch for name, b in all_backends().items()}
    mps = switches["mps"]
    assert mps.in_force({}) and mps.in_force({SWITCH: "0"}) and not mps.in_force({SWITCH: "1"})
    assert str(mps) == f"{SWITCH}=0 (the default)"
    assert not switches["neuron"].eager  # TorchNeuron's covers torch.compile graphs only: no added eager run
    assert switches["xla"] is None and switches["cuda"] is None  # torch_xla has none; CUDA has no CPU fallback


# -- through the command ---------------------------------------------------------------------------------------


MPS_ENV = make_environment(backend="mps", device="mps", device_name="Apple MPS (arm64)")


class SwitchedRunner(FakeRunner):
    """An MPS machine whose run gives the next of ``records``; each Runner notes the switch's value in the
    environment it starts in (the fork server inherits it, and MPS reads it when torch loads)."""

    def __init__(self, records):
        super().__init__()
        self.records, self.started_with = list(records), []

    def __call__(self, backend, parallel, log=print):
        self.started_with.append(os.environ.get(SWITCH))
        self.record = self.records.pop(0)
        return self

    def probe(self):
        from torchclaims.run.runner import Probe

        return Probe("mps", "asked for", None, MPS_ENV)


def fallen_back_then_refused():
    """The run as set (the fallback allowed) falls back in _fft_r2c; the run with it forbidden raises there."""
    allowed = make_record(
        "x", "refuted", checks=[outputs_check(2e-6), fallback_check("aten::_fft_r2c")], environment=MPS_ENV
    )
    forbidden = make_record(
        "x", "error", reason=f"the script raised {MPS_REFUSAL}", log_tail=MPS_REFUSAL, environment=MPS_ENV
    )
    return [allowed, forbidden]


def validator():
    schema = json.loads(SARIF_SCHEMA.read_text())
    return jsonschema.Draft4Validator(schema)


def test_where_the_fallback_is_allowed_a_second_run_forbids_it_and_names_what_needs_it(tmp_path, capsys, monkeypatch):
    runner = SwitchedRunner(fallen_back_then_refused())
    monkeypatch.setattr("torchclaims.run.runner.Runner", runner)
    monkeypatch.setenv(SWITCH, "1")  # the team allowed the fallback
    out, report, page, log = (tmp_path / n for n in ("runs", "r.json", "r.html", "r.sarif"))
    options = ["--json", str(report), "--html", str(page), "--sarif", str(log), "--output", str(out)]
    code = main(["check", MLP, "--root", str(ROOT), "--backend", "mps", "--target-backend", "cpu", *options])
    shown = capsys.readouterr().out
    assert code == 0, shown  # parity held as set; the added run's refusal is the finding, not an error
    assert runner.started_with == ["1", "0"] and os.environ[SWITCH] == "1"  # set before it started, then restored
    assert "run on mps (CPU fallback forbidden: PYTORCH_ENABLE_MPS_FALLBACK=0 (the default)): error" in shown
    assert "ran on the CPU through the fallback: aten::_fft_r2c" in shown
    assert "raised with the fallback forbidden, so it needs it: aten::_fft_r2c" in shown
    assert SET_ASIDE in shown and "output 0: max abs error 2e-06" in shown
    assert "precision mode: torch.get_float32_matmul_precision() = 'highest'" in shown
    data = json.loads(report.read_text())
    plain, added = data["measured"]
    assert (plain["added"], plain["fallbacks"], added["added"], added["refused"]) == (
        False,
        ["aten::_fft_r2c"],
        True,
        ["aten::_fft_r2c"],
    )
    assert plain["differences"][0]["ratio"] == pytest.approx(2e-6 / 1.1e-4)
    html = page.read_text()
    assert "Raised with the fallback forbidden, so it needs it: <code>aten::_fft_r2c</code>" in html
    sarif = json.loads(log.read_text())
    validator().validate(sarif)
    measured = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "measured-cpu-fallback"]
    assert len(measured) == 2 and all(f"{SWITCH}=0" in r["properties"]["fix"] for r in measured)
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 2 and files[0].endswith("-fallback-forbidden.json"), files


def test_where_the_switch_is_in_force_already_one_run_and_its_error_is_not_a_pass(tmp_path, capsys, monkeypatch):
    """The default on MPS: the run as set has the fallback forbidden. It is the only evidence, so its
    refusal makes the result an error (no parity measured), never the pass an added run's would leave."""
    runner = SwitchedRunner(fallen_back_then_refused()[1:])
    monkeypatch.setattr("torchclaims.run.runner.Runner", runner)
    monkeypatch.delenv(SWITCH, raising=False)
    options = ["--backend", "mps", "--target-backend", "cpu", "--output", str(tmp_path / "run.json")]
    assert main(["check", MLP, "--root", str(ROOT), *options]) == 4
    shown = capsys.readouterr().out
    assert runner.started_with == [None] and SET_ASIDE not in shown
    assert "raised with the fallback forbidden, so it needs it: aten::_fft_r2c" in shown
    assert "result: ERROR: the run on mps errored: the script raised NotImplementedError" in shown


def test_a_parity_failure_in_the_added_run_fails_the_report(tmp_path, capsys, monkeypatch):
    held = make_record("x", "holds", checks=[outputs_check(2e-6)], environment=MPS_ENV)
    off = make_record("x", "refuted", checks=[outputs_check(0.5, outcome="refuted")], environment=MPS_ENV)
    monkeypatch.setattr("torchclaims.run.runner.Runner", SwitchedRunner([held, off]))
    monkeypatch.setenv(SWITCH, "1")
    log = tmp_path / "r.sarif"
    options = ["--backend", "mps", "--target-backend", "cpu", "--output", str(tmp_path / "o"), "--sarif", str(log)]
    assert main(["check", MLP, "--root", str(ROOT), *options]) == 1
    shown = capsys.readouterr().out
    assert "result: FAILED: parity failed on mps (CPU fallback forbidden" in shown
    assert "--atol 0.5 would pass every difference" in shown
    (parity,) = [r for r in json.loads(log.read_text())["runs"][0]["results"] if r["ruleId"] == "measured-parity"]
    assert parity["level"] == "error" and parity["properties"]["passing_atol"] == 0.5
    assert "precision mode" in parity["properties"]["fix"]


SHIFTED = """
import torch

SHIFT = 0.0123


class ShiftedOnDevice(torch.nn.Linear):
    '''Its device copy (the one the step moves with .to) adds SHIFT to every output: a known difference.'''

    shift = 0.0

    def _apply(self, fn, *args, **kwargs):
        self.shift = SHIFT
        return super()._apply(fn, *args, **kwargs)

    def forward(self, x):
        return super().forward(x) + self.shift


def step():
    torch.manual_seed(0)
    return ShiftedOnDevice(4, 2), (torch.randn(3, 4),)
"""


@pytest.mark.processes
def test_a_device_that_differs_by_a_known_amount_gets_that_size_and_an_atol_that_then_passes(tmp_path, capsys):
    model = tmp_path / "shifted.py"
    model.write_text(SHIFTED)
    target = f"{model}:step"
    base = ["check", target, "--root", str(ROOT), "--backend", "cpu", "--target-backend", "cpu"]
    report = tmp_path / "r.json"
    assert main([*base, "--output", str(tmp_path / "a.json"), "--json", str(report)]) == 1
    shown = capsys.readouterr().out
    (run,) = json.loads(report.read_text())["measured"]
    (difference,) = run["differences"]
    assert difference["max_abs"] == pytest.approx(0.0123, rel=1e-4)  # float32 outputs: the shift, to rounding
    assert difference["allowed"] == pytest.approx(1e-5 + 1e-4 * difference["scale"])
    assert run["passing_atol"] == 0.02 and "--atol 0.02 would pass every difference" in shown
    assert run["precision"].startswith("torch.get_float32_matmul_precision() = ")
    assert run["fallbacks"] is None  # the CPU reference has no fallback to see: not "none"
    assert main([*base, "--output", str(tmp_path / "b.json"), "--atol", str(run["passing_atol"])]) == 0
    assert "measured parity held on cpu" in capsys.readouterr().out


def test_a_static_fallback_finding_names_the_backends_switch_or_that_it_has_none():
    from torchclaims.check import check_step
    from torchclaims.check.sarif import sarif
    from torchclaims.check.target import load_target

    report = check_step(load_target(str(ROOT / "examples" / "check" / "fft_model.py:spectral_step")), root=ROOT)
    results = sarif(report)["runs"][0]["results"]
    (r2c,) = [r for r in results if r["partialFingerprints"]["operatorBackend"] == "aten::_fft_r2c|float32|xla"]
    assert r2c["ruleId"] == "cpu-fallback"
    assert "no switch forbids the CPU fallback on xla" in r2c["properties"]["fix"]
