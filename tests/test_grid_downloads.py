"""The matrix model (columns per backend, versions inside), downloads and the published folder."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from factories import make_environment, make_record, write_claim, write_results_file
from rendered import written
from torchclaims.claims import load_claims
from torchclaims.errors import UsageError
from torchclaims.evidence.records import CheckResult, Measurement, Verdict
from torchclaims.evidence.store import EARLIER_BUILD, THIS_BUILD, Entry, Store, load_store
from torchclaims.sphinxext.build.site import MANIFEST, leftovers, publish
from torchclaims.sphinxext.views.downloads import download_for, records_csv, write_downloads
from torchclaims.sphinxext.views.grid import Grid, device_words, stand_in

XLA = make_environment(
    backend="xla",
    device="xla:0",
    device_name="XLA CPU (Test CPU)",
    torch="2.9.0",
    packages={"torch": "2.9.0", "torch_xla": "2.9.0"},
)


def grid_of(tmp_path, entries: list[Entry], build=None, about=("neuron",)) -> Grid:
    write_claim(tmp_path / "claims", "a", about=list(about))
    write_claim(tmp_path / "claims", "b", kind="attributed")
    store = Store(build_environment=build)
    for entry in entries:
        store.add(entry)
    return Grid(load_claims(tmp_path / "claims"), store)


def test_every_known_backend_has_a_column_and_versions_sit_inside_it(tmp_path):
    build = make_environment()
    grid = grid_of(
        tmp_path,
        [
            Entry(make_record("a"), THIS_BUILD),
            Entry(make_record("a", environment={"torch": "2.14.1"}), "cpu-2.14.1.json"),
            Entry(make_record("a", environment=XLA), "xla.json"),
        ],
        build=build,
    )
    assert [c.backend for c in grid.columns] == ["cpu", "cuda", "rocm", "mps", "xpu", "xla", "neuron", "tpu"]
    cpu = grid.column("cpu")
    assert cpu.versions == ("torch 2.13.0", "torch 2.14.1")  # this build's version first, then the newest
    assert grid.column("xla").header() == "xla · XLA on the CPU (Test CPU) · torch_xla 2.9.0 on torch 2.9.0"
    assert grid.column("neuron").header() == "neuron · AWS Trainium (TorchNeuron) · not run"


def test_cells_say_not_run_attributed_and_target_and_totals_never_count_them_as_passing(tmp_path):
    grid = grid_of(tmp_path, [Entry(make_record("a", Verdict.UNVERIFIED), THIS_BUILD)], build=make_environment())
    claims = grid.claims.claims
    cell = grid.cell(claims["a"], "cpu", "torch 2.13.0")
    assert (cell.kind, cell.target) == ("unverified", False)
    neuron = grid.cells(claims["a"], "neuron")
    assert [(c.kind, c.target) for c in neuron] == [("notrun", True)]
    assert grid.cell(claims["b"], "cpu", "torch 2.13.0").kind == "attributed"
    assert grid.totals("cpu", "torch 2.13.0") == {
        "holds": 0,
        "refuted": 0,
        "unverified": 1,
        "error": 0,
        "notrun": 0,
        "attributed": 1,
    }


def test_versions_sort_as_numbers():
    from torchclaims.history.releases import label_key

    assert sorted(["torch 2.9.0", "torch 2.13.0", "torch 2.10.1", "torch 2.13.0rc1"], key=label_key, reverse=True) == [
        "torch 2.13.0",
        "torch 2.13.0rc1",
        "torch 2.10.1",
        "torch 2.9.0",
    ]


def test_device_words_name_xla_on_the_cpu():
    assert device_words(XLA) == "XLA on the CPU (Test CPU)"
    assert device_words(make_environment(device_name="AMD EPYC")) == "AMD EPYC"


def test_xla_on_the_host_cpu_is_a_stand_in_by_its_device_kind_or_by_pjrt_device():
    tpu = XLA.model_copy(update={"device_name": "XLA TPU", "env_vars": {"PJRT_DEVICE": "TPU"}})
    assert (stand_in(tpu), device_words(tpu)) == ("", "XLA on TPU")  # the hardware
    assert stand_in(XLA) == "XLA on the CPU"  # the device kind torch_xla reported
    said_cpu = tpu.model_copy(update={"env_vars": {"PJRT_DEVICE": "cpu"}})  # a record whose two signs disagree
    assert stand_in(said_cpu) == "XLA on the CPU"
    assert device_words(said_cpu) == "XLA on the CPU (device reported as 'XLA TPU')"
    assert stand_in(make_environment(device_name="XLA CPU")) == ""  # the CPU reference is a backend of its own


def test_a_column_says_when_every_record_in_it_ran_on_a_stand_in(tmp_path):
    tpu = XLA.model_copy(update={"device_name": "XLA TPU", "env_vars": {"PJRT_DEVICE": "TPU"}})
    only_cpu = grid_of(tmp_path / "cpu", [Entry(make_record("a", environment=XLA), "xla.json")])
    assert only_cpu.column("xla").stand_in == "XLA on the CPU"
    assert only_cpu.column("cpu").stand_in == "" and only_cpu.column("neuron").stand_in == ""
    both = grid_of(
        tmp_path / "both",
        [Entry(make_record("a", environment=XLA), "xla.json"), Entry(make_record("a", environment=tpu), "tpu.json")],
    )
    assert both.column("xla").stand_in == ""
    assert both.newest(both.claims.claims["a"], "xla", own_device=True).entry.origin == "tpu.json"
    assert both.newest(both.claims.claims["a"], "xla", own_device=False).entry.origin == "xla.json"


def test_the_backend_filter_note_says_when_the_backends_own_column_is_a_stand_in(tmp_path):
    from torchclaims.sphinxext.views.matrix import _backend_notes

    grid = grid_of(
        tmp_path, [Entry(make_record("a", environment=XLA), "xla.json"), Entry(make_record("a"), THIS_BUILD)]
    )
    notes = {
        backend: text
        for note in _backend_notes(grid, {})
        for backend, text in re.findall(r'data-backend="(\w+)" hidden>(.*?)</p>', written(note))
    }
    assert notes["xla"] == (
        "Claims about xla (torch_xla (TPUs and other PJRT devices)): its column shows what ran on XLA on the CPU, "
        "a stand-in like the other columns: evidence about what ran there, never about torch_xla (TPUs and other "
        "PJRT devices)."
    )
    assert "its column shows what ran there" in notes["cpu"]


def test_csv_has_a_row_per_measurement_and_never_a_formula():
    check = CheckResult(
        name='=HYPERLINK("x")',
        outcome=Verdict.HOLDS,
        measurements=[
            Measurement(name="error", value=-0.5, unit="", tolerance="<= 1"),
            Measurement(name="@cmd", value="-2+3", unit=""),
        ],
    )
    record = make_record("a", checks=[check, CheckResult(name="plain", outcome=Verdict.HOLDS)])
    rows = list(csv.DictReader(io.StringIO(records_csv([record, make_record("b", Verdict.ERROR)]))))
    assert [r["claim_id"] for r in rows] == ["a", "a", "a", "b"]
    assert rows[0]["check"] == '\'=HYPERLINK("x")' and rows[0]["value"] == "-0.5"  # numbers stay numbers
    assert rows[1]["measurement"] == "'@cmd" and rows[1]["value"] == "'-2+3"
    assert rows[2]["check"] == "plain" and rows[2]["measurement"] == ""
    assert rows[3]["verdict"] == "error" and rows[3]["reason"] == "error for a test reason"


def test_every_results_file_shown_is_published_as_json_and_csv(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    original = write_results_file(results / "xla run!.json", [make_record("a", environment=XLA)], label="box")
    store = load_store({"a": make_record("a")}, make_environment(), results)
    store.add(Entry(make_record("a", environment={"torch": "2.12.0"}), EARLIER_BUILD))
    site = tmp_path / "site"
    (site / "downloads" / "gone.csv").parent.mkdir(parents=True)
    (site / "downloads" / "gone.csv").write_text("a file the site no longer shows")
    written = write_downloads(site, store, None, results)
    stems = [d.stem for d in written]
    assert stems == ["earlier-builds/cpu-a-20260301T120000", "results/xla_run_"]  # no build file without build records
    assert (site / "downloads/results/xla_run_.json").read_bytes() == original.read_bytes()  # byte for byte
    assert "xla,xla:0,XLA CPU (Test CPU),torch_xla 2.9.0" in (site / "downloads/results/xla_run_.csv").read_text()
    assert json.loads((site / "downloads/earlier-builds/cpu-a-20260301T120000.json").read_text())["claim_id"] == "a"
    assert not (site / "downloads" / "gone.csv").exists()
    assert download_for(Entry(make_record("a"), THIS_BUILD)).json == "downloads/torchclaims-results.json"


def published(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and p.name != MANIFEST)


def test_publishing_leaves_the_build_leftovers_behind(tmp_path):
    built = tmp_path / "built"
    for name in ("index.html", ".buildinfo", "_sources/index.md.txt", ".doctrees/index.doctree", "_static/a.css"):
        (built / name).parent.mkdir(parents=True, exist_ok=True)
        (built / name).write_text(name)
    site = tmp_path / "site"
    site.mkdir()  # empty: a folder to publish into
    publish(built, site)
    assert published(site) == ["_static/a.css", "index.html"]
    assert leftovers(built) == [".buildinfo", ".doctrees", "_sources"]
    with pytest.raises(UsageError, match="must be outside the build folder"):
        publish(built, built / "site")


def test_publishing_again_copies_what_changed_and_removes_only_what_it_wrote(tmp_path):
    built, site = tmp_path / "built", tmp_path / "site"
    for name in ("index.html", "a/page.html", "a/gone.html", "b/c.html"):
        (built / name).parent.mkdir(parents=True, exist_ok=True)
        (built / name).write_text(name)
    publish(built, site)
    kept = (site / "index.html").stat().st_ino
    (built / "a" / "page.html").write_text("a new version of the page")
    (built / "a" / "gone.html").unlink()
    shutil.rmtree(built / "b")
    (built / "b").write_text("a file where a folder was")
    (site / "stray.html").write_text("the user's own file")
    os.symlink(tmp_path, site / "a" / "link")
    publish(built, site)
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.name != MANIFEST) == [
        "a",
        "a/link",
        "a/page.html",
        "b",
        "index.html",
        "stray.html",
    ]
    assert (site / "a" / "page.html").read_text() == "a new version of the page"
    assert (site / "b").read_text() == "a file where a folder was"
    assert (site / "stray.html").read_text() == "the user's own file"
    assert (site / "index.html").stat().st_ino == kept  # unchanged: the same file, not a new copy


def test_publishing_refuses_a_folder_it_did_not_make_and_never_replaces_a_file_it_did_not_write(tmp_path):
    built, site = tmp_path / "built", tmp_path / "site"
    (built / "docs").mkdir(parents=True)
    (built / "index.html").write_text("the site")
    (built / "docs" / "page.html").write_text("a page")
    site.mkdir()
    (site / "notes.txt").write_text("the user's notes")
    with pytest.raises(UsageError, match="not empty and no publish made it"):
        publish(built, site)
    assert sorted(p.name for p in site.iterdir()) == ["notes.txt"]  # nothing written, nothing removed
    (site / "notes.txt").unlink()
    publish(built, site)
    (site / "docs" / "new.html").write_text("the user's page, where the next build has one")
    (site / "docs" / "mine.txt").write_text("the user's file in a folder the site has")
    (built / "docs" / "new.html").write_text("a new page")
    with pytest.raises(UsageError, match=r"would replace 1 file\(s\) it did not write: docs/new.html"):
        publish(built, site)
    assert (site / "docs" / "new.html").read_text() == "the user's page, where the next build has one"
    (site / "docs" / "new.html").unlink()
    shutil.rmtree(built / "docs")
    publish(built, site)  # the site's docs/ is gone: the user's file in it stays, and so does the folder
    assert (site / "docs" / "mine.txt").read_text() == "the user's file in a folder the site has"
    (site / "file").write_text("a file where the published folder should be")
    with pytest.raises(UsageError, match="is a file; it is not replaced"):
        publish(built, site / "file")
    assert (site / "file").read_text() == "a file where the published folder should be"


@pytest.mark.parametrize("manifest", ['{"format": "torchclaims-published", "files": ["../outside"]}', "[1, 2", "{}"])
def test_a_malformed_list_of_published_files_removes_nothing(tmp_path, manifest):
    built, site = tmp_path / "built", tmp_path / "site"
    built.mkdir()
    (built / "index.html").write_text("the site")
    publish(built, site)
    (tmp_path / "outside").write_text("beside the site")
    (site / MANIFEST).write_text(manifest)
    with pytest.raises(UsageError, match=MANIFEST):
        publish(built, site)
    assert (tmp_path / "outside").exists() and (site / "index.html").exists()


def test_a_run_with_a_vendor_package_but_not_its_device_is_its_own_slice_named_so(tmp_path):
    """torch-tpu on a CPU host (nox -s tpu): the column header says 'vendor package, no TPU', and the
    plain torch 2.13.0 slice keeps its own record."""
    vendor = make_environment(packages={"torch": "2.13.0", "numpy": "2.4.6", "torch-tpu": "0.2.0", "libtpu": "0.0.52"})
    grid = grid_of(
        tmp_path,
        [Entry(make_record("a"), "cpu.json"), Entry(make_record("a", environment=vendor), "tpu-package.json")],
        about=("tpu",),
    )
    cpu = grid.column("cpu")
    vendor_slice = "torch 2.13.0 + torch-tpu 0.2.0 (vendor package, no TPU)"
    assert set(cpu.versions) == {"torch 2.13.0", vendor_slice}
    assert cpu.header(vendor_slice).endswith("· torch 2.13.0 + torch-tpu 0.2.0 (vendor package, no TPU)")
    assert grid.cell(grid.claims.claims["a"], "cpu", "torch 2.13.0").entry.origin == "cpu.json"
    assert not grid.cell(grid.claims.claims["a"], "tpu", "").entry, "never a verdict in the tpu column"


def test_two_builds_of_one_release_are_two_slices_each_named_and_each_shown(tmp_path):
    """The site's own run on torch 2.13.0+cpu and a sweep's on 2.13.0+cu130 (a CUDA build without a GPU)
    can disagree (cuda-event-timing-without-cuda does): neither hides the other, and each says its build."""
    from torchclaims.site_addresses import evidence_anchor

    cpu_build, cuda_build = make_environment(torch="2.13.0+cpu"), make_environment(torch="2.13.0+cu130")
    grid = grid_of(
        tmp_path,
        [
            Entry(make_record("a", "holds", environment=cpu_build), THIS_BUILD),
            Entry(make_record("a", "refuted", environment=cuda_build), "cpu-torch2.13.0.json"),
        ],
        build=cpu_build,
    )
    claim = grid.claims.claims["a"]
    assert grid.column("cpu").versions == ("torch 2.13.0+cpu (CPU-only build)", "torch 2.13.0+cu130 (CUDA build)")
    assert [(c.version, c.kind) for c in grid.cells(claim, "cpu")] == [
        ("torch 2.13.0+cpu (CPU-only build)", "holds"),
        ("torch 2.13.0+cu130 (CUDA build)", "refuted"),
    ]
    runs = grid.runs(claim)  # the evidence block gives each its own row and anchor
    assert [c.entry.origin for c in runs] == [THIS_BUILD, "cpu-torch2.13.0.json"]
    assert len({evidence_anchor(claim.id, c.backend, c.version) for c in runs}) == 2
    assert grid.totals("cpu", "torch 2.13.0+cu130 (CUDA build)")["refuted"] == 1
