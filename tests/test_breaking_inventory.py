"""The breaking-test inventory counts checks: each check of a claim is refuted by a test or has its own reason."""

from __future__ import annotations

import pytest

from factories import claim_fields, claim_toml, script_text, write_claim
from torchclaims.authoring.breaking_tests import take_inventory
from torchclaims.authoring.check_names import CheckName, checks_opened_in, the_one_named
from torchclaims.claims import load_claims
from torchclaims.errors import InvalidFileError

TWO_CHECKS = """
for name in ("amax", "amin"):
    with v.check(f"{name} reduces over every dimension") as check:
        check.expect(True, "")
with v.check(f"all_reduce across {2} processes gives the sum") as check:
    check.expect(True, "")
"""


def named(*parts) -> CheckName:
    return CheckName(tuple(parts), 1)


@pytest.mark.parametrize(
    "words, literal",
    [
        ("across 2 processes gives", 23),  # a field matches any text; 23 characters match literal text
        ("all_reduce across", 17),
        ("across  processes", 17),  # a field may match no text
        ("amax reduces over", 0),  # a field could hold them whole
    ],
)
def test_words_fit_a_check_where_some_value_of_its_fields_makes_a_name_containing_them(words, literal):
    assert named("all_reduce across ", None, " processes gives the sum").literal_fit(words) == literal


def test_words_fit_no_check_of_literal_text_they_are_not_in():
    assert named("all_reduce across 2 processes").literal_fit("across 3 processes") is None


def test_words_a_field_could_hold_whole_name_the_check_whose_text_they_repeat():
    ends_in_a_field = named("from_pretrained places every parameter on ", None)
    own = named("Transformers resolves device_map='", None, "' to that device")
    words = "Transformers resolves device_map='neuron' to that device"
    assert ends_in_a_field.literal_fit(words) is not None  # the trailing field could hold them all
    assert the_one_named([ends_in_a_field, own], words) is own
    assert the_one_named([named("a ", None), named("b ", None)], "neither") is None  # a tie names none


def test_checks_are_read_from_the_script_with_each_branch_of_a_conditional_name(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        TWO_CHECKS + 'with v.check("one" if flag else f"two {n}") as check:\n    pass\n', encoding="utf-8"
    )
    texts = [c.text for c in checks_opened_in(script)]
    assert texts == [
        "{…} reduces over every dimension",
        "all_reduce across {…} processes gives the sum",
        "one",
        "two {…}",
    ]


def test_a_check_named_by_a_variable_is_a_clear_error_naming_the_script_and_line(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("name = 'x'\nwith v.check(name) as check:\n    pass\n", encoding="utf-8")
    with pytest.raises(InvalidFileError) as caught:
        checks_opened_in(script)
    assert "s.py:2" in str(caught.value) and "as a string or an f-string" in str(caught.value)


def knowledge_base(root, tests: str, **fields):
    write_claim(root / "claims", "a-claim", **fields)
    (root / "gallery").mkdir()
    (root / "gallery" / "a_claim.py").write_text(script_text("a-claim", TWO_CHECKS), encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_breaking_checks.py").write_text(tests, encoding="utf-8")
    return take_inventory(root, load_claims(root / "claims"))


REFUTES_ONE = """
def test_it(monkeypatch, tmp_path):
    record = run_gallery("a_claim", monkeypatch, tmp_path)
    assert refuted(record, "amax reduces", "shape (2,) differs")
"""


def test_a_claim_with_one_check_broken_is_not_covered_the_others_are_each_reported(tmp_path):
    # The rule of before: one refuted check covered the claim. Now each unbroken check is a problem of its own.
    inventory = knowledge_base(tmp_path, REFUTES_ONE)
    assert (inventory.count("checks"), inventory.count("covered"), inventory.count("bare")) == (3, 1, 2)
    reported = [p.message for p in inventory.problems]
    assert len(reported) == 2
    assert any("'the result matches the reference'" in m for m in reported)
    assert any("'all_reduce across {…} processes gives the sum'" in m for m in reported)


def test_a_refutation_without_its_reason_covers_nothing(tmp_path):
    inventory = knowledge_base(tmp_path, REFUTES_ONE.replace(', "shape (2,) differs"', ""))
    assert inventory.count("covered") == 0 and len(inventory.problems) == 3


def test_a_reason_per_check_explains_it_and_a_reason_naming_no_check_is_a_problem(tmp_path):
    reasons = {"the result matches": "needs a device", "all_reduce across 2": "needs two hosts", "gone": "stale"}
    inventory = knowledge_base(tmp_path, REFUTES_ONE, no_breaking_test=reasons)
    assert inventory.count("explained") == 2 and inventory.count("bare") == 0
    assert [p.field for p in inventory.problems] == ["no_breaking_test.gone"]


def test_left_excuses_a_listed_check_and_a_needless_entry_is_a_problem(tmp_path):
    left = '\nLEFT = {("a-claim", "the result matches the reference"), ("a-claim", "no such check")}\n'
    inventory = knowledge_base(tmp_path, REFUTES_ONE + left)
    messages = [p.message for p in inventory.problems]
    assert len(messages) == 2
    assert any("all_reduce across" in m for m in messages)
    assert any("'no such check' is covered, explained or gone" in m for m in messages)


def test_a_left_that_is_not_written_out_is_a_clear_error(tmp_path):
    inventory = knowledge_base(tmp_path, REFUTES_ONE + "\nLEFT = set(sorted(x))\n")
    assert [p.field for p in inventory.problems] == ["LEFT"]


def test_a_claim_level_reason_of_before_is_a_clear_error(tmp_path):
    path = tmp_path / "a-claim.toml"
    path.write_text(claim_toml(claim_fields("a-claim", no_breaking_test="no device here")), encoding="utf-8")
    problems = load_claims(tmp_path).problems
    assert [p.field for p in problems] == ["no_breaking_test"] and "one reason per check" in problems[0].message


def test_a_reason_for_a_check_a_test_refutes_is_a_problem(tmp_path):
    inventory = knowledge_base(tmp_path, REFUTES_ONE, no_breaking_test={"amax reduces": "cannot be broken"})
    assert [p.message for p in inventory.problems if p.field == "no_breaking_test.amax reduces"] == [
        "a test refutes this check: its reason must go"
    ]


THROUGH_HELPERS = """
def run_on_the_stand_in(script, monkeypatch, tmp_path):
    return run_gallery(script, monkeypatch, tmp_path, as_backend="neuron")


def run_a_claim(monkeypatch, tmp_path):
    return run_on_the_stand_in("a_claim", monkeypatch, tmp_path)


def test_through_a_runner(monkeypatch, tmp_path):
    assert refuted(run_on_the_stand_in("a_claim", monkeypatch, tmp_path), "amax reduces", "shape (2,) differs")


def test_through_a_helper_with_its_own_script(monkeypatch, tmp_path):
    assert refuted(run_a_claim(monkeypatch, tmp_path), "all_reduce across", "values differ")


def test_through_a_helper_of_another_script(monkeypatch, tmp_path):
    assert refuted(run_on_the_stand_in("other", monkeypatch, tmp_path), "the result matches", "ones: max abs")
"""


def test_a_test_may_run_the_script_through_a_helper_of_the_file(tmp_path):
    inventory = knowledge_base(tmp_path, THROUGH_HELPERS)
    (claim,) = inventory.claims
    assert sorted(c.text for c in claim.covered) == [
        "all_reduce across {…} processes gives the sum",
        "{…} reduces over every dimension",
    ]
    assert [c.text for c in claim.bare] == ["the result matches the reference"]  # that test runs another script
