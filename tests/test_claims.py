"""Claim records: loading, validation problems (file + field) and the JSON schema."""

from __future__ import annotations

import json
import re

import pytest

from factories import claim_fields, default_source, write_claim
from torchclaims.backends import BACKEND_NAMES
from torchclaims.claims import MAX_QUOTE_WORDS, PROJECT, ClaimKind, Relation, claim_json_schema, load_claim, load_claims
from torchclaims.errors import InvalidFileError
from torchclaims.topics import TOPICS


def problems_of(path):
    with pytest.raises(InvalidFileError) as info:
        load_claim(path)
    problems = info.value.problems
    assert problems, "an InvalidFileError must carry at least one problem"
    assert all(p.path == path for p in problems), "every problem names the file"
    return problems


def fields_of(problems):
    return {p.field for p in problems}


def test_valid_record_loads_with_its_values(tmp_path):
    path = write_claim(
        tmp_path,
        "matmul-parity",
        topic="compile",
        about=["cuda", "cpu"],
        caveats=["Only float32 was checked."],
        see_also=["other-claim"],
    )
    claim = load_claim(path)
    assert claim.id == "matmul-parity"
    assert claim.kind is ClaimKind.EXECUTABLE
    assert claim.executable
    assert claim.topic == "compile"
    assert claim.about == ["cuda", "cpu"]
    assert claim.claimed_by == ["Test Publisher"]
    assert claim.relation is Relation.IS
    assert claim.script == "gallery/matmul_parity.py"
    assert claim.caveats == ["Only float32 was checked."]
    assert claim.see_also == ["other-claim"]
    assert claim.sources[0].publisher == "PyTorch documentation"
    assert claim.sources[0].confirmed is True


def test_attributed_record_without_script_loads(tmp_path):
    claim = load_claim(write_claim(tmp_path, "vendor-says-fast", kind="attributed", topic="status"))
    assert claim.kind is ClaimKind.ATTRIBUTED
    assert not claim.executable
    assert claim.script is None


@pytest.mark.parametrize("topic", list(TOPICS))
def test_every_known_topic_is_accepted(tmp_path, topic):
    assert load_claim(write_claim(tmp_path, "some-claim", topic=topic)).topic == topic


def test_every_builtin_backend_name_is_accepted(tmp_path):
    claim = load_claim(write_claim(tmp_path, "all-backends", about=list(BACKEND_NAMES)))
    assert claim.about == list(BACKEND_NAMES)


@pytest.mark.parametrize("field", ["title", "proposition", "kind", "topic", "about", "relation", "sources"])
def test_missing_required_field_is_named(tmp_path, field):
    path = write_claim(tmp_path, "a-claim", **{field: None})
    problems = problems_of(path)
    assert field in fields_of(problems)
    message = next(p.message for p in problems if p.field == field)
    assert "required" in message.lower()


def test_missing_source_field_is_named_with_its_position(tmp_path):
    source = default_source()
    del source["publisher"]
    path = write_claim(tmp_path, "a-claim", sources=[default_source(), source])
    assert "sources.1.publisher" in fields_of(problems_of(path))


def test_unknown_key_is_named(tmp_path):
    path = write_claim(tmp_path, "a-claim", verdict="holds")
    problems = problems_of(path)
    assert fields_of(problems) == {"verdict"}
    assert str(problems[0]).startswith(f"{path} [verdict]: ")


def test_unknown_key_inside_a_source_is_named(tmp_path):
    path = write_claim(tmp_path, "a-claim", sources=[default_source(author="someone")])
    assert "sources.0.author" in fields_of(problems_of(path))


def test_bad_topic_is_named_and_lists_the_choices(tmp_path):
    path = write_claim(tmp_path, "a-claim", topic="speed")
    problems = problems_of(path)
    assert fields_of(problems) == {"topic"}
    assert "'speed'" in problems[0].message
    assert "numerics" in problems[0].message and "compile" in problems[0].message


def test_unknown_backend_is_named_and_lists_the_choices(tmp_path):
    path = write_claim(tmp_path, "a-claim", about=["cpu", "gaudi"])
    problems = problems_of(path)
    assert fields_of(problems) == {"about"}
    assert "gaudi" in problems[0].message
    assert "cuda" in problems[0].message


def test_empty_or_repeated_backend_list_is_rejected(tmp_path):
    assert "about" in fields_of(problems_of(write_claim(tmp_path, "a-claim", about=[])))
    assert "about" in fields_of(problems_of(write_claim(tmp_path, "b-claim", about=["cpu", "cpu"])))


