"""Hostile claim records: whatever bytes claims/*.toml holds, every reader reports
the file (and field) and carries on; no traceback, the other records intact."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factories import claim_fields, claim_toml, default_source, make_kb, write_claim
from hostile import assert_clean_exit, cli
from torchclaims import limits
from torchclaims.authoring.lint import lint
from torchclaims.claims import load_claims

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def loaded(tmp_path, data: bytes):
    """Load claims/ with one good record and ``data`` as claims/bad.toml."""
    claims_dir = tmp_path / "claims"
    write_claim(claims_dir, "good-claim")
    (claims_dir / "bad.toml").write_bytes(data)
    return load_claims(claims_dir)


def assert_reported(claims, field: str = "", words: str = "") -> None:
    assert "good-claim" in claims.claims, "a bad record must not cost the others"
    assert "bad" in claims.broken
    problems = [p for p in claims.problems if p.path.name == "bad.toml"]
    assert problems, claims.problems
    if field:
        assert any(p.field.startswith(field) for p in problems), problems
    if words:
        assert any(words in p.message for p in problems), problems


@FAST
@given(data=st.binary(max_size=3000))
def test_random_bytes_are_reported_never_raised(tmp_path, data):
    claims = loaded(tmp_path, data)
    assert "good-claim" in claims.claims
    assert all(p.path.name == "bad.toml" for p in claims.problems)


@FAST
@given(depth=st.integers(min_value=50, max_value=20000), kind=st.sampled_from(["[", "{x="]))
def test_deep_nesting_is_reported(tmp_path, depth, kind):
    closing = {"[": "]", "{x=": "}"}[kind]
    claims = loaded(tmp_path, f"a = {kind * depth}1{closing * depth}\n".encode())
    assert_reported(claims)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1", "cp1252"])
def test_wrong_encodings_name_the_byte(tmp_path, encoding):
    text = claim_toml(claim_fields("bad")).replace(
        "Claim bad", "Résultats à la tolérance près"
    )  # JSON-quoted text is ASCII
    claims = loaded(tmp_path, text.encode(encoding))
    assert_reported(claims, words="not UTF-8 text")


def test_an_oversized_record_is_refused_before_it_is_read(tmp_path):
    claims = loaded(tmp_path, b"# " + b"x" * limits.LIMITS.claim_file_bytes)
    assert_reported(claims, words=f"the limit is {limits.LIMITS.claim_file_bytes:,}")


@pytest.mark.parametrize(
    "field, value",
    [
        ("proposition", "A " * (limits.STATEMENT_CHARS // 2 + 1)),
        ("sources", [default_source(claimant="M" * (limits.NAME_CHARS + 1), about=["cpu"])]),
        ("caveats", ["C" * (limits.NOTE_CHARS + 1)]),
        ("sources", [default_source(note="N" * (limits.NOTE_CHARS + 1))]),
        ("sources", [default_source(url="https://example.com/" + "u" * limits.URL_CHARS)]),
    ],
)
def test_text_longer_than_its_limit_is_refused(tmp_path, field, value):
    claims = loaded(tmp_path, claim_toml(claim_fields("bad", **{field: value})).encode())
    assert_reported(claims, field=field, words="at most")


@pytest.mark.parametrize("value", ['"yes"', '"true"', "1", '"false"'])
def test_confirmed_must_be_a_real_boolean(tmp_path, value):
    text = claim_toml(claim_fields("bad")) + f"confirmed = {value}\n"  # lands in the last [[sources]] table
    claims = loaded(tmp_path, text.encode())
    assert_reported(claims, field="sources.0.confirmed", words="boolean")


@pytest.mark.parametrize("claim_id", ["../../etc/passwd", "a/b", "A B", "x" * 200])
def test_ids_that_are_not_plain_names_are_refused(tmp_path, claim_id):
    claims = loaded(tmp_path, claim_toml(claim_fields(claim_id)).encode())
    assert_reported(claims, field="id")


def test_lint_show_and_verify_report_broken_records_without_a_traceback(tmp_path):
    make_kb(tmp_path, "good-claim")
    (tmp_path / "claims" / "latin.toml").write_bytes('statement = "caf\xe9"'.encode("latin-1"))
    (tmp_path / "claims" / "deep.toml").write_text("a = " + "[" * 5000 + "]" * 5000)
    (tmp_path / "results").mkdir()
    problems = lint(tmp_path)
    assert {p.path.name for p in problems} >= {"latin.toml", "deep.toml"}
    runs = [cli("lint", "--root", str(tmp_path)), cli("show", "--root", str(tmp_path))]
    for run in runs:
        assert_clean_exit(run)
        assert "latin.toml" in run.stdout + run.stderr and "deep.toml" in run.stdout + run.stderr
    assert runs[0].returncode == 1
    assert "good-claim" in runs[1].stdout
