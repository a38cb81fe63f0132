"""What an accelerator page counts: claims about a backend, each in one group, from the records alone."""

from __future__ import annotations

from factories import make_environment, make_record, write_claim
from torchclaims.claims import load_claims
from torchclaims.evidence.records import Verdict
from torchclaims.evidence.store import THIS_BUILD, Entry, Store
from torchclaims.sphinxext.views.backend_summary import ON_HARDWARE, Group, summarize
from torchclaims.sphinxext.views.grid import Grid

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
    assert summary.versions() == ["torch-neuronx 2.14.0 on torch 2.14.0"] and summary.devices() == ["Trainium2"]
    assert summary.sources() == {"submitted by hand, not reproduced": 3}
    stand_ins = {s.backend: dict(s.verdicts) for s in summary.stand_ins()}
    assert stand_ins == {"cpu": {"holds": 1, "unverified": 1, "error": 1}, "xla": {"refuted": 1, "holds": 1}}
    assert [s.versions for s in summary.stand_ins()] == [("torch 2.13.0",), ("torch_xla 2.9.0 on torch 2.9.0",)]


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
    from torchclaims.sphinxext.views.accelerators import tally

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
        "2 of the 7 executable ones ran on neuron hardware (Trainium2), "
        "with torch-neuronx 2.14.0 on torch 2.14.0, 2026-03-01: "
        "✔ 1 held, ✘ 1 refuted. "
        "From: submitted by hand, not reproduced 2."
    ) in text
    assert (
        "1 was checked only on a stand-in: "
        "on xla (XLA on the CPU (Test CPU), torch_xla 2.9.0 on torch 2.9.0), 1 claim: ✔ 1 held." in text
    )
    assert "4 are not yet checked anywhere." in text


# torch_xla on a TPU host, as its records would read: the device kind torch_xla reports, PJRT_DEVICE=TPU.
XLA_TPU = make_environment(
    backend="xla",
    device="xla:0",
    device_name="XLA TPU",
    torch="2.9.0",
    packages={"torch": "2.9.0", "torch_xla": "2.9.0", "libtpu": "0.0.21"},
    env_vars={"PJRT_DEVICE": "TPU"},
)
XLA_CPU = XLA.model_copy(update={"env_vars": {"PJRT_DEVICE": "CPU"}})  # as the committed xla results files read
ABOUT_XLA = {
    "tpu-held": {"about": ["xla"]},
    "cpu-refuted": {"about": ["xla"]},
    "cpu-held": {"about": ["xla"]},
}


def xla_grid(tmp_path, tpu: bool) -> Grid:
    """Three claims about xla run on XLA on the CPU (two refuted there), and, with ``tpu``, one of them on a TPU."""
    entries = [
        Entry(make_record("tpu-held", Verdict.REFUTED, environment=XLA_CPU), "xla-cpu.json"),
        Entry(make_record("cpu-refuted", Verdict.REFUTED, environment=XLA_CPU), "xla-cpu.json"),
        Entry(make_record("cpu-held", environment=XLA_CPU), "xla-cpu.json"),
        Entry(make_record("cpu-held"), THIS_BUILD),
        Entry(make_record("cpu-refuted"), THIS_BUILD),  # held on the CPU reference: not what its heading names
    ]
    if tpu:  # the same torch_xla version as the CPU runs: a slice of the same column
        entries.append(Entry(make_record("tpu-held", environment=XLA_TPU), "xla-tpu.json"))
    return grid_of(tmp_path, ABOUT_XLA, entries)


def test_xla_on_the_cpu_is_a_stand_in_and_only_a_tpu_run_counts_as_the_xla_hardware(tmp_path):
    summary = summarize(xla_grid(tmp_path, tpu=True), "xla")
    groups = {s.claim.id: s.group for s in summary.standings}
    assert groups == {
        "tpu-held": Group.CONFIRMED,  # the TPU's verdict, though the CPU run of the same version was refuted
        "cpu-refuted": Group.STAND_IN_REFUTED,
        "cpu-held": Group.STAND_IN_HELD,
    }
    assert [c.claim.id for c in summary.hardware_runs] == ["tpu-held"]
    assert summary.devices() == ["XLA on TPU"]
    assert {s.backend: s.devices for s in summary.stand_ins()} == {
        "xla": ("XLA on the CPU (Test CPU)",),
        "cpu": ("Test CPU",),
    }
    tpu_held = next(s for s in summary.standings if s.claim.id == "tpu-held")
    assert [(c.where, c.kind) for c in tpu_held.stand_ins] == [("XLA on the CPU", "refuted")]  # its chip, beside


