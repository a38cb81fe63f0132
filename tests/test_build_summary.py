"""The build's closing line: every executable claim counted once, by the verdict this build shows."""

from __future__ import annotations

from factories import make_kb, make_record, write_claim
from torchclaims.claims import load_claims
from torchclaims.evidence.store import Entry, Store
from torchclaims.sphinxext.build.state import BuildState
from torchclaims.sphinxext.build.summary import verdict_line


def test_the_verdict_line_counts_this_builds_verdicts_and_names_what_did_not_run(tmp_path):
    make_kb(tmp_path, "a", "b", "c", "d")
    write_claim(tmp_path / "claims", "said-so", kind="attributed", topic="status")
    store = Store()
    store.add(Entry(make_record("a", "holds"), "this build"))
    store.add(Entry(make_record("b", "refuted"), "this build"))
    store.add(Entry(make_record("c", "holds"), "cpu-torch2.13.0-1.json"))  # a committed file is not this build
    state = BuildState(
        load_claims(tmp_path / "claims"),
        store,
        "docs/auto_gallery",
        90,
        root=tmp_path,
        outdir=tmp_path / "_build",
        relative_uri=lambda here, there: there,
    )
    assert (
        verdict_line(state)
        == "4 executable claims, this build on cpu: 1 holds, 1 refuted, 2 not run; 1 attributed (no verdict)"
    )
