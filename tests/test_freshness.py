"""Stale means outdated: a changed script or an old record, never merely another version."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from factories import STARTED, make_environment, make_record, write_results_file
from torchclaims.evidence.freshness import outdated_results, stale_reason
from torchclaims.evidence.records import ScriptInfo


def test_a_current_record_is_not_stale():
    assert stale_reason(make_record("a"), "a" * 64, max_age_days=30, today=STARTED + timedelta(days=1)) == ""


def test_stale_reason_names_the_age_and_the_limit():
    record = make_record("a")
    assert (
        stale_reason(record, None, max_age_days=30, today=STARTED + timedelta(days=45))
        == "verified 45 days ago (limit 30)"
    )
    assert stale_reason(record, None, max_age_days=30, today=STARTED + timedelta(days=29)) == ""


def test_stale_reason_when_the_script_changed():
    record = make_record("a")
    assert stale_reason(record, "b" * 64, max_age_days=30, today=STARTED) == "the verification script changed since"
    assert stale_reason(record, "a" * 64, max_age_days=30, today=STARTED) == ""


def test_a_record_of_another_torch_version_is_not_stale():
    """Another version is another configuration, shown as that version in the history."""
    old_torch = make_record("a", environment={"torch": "2.9.0"})
    assert stale_reason(old_torch, "a" * 64, max_age_days=30, today=STARTED) == ""


def test_stale_reason_lists_every_reason():
    reason = stale_reason(make_record("a"), "c" * 64, max_age_days=7, today=STARTED + timedelta(days=10))
    assert reason == "verified 10 days ago (limit 7); the verification script changed since"


def record_of(claim_id: str, text: str):
    """A record made by ``text`` as the script of ``claim_id``."""
    path = f"gallery/{claim_id.replace('-', '_')}.py"
    return make_record(claim_id, script=ScriptInfo(path=path, sha256=hashlib.sha256(text.encode()).hexdigest()))


def test_results_made_by_an_older_version_of_an_existing_script_are_outdated(tmp_path):
    gallery = tmp_path / "gallery"
    gallery.mkdir()
    (gallery / "same.py").write_text("print('same')\n")
    (gallery / "moved_on.py").write_text("print('new version')\n")
    records = [
        record_of("same", "print('same')\n"),
        record_of("moved-on", "print('old version')\n"),
        record_of("gone-claim", "print('its script was deleted')\n"),  # nothing to regenerate it with
    ]
    results = tmp_path / "results"
    write_results_file(results / "cpu-torch2.14.1-20260301T120000.json", records)
    write_results_file(results / "cpu-torch2.13.0-20260301T120000.json", records[:1], make_environment())
    (results / "broken.json").write_text("{not json")  # reported by the store, not here
    assert outdated_results(tmp_path, results) == {"cpu-torch2.14.1-20260301T120000.json": ["moved-on"]}


def test_a_changed_gallery_helper_makes_the_records_that_used_it_outdated(tmp_path):
    (tmp_path / "gallery").mkdir()
    (tmp_path / "gallery" / "user.py").write_text("import _helper\n")
    (tmp_path / "gallery" / "_helper.py").write_text("TOLERANCE = 2e-3\n")
    record = record_of("user", "import _helper\n")
    old_helper = hashlib.sha256(b"TOLERANCE = 1e-3\n").hexdigest()
    engine_moved = hashlib.sha256(b"an older verify.py").hexdigest()
    record = record.model_copy(
        update={"inputs": {"gallery/_helper.py": old_helper, "torchclaims/verify.py": engine_moved}}
    )
    write_results_file(tmp_path / "results" / "cpu.json", [record])
    assert outdated_results(tmp_path, tmp_path / "results") == {"cpu.json": ["user"]}


def test_no_results_folder_means_nothing_is_outdated(tmp_path):
    assert outdated_results(tmp_path, tmp_path / "results") == {}