@pytest.mark.parametrize("relation", [r.value for r in Relation if r is not Relation.OWN_FINDING])
def test_a_source_claim_keeps_its_claimants_and_the_proposition_maker_follows_the_relation(tmp_path, relation):
    claim = load_claim(write_claim(tmp_path, "a-claim", claimed_by=["AWS"], relation=relation))
    assert claim.claimed_by == ["AWS"]
    # Only a proposition that *is* the vendor's claim is the vendor's; any other is this project's.
    assert claim.proposition_by == (["AWS"] if relation == "is" else [PROJECT])


def test_an_own_finding_is_claimed_and_made_by_this_project(tmp_path):
    claim = load_claim(write_claim(tmp_path, "a-claim", claimed_by=[PROJECT], relation="own-finding"))
    assert claim.relation is Relation.OWN_FINDING
    assert claim.proposition_by == [PROJECT]


@pytest.mark.parametrize(
    "claimed_by, relation, says",
    [
        (["AWS"], "own-finding", "an own finding has no claimant"),
        ([PROJECT], "narrows", "no source names a claimant"),
        (["AWS", PROJECT], "is", f"a source's claimant is {PROJECT!r}"),
    ],
)
def test_relation_and_claimants_must_agree(tmp_path, claimed_by, relation, says):
    problems = problems_of(write_claim(tmp_path, "a-claim", claimed_by=claimed_by, relation=relation))
    assert fields_of(problems) == {"sources"}
    assert says in problems[0].message


def test_claimants_come_from_the_sources_each_with_what_it_is_about(tmp_path):
    sources = [
        default_source(claimant="AWS", about=["neuron"]),
        default_source(),  # evidence only: source code, a page quoted for a fact
        default_source(claimant="PyTorch", about=["cuda", "cpu"]),
        default_source(claimant="AWS", about=["neuron", "cuda"]),
    ]
    claim = load_claim(write_claim(tmp_path, "a-claim", about=["neuron", "cuda"], relation="narrows", sources=sources))
    assert claim.claimants == {"AWS": ["neuron", "cuda"], "PyTorch": ["cuda", "cpu"]}
    assert claim.claimed_by == ["AWS", "PyTorch"]
    assert claim.claimed_about == ["cpu", "cuda", "neuron"]  # in BACKEND_NAMES order


@pytest.mark.parametrize(
    "source, says",
    [
        (default_source(claimant="AWS"), "must say which backends its claim is about"),
        (default_source(about=["neuron"]), "name the claimant"),
        (default_source(claimant="AWS", about=["gaudi"]), "gaudi"),
        (default_source(claimant="AWS", about=["neuron", "neuron"]), "listed twice"),
    ],
)
def test_a_source_names_its_claimant_and_scope_together(tmp_path, source, says):
    problems = problems_of(write_claim(tmp_path, "a-claim", relation="narrows", sources=[source]))
    assert fields_of(problems) <= {"sources.0", "sources.0.about"} and problems
    assert says in problems[0].message


def test_a_record_with_claimed_by_is_told_where_the_claimants_went(tmp_path):
    path = write_claim(tmp_path, "a-claim")
    text = path.read_text().replace('relation = "is"', 'relation = "is"\nclaimed_by = ["AWS"]', 1)
    path.write_text(text, encoding="utf-8")
    problems = problems_of(path)
    assert fields_of(problems) == {"claimed_by"}
    assert "claimant" in problems[0].message and "about" in problems[0].message


def test_an_attributed_claim_restates_its_sources(tmp_path):
    path = write_claim(tmp_path, "a-claim", kind="attributed", relation="narrows")
    problems = problems_of(path)
    assert fields_of(problems) == {"relation"}
    assert "attributed" in problems[0].message


def test_unknown_relation_lists_the_choices(tmp_path):
    problems = problems_of(write_claim(tmp_path, "a-claim", relation="confirms"))
    assert fields_of(problems) == {"relation"}
    assert "narrows" in problems[0].message and "own-finding" in problems[0].message


def test_a_verdict_is_within_scope_only_on_a_backend_the_claim_is_about(tmp_path):
    claim = load_claim(write_claim(tmp_path, "a-claim", about=["neuron", "cuda"]))
    assert claim.covers("neuron") and claim.covers("cuda")
    assert not claim.covers("cpu") and not claim.covers("xla")


def test_a_backend_no_claimant_speaks_about_is_out_of_scope(tmp_path):
    # AWS speaks about Neuron only: a CUDA verdict is no verdict on AWS's claim, whatever `about` says.
    sources = [default_source(claimant="AWS", about=["neuron"])]
    claim = load_claim(write_claim(tmp_path, "a-claim", about=["neuron", "cuda"], relation="narrows", sources=sources))
    assert claim.covers("neuron") and not claim.covers("cuda")


