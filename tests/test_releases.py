"""The release list: validation, requirements, and which runs stand for which release."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import make_environment
from torchclaims.errors import InvalidFileError
from torchclaims.history.releases import Series, label_key, load_releases, read_constraints, version_key

ROOT = Path(__file__).resolve().parents[1]

RELEASES = """
[series.torch]
backend = "cpu"
package = "torch"
versions = ["2.9.0", "2.10.0", "2.15.0"]

[series.torch_xla]
backend = "xla"
package = "torch_xla"
versions = ["2.8.1", "2.9.0"]
requires_by_version = { "2.8.1" = ["torch==2.8.0"], "2.9.0" = ["torch==2.9.0"] }
timeout = 2400

[series.transformers]
backend = "cpu"
package = "transformers"
versions = ["4.57.6", "5.24.0"]
requires = ["torch==2.13.0"]
follows = ["tokenizers"]
default = false
"""


def write(
    root: Path,
    releases: str = RELEASES,
    constraints: str = "# held\nnumpy==2.4.6\ntransformers==5.24.0\ntokenizers==0.23.3\n",
) -> Path:
    (root / "sweep").mkdir(parents=True, exist_ok=True)
    (root / "sweep" / "releases.toml").write_text(releases)
    (root / "sweep" / "constraints.txt").write_text(constraints)
    return root


def test_the_committed_release_list_is_valid_and_names_the_releases_the_site_sweeps():
    releases = load_releases(ROOT)
    torch = releases.series["torch"]
    assert {"2.9.0", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0"} <= set(torch.versions)
    assert set(releases.series["torch_xla"].versions) >= {"2.8.1", "2.9.0"}
    assert "transformers" in releases.held and "torch" not in releases.held


def test_versions_sort_as_numbers():
    assert sorted(["2.10.0", "2.9.0", "2.15.0", "2.9.1+cpu"], key=version_key) == [
        "2.9.0",
        "2.9.1+cpu",
        "2.10.0",
        "2.15.0",
    ]
    # PEP 440's order, where splitting on dots is wrong: a candidate comes before its release;
    # a string that is no version sorts first instead of breaking the page
    assert sorted(["2.10.0", "2.10.0rc1", "2.9.0.post1", "no-version"], key=version_key) == [
        "no-version",
        "2.9.0.post1",
        "2.10.0rc1",
        "2.10.0",
    ]


def test_labels_sort_by_their_name_then_as_versions():
    labels = ["cpu · torch 2.10.0", "xla · torch_xla 2.9.0", "cpu · torch 2.9.0+cpu", "cpu · torch 2.10.0rc1"]
    assert sorted(labels, key=label_key) == [
        "cpu · torch 2.9.0+cpu",
        "cpu · torch 2.10.0rc1",
        "cpu · torch 2.10.0",
        "xla · torch_xla 2.9.0",
    ]
    # a label that names its build after the version sorts by the version all the same
    named = ["cpu · torch 2.10.0+cpu (CPU-only build)", "cpu · torch 2.9.0+cu128 (CUDA build)"]
    assert sorted(named, key=label_key) == named[::-1]


def test_a_series_concerns_a_claim_whose_script_uses_its_package():
    transformers = Series("transformers", "cpu", "transformers", ("5.24.0",))
    assert not transformers.concerns(frozenset({"torch", "torchclaims.verify"}))
    assert transformers.concerns(frozenset({"transformers.models.auto"}))
    assert Series("torch", "cpu", "torch", ("2.13.0",)).concerns(frozenset())  # every run loads torch
    # the backend's own package is loaded for the script by its descriptor, imported or not
    assert Series("torch_xla", "xla", "torch_xla", ("2.9.0",)).concerns(frozenset({"torch"}))
    assert Series("xla-of-cpu", "cpu", "torch_xla", ("2.9.0",)).concerns(frozenset({"torch_xla.core"}))
    assert not Series("xla-of-cpu", "cpu", "torch_xla", ("2.9.0",)).concerns(frozenset({"torch"}))


def test_requirements_of_a_release_include_the_series_pins(tmp_path):
    releases = load_releases(write(tmp_path))
    assert releases.series["torch"].requirements("2.10.0") == ["torch==2.10.0"]
    assert releases.series["torch"].requirements("2.10.0", exact=True) == ["torch===2.10.0"]
    assert releases.series["torch_xla"].requirements("2.8.1") == ["torch_xla==2.8.1", "torch==2.8.0"]
    assert releases.series["transformers"].requirements("4.57.6") == ["transformers==4.57.6", "torch==2.13.0"]


def test_the_varied_package_and_its_followers_are_left_out_of_its_series_constraints(tmp_path):
    releases = load_releases(write(tmp_path))
    text = releases.constraints_for(releases.series["transformers"])
    assert "numpy==2.4.6" in text and "transformers==" not in text and "tokenizers==" not in text
    assert "transformers==5.24.0" in releases.constraints_for(releases.series["torch"])
    assert releases.series["transformers"].held == {"numpy": "2.4.6"}


def test_a_run_stands_for_a_release_only_when_the_release_is_the_only_change(tmp_path):
    series = load_releases(write(tmp_path)).series
    held = {"torch": "2.10.0", "numpy": "2.4.6", "transformers": "5.24.0"}
    assert series["torch"].release_of(make_environment(torch="2.10.0+cu128", packages=held)) == "2.10.0"
    other_numpy = make_environment(torch="2.10.0", packages={**held, "numpy": "1.26.4"})
    assert series["torch"].release_of(other_numpy) is None
    assert series["torch"].release_of(make_environment(backend="xla", torch="2.10.0", packages=held)) is None
    # the transformers series varies transformers and holds torch at its own pin
    run = make_environment(torch="2.13.0+cpu", packages={**held, "torch": "2.13.0", "transformers": "4.57.6"})
    assert series["transformers"].release_of(run) == "4.57.6"
    assert series["torch"].release_of(run) is None
    assert (
        series["transformers"].release_of(make_environment(torch="2.14.1", packages={**held, "torch": "2.14.1"}))
        is None
    )
    # torch-tpu on a CPU host (nox -s tpu): a run of the vendor's package, never the plain
    # release's, so a sweep never replaces it
    vendor = make_environment(torch="2.10.0", packages={**held, "torch-tpu": "0.2.0", "libtpu": "0.0.52"})
    assert series["torch"].release_of(vendor) is None
    xla = make_environment(
        backend="xla", torch="2.9.0", packages={"torch": "2.9.0", "torch_xla": "2.9.0", "numpy": "2.4.6"}
    )
    assert series["torch_xla"].release_of(xla) == "2.9.0"


@pytest.mark.parametrize(
    "releases, field",
    [
        (RELEASES.replace('"2.9.0", "2.10.0"', '"2.10.0", "2.9.0"'), "series.torch.versions"),  # not oldest first
        (RELEASES.replace('backend = "xla"', 'backend = "gpu"'), "series.torch_xla.backend"),
        (
            RELEASES.replace('"2.8.1" = ["torch==2.8.0"]', '"2.7.0" = ["torch==2.7.0"]'),
            "series.torch_xla.requires_by_version",
        ),
        (
            RELEASES.replace('requires = ["torch==2.13.0"]', 'requires = ["torch>=2.13"]'),
            "series.transformers.requires.0",
        ),
        ("unknown = 1\n" + RELEASES, "unknown"),
    ],
    ids=["order", "backend", "requires-unknown-release", "open-requirement", "unknown-field"],
)
def test_a_broken_release_list_names_the_file_and_field(tmp_path, releases, field):
    with pytest.raises(InvalidFileError) as error:
        load_releases(write(tmp_path, releases))
    assert any(p.field == field and p.path.name == "releases.toml" for p in error.value.problems), error.value


def test_constraints_accept_only_exact_pins_of_packages_a_sweep_does_not_vary(tmp_path):
    path = tmp_path / "constraints.txt"
    path.write_text("numpy==2.4.6  # held\nmatplotlib>=3\ntorch==2.13.0\n")
    with pytest.raises(InvalidFileError) as error:
        read_constraints(path)
    assert [(p.line, p.field) for p in error.value.problems] == [(2, "pin"), (3, "pin")]