def test_no_heading_puts_a_stand_ins_verdict_under_the_accelerators_name(tmp_path):
    from torchclaims.sphinxext.views.reading import Action, action_title, read

    def titles(summary):
        readings = [read(s, summary.backend) for s in summary.standings]
        return {
            a: action_title(a, [r for r in readings if r.action is a], "xla")
            for a in Action
            if any(r.action is a for r in readings)
        }

    assert titles(summarize(xla_grid(tmp_path, tpu=True), "xla")) == {
        Action.WORKS: "Works as written (1 on xla hardware, 1 on a stand-in)",
        Action.DIFFERS: "Known to differ: change the code on a stand-in (1)",
    }
    only_cpu = summarize(xla_grid(tmp_path / "only-cpu", tpu=False), "xla")
    assert only_cpu.count(*ON_HARDWARE) == 0  # were "Held on xla" and "Refuted on xla" before XLA on the CPU stood in
    assert titles(only_cpu) == {
        Action.WORKS: "Works as written on a stand-in (1)",
        Action.DIFFERS: "Known to differ: change the code on a stand-in (2)",
    }


def test_the_card_and_the_tally_count_only_runs_on_the_hardware_as_ran_on_it(tmp_path):
    from torchclaims.sphinxext.views.accelerators import card_facts, tally

    name = "torch_xla (TPUs and other PJRT devices)"
    only_cpu = summarize(xla_grid(tmp_path / "only-cpu", tpu=False), "xla")
    assert card_facts(only_cpu) == (
        "3 claims about it · 0 only their word · 0 ran on its hardware · 3 only on a stand-in (XLA on the CPU and cpu)"
    )
    text = " ".join(tally(only_cpu, name).astext().split())
    assert "0 of the 3 executable ones ran on xla hardware: no record from there yet." in text
    assert (
        "3 were checked only on a stand-in: "
        "on xla (XLA on the CPU (Test CPU), torch_xla 2.9.0 on torch 2.9.0), 3 claims: "
        "✔ 1 held, ✘ 2 refuted; on cpu (Test CPU, torch 2.13.0), 2 claims: ✔ 2 held." in text
    )
    with_tpu = summarize(xla_grid(tmp_path / "with-tpu", tpu=True), "xla")
    assert card_facts(with_tpu) == (
        "3 claims about it · 0 only their word · 1 ran on its hardware · 2 only on a stand-in (XLA on the CPU and cpu)"
    )
    text = " ".join(tally(with_tpu, name).astext().split())
    assert (
        "1 of the 3 executable ones ran on xla hardware (XLA on TPU), "
        "with torch_xla 2.9.0 on torch 2.9.0, 2026-03-01: ✔ 1 held." in text
    )


def test_a_chip_names_xla_on_the_cpu_and_the_backend_only_for_its_hardware(tmp_path):
    from torchclaims.sphinxext.views.accelerators import chip

    summary = summarize(xla_grid(tmp_path, tpu=True), "xla")
    tpu_held = next(s for s in summary.standings if s.claim.id == "tpu-held")
    assert chip(tpu_held.here).astext().startswith("xla ✔ holds torch_xla 2.9.0 on torch 2.9.0")
    assert chip(tpu_held.stand_ins[0]).astext().startswith("XLA on the CPU ✘ refuted torch_xla 2.9.0 on torch 2.9.0")


def test_the_check_your_model_line_leads_to_the_check_page_where_the_site_has_one():
    from types import SimpleNamespace

    from sphinx import addnodes

    from torchclaims.sphinxext.views.accelerators import check_your_model

    [line] = check_your_model(SimpleNamespace(found_docs={"docs/check"}))
    assert line.astext().startswith("Check your own model: torchclaims check lists the operators")
    assert [ref["reftarget"] for ref in line.findall(addnodes.pending_xref)] == ["/docs/check"]
    assert check_your_model(SimpleNamespace(found_docs=set())) == []


def test_the_versions_that_ran_on_the_hardware_are_in_release_order(tmp_path):
    def neuron(version: str):
        return make_environment(
            backend="neuron",
            device="neuron:0",
            device_name="Trainium2",
            torch="2.14.0",
            packages={"torch": "2.14.0", "torch-neuronx": version},
        )

    versions = ("2.9.0", "2.10.0rc1", "2.10.0")
    claims = {f"claim-{i}": {"about": ["neuron"]} for i in range(len(versions))}
    entries = [
        Entry(make_record(f"claim-{i}", environment=neuron(v)), f"neuron-{i}.json") for i, v in enumerate(versions)
    ]
    summary = summarize(grid_of(tmp_path, claims, entries), "neuron")
    # as text, 2.10 would come before 2.9 and the release candidate after its release
    assert summary.versions() == [f"torch-neuronx {v} on torch 2.14.0" for v in versions]