def test_an_own_finding_is_in_scope_wherever_it_is_about(tmp_path):
    claim = load_claim(write_claim(tmp_path, "a-claim", about=["xla"], claimed_by=[PROJECT], relation="own-finding"))
    assert claim.covers("xla") and not claim.covers("cpu")


def test_id_not_equal_to_file_name(tmp_path):
    path = write_claim(tmp_path, "file-name", id="other-name")
    problems = problems_of(path)
    assert fields_of(problems) == {"id"}
    assert "other-name" in problems[0].message and "file-name" in problems[0].message


@pytest.mark.parametrize("bad_id", ["Bad-Id", "snake_case", "trailing-", "two--dashes", "white space"])
def test_malformed_id(tmp_path, bad_id):
    path = write_claim(tmp_path, bad_id, script="gallery/some_script.py")
    assert "id" in fields_of(problems_of(path))


@pytest.mark.parametrize("date", ["2025", "2025-03", "2025-03-14"])
def test_source_dates_at_year_month_or_day_precision(tmp_path, date):
    claim = load_claim(write_claim(tmp_path, "a-claim", sources=[default_source(date=date)]))
    assert claim.sources[0].date == date


@pytest.mark.parametrize("date", ["March 2025", "14/03/2025", "25-03", "2025-3"])
def test_bad_source_date(tmp_path, date):
    path = write_claim(tmp_path, "a-claim", sources=[default_source(date=date)])
    assert fields_of(problems_of(path)) == {"sources.0.date"}


def test_source_url_must_be_http(tmp_path):
    path = write_claim(tmp_path, "a-claim", sources=[default_source(url="ftp://host/file")])
    assert fields_of(problems_of(path)) == {"sources.0.url"}


def _without_url(**overrides) -> dict:
    source = default_source(**overrides)
    del source["url"]
    return source


def test_an_unconfirmed_source_may_lack_an_address_if_its_note_says_where_it_was_seen(tmp_path):
    source = _without_url(confirmed=False, note="Seen only in press coverage of the launch.")
    claim = load_claim(write_claim(tmp_path, "a-claim", sources=[source]))
    assert claim.sources[0].url is None


@pytest.mark.parametrize("overrides", [{}, {"confirmed": False}, {"note": "Seen in a newspaper."}])
def test_a_source_without_an_address_must_be_unconfirmed_and_say_where_it_was_seen(tmp_path, overrides):
    path = write_claim(tmp_path, "a-claim", sources=[_without_url(**overrides)])
    problems = problems_of(path)
    assert fields_of(problems) == {"sources.0"}
    assert "only an unconfirmed source" in problems[0].message


def test_quote_too_long_is_named_with_the_limit(tmp_path):
    quote = " ".join(["word"] * (MAX_QUOTE_WORDS + 5))
    path = write_claim(tmp_path, "a-claim", sources=[default_source(quote=quote)])
    problems = problems_of(path)
    assert fields_of(problems) == {"sources.0.quote"}
    assert str(MAX_QUOTE_WORDS) in problems[0].message


def test_quote_just_under_the_limit_is_accepted(tmp_path):
    quote = " ".join(["word"] * (MAX_QUOTE_WORDS - 1))
    assert load_claim(write_claim(tmp_path, "a-claim", sources=[default_source(quote=quote)])).sources[0].quote == quote


def test_quote_of_exactly_the_limit_is_rejected(tmp_path):
    # The model, the field description and the error message all say "under 40 words".
    quote = " ".join(["word"] * MAX_QUOTE_WORDS)
    path = write_claim(tmp_path, "a-claim", sources=[default_source(quote=quote)])
    assert fields_of(problems_of(path)) == {"sources.0.quote"}


def test_executable_claim_without_script_names_the_script_field(tmp_path):
    path = write_claim(tmp_path, "a-claim", kind="executable", script=None)
    problems = problems_of(path)
    assert any("script" in p.message for p in problems)
    assert "script" in fields_of(problems)


def test_attributed_claim_with_script_names_the_script_field(tmp_path):
    path = write_claim(tmp_path, "a-claim", kind="attributed", script="gallery/a_claim.py")
    problems = problems_of(path)
    assert any("must not name a script" in p.message for p in problems)
    assert "script" in fields_of(problems)


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("no_breaking_test", {"the check": "the device is not here"}, "has no checks to break"),
        ("compiler_caches", "cold", "no compiler caches to keep cold"),
        ("network", "loopback", "needs no network"),
    ],
)
def test_an_attributed_claim_has_no_settings_for_running_a_script(tmp_path, field, value, says):
    path = write_claim(tmp_path, "a-claim", kind="attributed", topic="status", script=None, **{field: value})
    problems = problems_of(path)
    assert fields_of(problems) == {field} and says in problems[0].message


