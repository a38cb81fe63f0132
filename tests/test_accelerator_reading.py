"""How an accelerator page reads each claim: the layer each run exercised, which runs speak for the
accelerator and why, and what a team must do, from the records and the claim's scope alone."""

from __future__ import annotations

from factories import make_environment, make_record
from test_backend_summary import NEURON, XLA_CPU, XLA_TPU, grid_of
from torchclaims.evidence.records import Verdict
from torchclaims.evidence.store import THIS_BUILD, Entry
from torchclaims.sphinxext.views.backend_summary import summarize
from torchclaims.sphinxext.views.grid import Grid
from torchclaims.sphinxext.views.reading import Action, Layer, layer_of, read

CUDA = make_environment(backend="cuda", device="cuda:0", device_name="NVIDIA H200", torch="2.11.0")
# torch-tpu installed on a host without a TPU: a slice of the cpu column of its own
CPU_WITH_TORCH_TPU = make_environment(packages={"torch": "2.13.0", "torch-tpu": "0.2.0"})


def read_all(grid: Grid, backend: str) -> dict:
    return {s.claim.id: read(s, backend) for s in summarize(grid, backend).standings}


def readings(tmp_path, backend: str, claims: dict[str, dict], entries: list[Entry]) -> dict:
    return read_all(grid_of(tmp_path, claims, entries), backend)


def test_each_run_is_named_with_the_layer_of_the_stack_it_exercised(tmp_path):
    found = readings(
        tmp_path,
        "tpu",
        {"everywhere": {"about": ["cpu", "xla", "tpu", "cuda"]}},
        [
            Entry(make_record("everywhere"), THIS_BUILD),
            Entry(make_record("everywhere", environment=CPU_WITH_TORCH_TPU), "cpu-tpu.json"),
            Entry(make_record("everywhere", environment=XLA_CPU), "xla.json"),
            Entry(make_record("everywhere", environment=CUDA), "cuda.json"),
        ],
    )
    layers = [(cell.where, layer) for cell, layer in found["everywhere"].layers()]
    assert layers == [  # the vendor's package first, then the columns in matrix order
        ("cpu", Layer.VENDOR_PACKAGE),  # torch-tpu without a TPU: listed although the cpu column shows plain torch
        ("cpu", Layer.CPU_REFERENCE),
        ("cuda", Layer.OTHER_DEVICE),
        ("XLA on the CPU", Layer.XLA_ON_CPU),  # the xla column's stand-in, named as one on the tpu page too
    ]


def test_the_hardware_speaks_first_and_a_stand_in_never_outweighs_it(tmp_path):
    found = readings(
        tmp_path,
        "xla",
        {"claim": {"about": ["xla"]}},
        [
            Entry(make_record("claim", Verdict.REFUTED, environment=XLA_CPU), "xla-cpu.json"),
            Entry(make_record("claim", environment=XLA_TPU), "xla-tpu.json"),
        ],
    )
    reading = found["claim"]
    assert reading.action is Action.WORKS and reading.on_hardware
    assert layer_of(reading.standing.here, "xla") is Layer.DEVICE
    assert reading.why == "it ran on xla hardware"


def test_the_accelerators_own_stack_on_a_stand_in_device_speaks_over_other_backends(tmp_path):
    """cpu held and XLA on the CPU was refuted: for xla, its own lowering speaks; the CPU is another stack."""
    found = readings(
        tmp_path,
        "xla",
        {"claim": {"about": ["cpu", "xla"]}},
        [
            Entry(make_record("claim"), THIS_BUILD),
            Entry(make_record("claim", Verdict.REFUTED, environment=XLA_CPU), "xla-cpu.json"),
        ],
    )
    reading = found["claim"]
    assert reading.action is Action.DIFFERS and not reading.on_hardware
    assert [c.where for c in reading.speakers] == ["XLA on the CPU"]
    assert reading.why == (
        "XLA on the CPU runs the xla stack itself (torch_xla's lowering on PJRT's CPU client); only the device differs"
    )


