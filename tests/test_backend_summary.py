"""What an accelerator page counts: claims about a backend, each in one group, from the records alone."""

from __future__ import annotations

from factories import make_environment, make_record, write_claim
from torchclaims.claims import load_claims
from torchclaims.evidence.records import Verdict
from torchclaims.evidence.store import THIS_BUILD, Entry, Store
from torchclaims.sphinxext.backend_summary import Group, summarize
from torchclaims.sphinxext.grid import Grid

XLA = make_environment(
    backend="xla",
    device="xla:0",
    device_name="XLA CPU (Test CPU)",
    torch="2.9.0",
    packages={"torch": "2.9.0", "torch_xla": "2.9.0"},
)
NEURON = make_environment(
    backend="neuron",
    device="neuron:0",
    device_name="Trainium2",
    torch="2.14.0",
    packages={"torch": "2.14.0", "torch-neuronx": "2.14.0"},
)


def grid_of(tmp_path, claims: dict[str, dict], entries: list[Entry]) -> Grid:
    for claim_id, fields in claims.items():
        write_claim(tmp_path / "claims", claim_id, **fields)
    store = Store(build_environment=make_environment())
    for entry in entries:
        store.add(entry)
    return Grid(load_claims(tmp_path / "claims"), store)


CLAIMS = {
    "on-hw-holds": {"about": ["neuron"]},
    "on-hw-refuted": {"about": ["neuron", "cpu"]},
    "on-hw-unverified": {"about": ["neuron"]},
    "stand-in-refuted": {"about": ["neuron"]},
    "stand-in-held": {"about": ["neuron", "xla"]},
    "stand-in-open": {"about": ["neuron"]},
    "said": {"about": ["neuron"], "kind": "attributed", "claimed_by": ["AWS"]},
    "said-too": {"about": ["neuron", "tpu"], "kind": "attributed", "claimed_by": ["AWS", "Google"]},
    "unchecked": {"about": ["neuron"]},
    "elsewhere": {"about": ["cuda"]},  # about another backend: never on the neuron page
}


def test_each_claim_about_the_backend_is_in_exactly_one_group_decided_by_its_records(tmp_path):
    grid = grid_of(
        tmp_path,
        CLAIMS,
        [
            Entry(make_record("on-hw-holds", environment=NEURON), "neuron.json"),
            Entry(make_record("on-hw-holds", Verdict.REFUTED), THIS_BUILD),  # a stand-in never outweighs the hardware
            Entry(make_record("on-hw-refuted", Verdict.REFUTED, environment=NEURON), "neuron.json"),
            Entry(make_record("on-hw-unverified", Verdict.UNVERIFIED, environment=NEURON), "neuron.json"),
            Entry(make_record("stand-in-refuted", Verdict.HOLDS), THIS_BUILD),
            Entry(make_record("stand-in-refuted", Verdict.REFUTED, environment=XLA), "xla.json"),
            Entry(make_record("stand-in-held", Verdict.HOLDS, environment=XLA), "xla.json"),
            Entry(make_record("stand-in-held", Verdict.UNVERIFIED), THIS_BUILD),
            Entry(make_record("stand-in-open", Verdict.ERROR), THIS_BUILD),
            Entry(make_record("elsewhere"), THIS_BUILD),
        ],
    )
    summary = summarize(grid, "neuron")
    groups = {s.claim.id: s.group for s in summary.standings}
    assert groups == {
        "on-hw-holds": Group.CONFIRMED,
        "on-hw-refuted": Group.REFUTED,
        "on-hw-unverified": Group.INCONCLUSIVE,
        "stand-in-refuted": Group.STAND_IN_REFUTED,
        "stand-in-held": Group.STAND_IN_HELD,
        "stand-in-open": Group.STAND_IN_OPEN,
        "said": Group.ATTRIBUTED,
        "said-too": Group.ATTRIBUTED,
        "unchecked": Group.UNCHECKED,
    }
    assert sum(summary.count(g) for g in Group) == len(summary.standings) == 9
    assert summary.attributed_by == {"AWS": 2, "Google": 1}
    assert [c.claim.id for c in summary.hardware_runs] == ["on-hw-holds", "on-hw-refuted", "on-hw-unverified"]
    assert summary.versions() == ["torch-neuronx 2.14.0"] and summary.devices() == ["Trainium2"]
    assert summary.sources() == {"submitted by hand, not reproduced": 3}
    stand_ins = {s.backend: dict(s.verdicts) for s in summary.stand_ins()}
    assert stand_ins == {"cpu": {"holds": 1, "unverified": 1, "error": 1}, "xla": {"refuted": 1, "holds": 1}}
    assert [s.versions for s in summary.stand_ins()] == [("torch 2.13.0",), ("torch_xla 2.9.0",)]


def test_a_backend_with_no_record_has_nothing_on_its_hardware_and_the_cpu_stand_in_counts(tmp_path):
    grid = grid_of(tmp_path, CLAIMS, [Entry(make_record("stand-in-open"), THIS_BUILD)])
    summary = summarize(grid, "neuron")
    assert summary.hardware_runs == [] and summary.dates() is None
    assert summary.count(Group.STAND_IN_HELD) == 1  # the CPU held: a stand-in, never "held on the hardware"
    assert summary.count(Group.CONFIRMED) == 0
    assert summary.count(Group.UNCHECKED) == 6
    tpu = summarize(grid, "tpu")
    assert [(s.claim.id, s.group) for s in tpu.standings] == [("said-too", Group.ATTRIBUTED)]


def test_the_tally_says_what_ran_on_the_hardware_when_with_which_versions_and_from_where(tmp_path):
    from torchclaims.sphinxext.accelerators import tally

    grid = grid_of(
        tmp_path,
        CLAIMS,
        [
            Entry(make_record("on-hw-holds", environment=NEURON), "neuron.json"),
            Entry(make_record("on-hw-refuted", Verdict.REFUTED, environment=NEURON), "neuron.json"),
            Entry(make_record("stand-in-held", environment=XLA), "xla.json"),
        ],
    )
    text = " ".join(tally(summarize(grid, "neuron"), "AWS Trainium (TorchNeuron)").astext().split())
    assert "9 claims are about AWS Trainium (TorchNeuron)." in text
    assert (
        "2 are only their claimants' word (claimed by AWS in 2, Google in 1): attributed, no public method to check."
        in text
    )
    assert (
        "2 of the 7 executable ones ran on neuron (Trainium2), with torch-neuronx 2.14.0, 2026-03-01: "
        "✔ 1 held, ✘ 1 refuted. "
        "From: submitted by hand, not reproduced 2."
    ) in text
    assert (
        "1 was checked only on a stand-in: on xla (XLA on CPU (Test CPU), torch_xla 2.9.0), 1 claim: ✔ 1 held." in text
    )
    assert "4 are not yet checked anywhere." in text