@pytest.mark.parametrize(
    "script", ["a_claim.py", "gallery/A-Claim.py", "gallery/sub/a_claim.py", "gallery/a_claim.txt"]
)
def test_script_path_outside_the_gallery_convention(tmp_path, script):
    path = write_claim(tmp_path, "a-claim", script=script)
    assert fields_of(problems_of(path)) == {"script"}


def test_invalid_toml_names_the_file(tmp_path):
    path = tmp_path / "a-claim.toml"
    path.write_text('id = "a-claim\ntitle = ', encoding="utf-8")
    problems = problems_of(path)
    assert len(problems) == 1
    assert "not valid TOML" in problems[0].message
    assert str(path) in str(problems[0])


def test_several_wrong_fields_in_one_record_are_all_reported(tmp_path):
    path = write_claim(tmp_path, "a-claim", title=None, topic="speed", about=["gaudi"], extra="x")
    assert {"title", "topic", "about", "extra"} <= fields_of(problems_of(path))


def test_id_mismatch_is_reported_together_with_other_field_problems(tmp_path):
    # load_claim promises "InvalidFileError listing every problem": a contributor should
    # not discover the id problem only after fixing the others.
    path = write_claim(tmp_path, "file-name", id="other-name", topic="speed")
    assert {"topic", "id"} <= fields_of(problems_of(path))


def test_load_claims_reports_every_broken_file_and_keeps_the_good_one(tmp_path):
    good = write_claim(tmp_path, "good-claim")
    broken = {
        write_claim(tmp_path, "no-title", title=None): "title",
        write_claim(tmp_path, "bad-topic", topic="speed"): "topic",
        write_claim(tmp_path, "bad-backend", about=["gaudi"]): "about",
        write_claim(tmp_path, "wrong-name", id="right-name"): "id",
        write_claim(tmp_path, "bad-date", sources=[default_source(date="soon")]): "sources.0.date",
    }
    invalid = tmp_path / "not-toml.toml"
    invalid.write_text("= nothing", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a record", encoding="utf-8")

    result = load_claims(tmp_path)

    assert list(result.claims) == ["good-claim"]
    assert result.paths["good-claim"] == good
    reported = {(p.path, p.field) for p in result.problems}
    for path, field in broken.items():
        assert (path, field) in reported
    assert any(p.path == invalid for p in result.problems)
    assert not any(p.path.name == "notes.txt" for p in result.problems)


def test_load_claims_on_an_empty_directory(tmp_path):
    result = load_claims(tmp_path)
    assert result.claims == {} and result.problems == []


def test_claim_set_groups_by_topic_and_lists_executables(tmp_path):
    write_claim(tmp_path, "b-claim", topic="compile")
    write_claim(tmp_path, "a-claim", topic="compile")
    write_claim(tmp_path, "said-so", topic="status", kind="attributed")
    result = load_claims(tmp_path)
    grouped = result.by_topic()
    assert list(grouped) == list(TOPICS)
    assert [c.id for c in grouped["compile"]] == ["a-claim", "b-claim"]
    assert [c.id for c in grouped["status"]] == ["said-so"]
    assert [c.id for c in result.executable()] == ["a-claim", "b-claim"]


def test_claim_json_schema_is_a_json_schema_requiring_id():
    schema = claim_json_schema()
    assert isinstance(schema, dict)
    json.loads(json.dumps(schema))  # serialisable as-is
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["type"] == "object"
    assert "id" in schema["required"]
    assert {"id", "title", "proposition", "kind", "topic", "about", "relation", "sources"} <= set(schema["required"])
    assert {"claimant", "about"} <= set(schema["$defs"]["Source"]["properties"])
    assert re.fullmatch(schema["properties"]["id"]["pattern"], "a-valid-id")
    assert not re.fullmatch(schema["properties"]["id"]["pattern"], "Not_Valid")
    assert schema["additionalProperties"] is False
    # every local reference resolves
    text = json.dumps(schema)
    for ref in re.findall(r'"\$ref": "#/\$defs/([^"]+)"', text):
        assert ref in schema["$defs"]


def test_claim_json_schema_matches_the_fields_a_record_may_hold(tmp_path):
    schema = claim_json_schema()
    assert set(claim_fields("x", caveats=[], see_also=[])) <= set(schema["properties"])