def test_stand_ins_in_the_claims_scope_that_disagree_leave_it_undecided_until_the_hardware_runs(tmp_path):
    """The issue's case: cpu and XLA on the CPU disagree on a claim about both and about Trainium."""
    found = readings(
        tmp_path,
        "neuron",
        {"claim": {"about": ["cpu", "xla", "neuron"]}},
        [
            Entry(make_record("claim", Verdict.REFUTED), THIS_BUILD),
            Entry(make_record("claim", environment=XLA_CPU), "xla-cpu.json"),
        ],
    )
    reading = found["claim"]
    assert reading.action is Action.UNDECIDED and reading.speakers == ()
    assert reading.why == (
        "the stand-ins the claim is about disagree (cpu (refuted) and XLA on the CPU (holds)) and "
        "AWS Trainium (TorchNeuron) is none of them, so none speaks for it"
    )


def test_stand_ins_in_scope_that_agree_speak_together_and_runs_outside_the_scope_never_speak(tmp_path):
    found = readings(
        tmp_path,
        "neuron",
        {
            "agreed": {"about": ["cpu", "xla", "neuron"]},
            "cuda-only": {"about": ["cuda", "neuron"]},  # XLA's refutation is outside its scope
            "outside": {"about": ["neuron"]},
        },
        [
            Entry(make_record("agreed"), THIS_BUILD),
            Entry(make_record("agreed", environment=XLA_CPU), "xla-cpu.json"),
            Entry(make_record("cuda-only", environment=CUDA), "cuda.json"),
            Entry(make_record("cuda-only", Verdict.REFUTED, environment=XLA_CPU), "xla-cpu.json"),
            Entry(make_record("outside", Verdict.REFUTED), THIS_BUILD),
        ],
    )
    assert found["agreed"].action is Action.WORKS
    assert found["agreed"].why == "the claim is about cpu and XLA on the CPU too: it held on each"
    assert found["cuda-only"].action is Action.WORKS
    assert found["cuda-only"].why == "the claim is about cuda too: it held there"
    assert found["outside"].action is Action.UNDECIDED
    assert found["outside"].why == (
        "only runs outside the claim's scope (cpu (refuted)), which say nothing about AWS Trainium (TorchNeuron)"
    )


def test_attributed_and_unrun_claims_and_a_refutation_on_the_hardware(tmp_path):
    found = readings(
        tmp_path,
        "neuron",
        {
            "said": {"about": ["neuron"], "kind": "attributed", "claimed_by": ["AWS"]},
            "never-ran": {"about": ["neuron"]},
            "broken-there": {"about": ["neuron"]},
        },
        [Entry(make_record("broken-there", Verdict.REFUTED, environment=NEURON), "neuron.json")],
    )
    assert found["said"].action is Action.WORD_ONLY
    assert found["never-ran"].action is Action.UNDECIDED and found["never-ran"].why == "no run yet, on any backend"
    assert found["broken-there"].action is Action.DIFFERS and found["broken-there"].on_hardware


def test_a_reading_line_names_the_layers_the_reason_what_differed_and_the_command_that_decides_it(tmp_path):
    from torchclaims.evidence.records import CheckResult
    from torchclaims.sphinxext.views.accelerators import reading_line

    failed = [CheckResult(name="matches the CPU", outcome=Verdict.REFUTED, detail="max abs diff 0.5 > 1e-05")]
    grid = grid_of(
        tmp_path,
        {"claim": {"about": ["xla"]}},
        [Entry(make_record("claim", Verdict.REFUTED, environment=XLA_CPU, checks=failed), "xla-cpu.json")],
    )
    text = " ".join(reading_line(read_all(grid, "xla")["claim"], grid).astext().split())
    assert "torch_xla's lowering on PJRT's CPU client" in text
    assert "Reading: XLA on the CPU runs the xla stack itself" in text
    assert "What differed: matches the CPU: max abs diff 0.5 > 1e-05" in text
    assert (
        "Decided by: a run on torch_xla (TPUs and other PJRT devices): "
        "torchclaims verify --backend xla claim --output results/" in text
    )
