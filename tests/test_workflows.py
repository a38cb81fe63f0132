"""GitHub Actions workflows: actionlint accepts them, and fork code never reaches
the accelerator runners without a maintainer's approval.

actionlint comes from the ``test`` extra (``pip install -e ".[test]"``); a
missing binary fails these tests rather than skipping them, so a green run
always means the workflows were checked.

The fork-safety tests do not trust comments or job names: they evaluate each
job's ``if:`` with a small interpreter of GitHub's expression language (the
subset the workflows use) for the events that matter, and check which jobs
would run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))
ACCELERATORS = WORKFLOWS / "accelerators.yml"
PUBLISH = WORKFLOWS / "publish.yml"
CI = WORKFLOWS / "ci.yml"

REPOSITORY = "torchclaims/torchclaims"
FORK = "contributor/torchclaims"


def load(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def triggers(workflow: dict) -> dict:
    """The ``on:`` section as a mapping (YAML 1.1 reads the key ``on`` as True)."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return dict(on or {})


def steps(workflow: dict) -> Iterator[tuple[str, dict]]:
    for name, job in workflow.get("jobs", {}).items():
        for step in job.get("steps", []):
            yield name, step


def strings(value) -> Iterator[str]:
    """Every string in a parsed YAML document (keys included), comments excluded."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# -- actionlint ---------------------------------------------------------------------


def actionlint_binary() -> str | None:
    found = shutil.which("actionlint")
    if found:
        return found
    beside_python = Path(sys.executable).with_name("actionlint")
    return str(beside_python) if beside_python.is_file() else None


def test_the_workflows_exist():
    assert {p.name for p in WORKFLOW_FILES} >= {"ci.yml", "accelerators.yml", "publish.yml"}


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_actionlint_accepts_the_workflow(path):
    binary = actionlint_binary()
    if binary is None:
        pytest.fail(
            "actionlint is not installed, so the workflows cannot be checked: "
            'install the test extra (pip install -e ".[test]", which provides actionlint) '
            "or put an actionlint binary on PATH"
        )
    run = subprocess.run(
        [binary, "-no-color", "-oneline", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"actionlint found problems in {path.name}:\n{run.stdout}{run.stderr}"


# -- properties of every workflow ---------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_no_workflow_uses_pull_request_target(path):
    """pull_request_target runs a fork's code with the base repository's token and secrets."""
    workflow = load(path)
    assert "pull_request_target" not in triggers(workflow)
    assert not [s for s in strings(workflow) if "pull_request_target" in s]


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_permissions_are_set_at_the_top_level(path):
    workflow = load(path)
    assert "permissions" in workflow, f"{path.name}: set `permissions:` at the top level (least privilege)"
    assert workflow["permissions"] in ({}, {"contents": "read"}), (
        f"{path.name}: the top-level token must be read-only; grant more to the one job that needs it"
    )


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_job_has_a_timeout(path):
    for name, job in load(path)["jobs"].items():
        assert "timeout-minutes" in job, f"{path.name}: job {name} needs timeout-minutes"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_actions_are_pinned_to_a_major_version(path):
    for job, step in steps(load(path)):
        uses = step.get("uses")
        if uses and not uses.startswith("./"):
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", uses), (
                f"{path.name}: job {job}: pin {uses} to a major tag (@vN)"
            )


def test_ci_runs_on_pull_requests_and_pushes_to_main():
    on = triggers(load(CI))
    assert "pull_request" in on
    assert on["push"]["branches"] == ["main"]


# -- the accelerators workflow -----------------------------------------------------


def test_accelerators_triggers():
    on = triggers(load(ACCELERATORS))
    assert set(on) == {"push", "schedule", "workflow_dispatch", "pull_request"}
    assert on["push"]["branches"] == ["main"]


def test_accelerators_checkouts_do_not_persist_credentials():
    checkouts = [
        (job, step)
        for job, step in steps(load(ACCELERATORS))
        if str(step.get("uses", "")).startswith("actions/checkout@")
    ]
    assert checkouts, "accelerators.yml checks the repository out"
    for job, step in checkouts:
        value = (step.get("with") or {}).get("persist-credentials")
        assert value in (False, "false"), f"job {job}: actions/checkout needs `persist-credentials: false`"


def writes(grant) -> set[str]:
    return {scope for scope, level in (grant or {}).items() if level == "write"}


def test_accelerators_use_no_secrets_and_write_only_to_sign_attestations():
    """The only write permissions are the two an attestation needs, in the one job
    that signs: it runs no repository code and never runs for a pull request."""
    workflow = load(ACCELERATORS)
    assert not [s for s in strings(workflow) if re.search(r"\bsecrets\b", s)], "accelerators.yml must not use secrets"
    assert not writes(workflow["permissions"])
    signing = {name: job for name, job in workflow["jobs"].items() if writes(job.get("permissions"))}
    assert list(signing) == ["attest"], f"jobs with write permissions: {sorted(signing)}"
    attest = signing["attest"]
    assert writes(attest["permissions"]) == {"id-token", "attestations"}
    assert str(attest["runs-on"]).startswith("ubuntu-"), "sign on a GitHub-hosted runner, never a self-hosted one"
    uses = [step.get("uses", "") for step in attest["steps"]]
    assert all(step.get("uses") and "run" not in step for step in attest["steps"]), "the signing job runs no scripts"
    assert not [u for u in uses if u.startswith("actions/checkout@")], (
        "the signing job never checks out repository code"
    )
    assert any(u.startswith("actions/attest-build-provenance@") for u in uses)


def test_pull_requests_are_never_attested():
    workflow = load(ACCELERATORS)
    for head in (FORK, REPOSITORY):
        assert simulate(workflow, pull_request(head), approve=True)["attest"] == "skipped"


@pytest.mark.parametrize("event", ["push", "schedule", "workflow_dispatch"])
def test_trusted_runs_are_attested(event):
    assert simulate(load(ACCELERATORS), TRUSTED_EVENTS[event], approve=False)["attest"] == "success"


def test_verification_states_the_workflow_run_and_pull_requests_are_compared():
    steps_by_name = {step.get("name"): step for _, step in steps(load(ACCELERATORS))}
    verify_script = steps_by_name["Verify the claims"]["run"]
    assert verify_script.count("--workflow-run") == 2  # the xla session and the others
    compare = steps_by_name["Compare the results files this pull request commits with this run"]
    assert "github.event_name == 'pull_request'" in compare["if"]
    assert "torchclaims diff --reproduce" in compare["run"]


def test_publish_merges_only_attested_files():
    workflow = load(PUBLISH)
    merge = next(step for _, step in steps(workflow) if step.get("name") == "Merge them into results/")
    assert '--verify-attestation "$GITHUB_REPOSITORY"' in merge["run"]
    assert workflow["jobs"]["build"]["permissions"]["attestations"] == "read"
    # Every attestation is verified again after merge: nothing merge wrote could mark a file attested.
    names = [step.get("name") for _, step in steps(workflow)]
    assert names.index("Verify the attestations of the results files") < names.index("Build the site")
    attest = next(
        step for _, step in steps(workflow) if step.get("name") == "Verify the attestations of the results files"
    )
    assert attest["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert 'torchclaims attest "$GITHUB_REPOSITORY" --output "$ANSWERS"' in attest["run"]
    build = next(step for _, step in steps(workflow) if step.get("name") == "Build the site")
    assert build["env"]["TORCHCLAIMS_VERIFY_ATTESTATIONS"] == "${{ github.repository }}"
    # The build reads gh's answers from outside the checkout and holds no token.
    assert build["env"]["TORCHCLAIMS_ATTESTATIONS"] == attest["env"]["ANSWERS"]
    assert attest["env"]["ANSWERS"].startswith("${{ runner.temp }}/")


def test_the_site_build_holds_no_token():
    """Sphinx, the engine and every library the build imports run without a credential."""
    workflow = load(PUBLISH)
    build = next(step for _, step in steps(workflow) if step.get("name") == "Build the site")
    assert not any("token" in text.lower() or "secrets." in text for text in strings(build)), build
    assert not any("token" in text.lower() or "secrets." in text for text in strings(workflow.get("env", {})))
    assert not any("token" in text.lower() for text in strings(workflow["jobs"]["build"].get("env", {})))


def test_accelerators_scripts_take_no_expressions():
    """Values reach run: scripts through env, never spliced into the shell text."""
    for job, step in steps(load(ACCELERATORS)):
        assert "${{" not in step.get("run", ""), f"job {job}: pass values to `run:` through `env:`"


# -- a small interpreter of GitHub Actions expressions --------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>(),])|(?P<name>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*))"
)
STATUS_FUNCTIONS = ("success", "always", "failure", "cancelled")


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"cannot read the expression at {text[position:]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class Expression:
    """Parses ``||``, ``&&``, ``==``/``!=``, comparisons, ``!``, calls, literals and contexts."""

    def __init__(self, text: str):
        text = text.strip()
        if text.startswith("${{") and text.endswith("}}"):
            text = text[3:-2]
        self.text = text
        self._tokens = _tokens(text)
        self._at = 0
        self._tree = self._or()
        if self._at != len(self._tokens):
            raise ValueError(f"unexpected {self._tokens[self._at][1]!r} in {text!r}")

    # parsing -----------------------------------------------------------------------
    def _peek(self) -> str | None:
        return self._tokens[self._at][1] if self._at < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        token = self._tokens[self._at]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, got {token[1]!r} in {self.text!r}")
        self._at += 1
        return token

    def _binary(self, operators: tuple[str, ...], operand: Callable):
        left = operand()
        while self._peek() in operators:
            operator, right = self._take()[1], operand()
            left = ("binary", operator, left, right)
        return left

    def _or(self):
        return self._binary(("||",), self._and)

    def _and(self):
        return self._binary(("&&",), self._equality)

    def _equality(self):
        return self._binary(("==", "!="), self._comparison)

    def _comparison(self):
        return self._binary(("<", ">", "<=", ">="), self._unary)

    def _unary(self):
        if self._peek() == "!":
            self._take()
            return ("not", self._unary())
        return self._primary()

    def _primary(self):
        kind, value = self._take()
        if value == "(":
            inner = self._or()
            self._take(")")
            return inner
        if kind == "string":
            return ("literal", value[1:-1].replace("''", "'"))
        if kind == "number":
            return ("literal", float(value))
        if kind == "name" and value in ("true", "false", "null"):
            return ("literal", {"true": True, "false": False, "null": None}[value])
        if kind == "name" and self._peek() == "(":
            self._take("(")
            arguments = []
            while self._peek() != ")":
                arguments.append(self._or())
                if self._peek() == ",":
                    self._take(",")
            self._take(")")
            return ("call", value, arguments)
        if kind == "name":
            return ("context", value)
        raise ValueError(f"unexpected {value!r} in {self.text!r}")

    # evaluation --------------------------------------------------------------------
    @property
    def uses_status_function(self) -> bool:
        return any(kind == "name" and value in STATUS_FUNCTIONS for kind, value in self._tokens)

    def evaluate(self, contexts: dict, functions: dict[str, Callable]):
        return self._eval(self._tree, contexts, functions)

    def _eval(self, node, contexts, functions):
        kind = node[0]
        if kind == "literal":
            return node[1]
        if kind == "context":
            value = contexts
            for part in node[1].split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return value
        if kind == "call":
            if node[1] not in functions:
                raise ValueError(f"function {node[1]}() is not supported by this test's interpreter")
            return functions[node[1]](*(self._eval(a, contexts, functions) for a in node[2]))
        if kind == "not":
            return not truthy(self._eval(node[1], contexts, functions))
        operator, left = node[1], self._eval(node[2], contexts, functions)
        if operator == "&&":
            return self._eval(node[3], contexts, functions) if truthy(left) else left
        if operator == "||":
            return left if truthy(left) else self._eval(node[3], contexts, functions)
        right = self._eval(node[3], contexts, functions)
        if operator in ("==", "!="):
            same = equal(left, right)
            return same if operator == "==" else not same
        return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[operator]


def truthy(value) -> bool:
    return value not in (None, False, 0, "")


def equal(left, right) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.lower() == right.lower()  # GitHub compares strings ignoring case
    return left == right


def test_the_interpreter_follows_github_semantics():
    contexts = {"github": {"event_name": "push", "repository": "Owner/Repo"}, "needs": {"a": {"result": "skipped"}}}
    functions = {"success": lambda: False, "always": lambda: True, "cancelled": lambda: False, "failure": lambda: False}
    check = lambda text: Expression(text).evaluate(contexts, functions)  # noqa: E731
    assert check("github.event_name == 'push' && github.repository == 'owner/repo'") is True
    assert check("!cancelled() && (github.event_name != 'push' || needs.a.result == 'success')") is False
    assert check("${{ always() }}") is True
    assert check("github.event.pull_request.head.repo.full_name == github.repository") is False
    assert check("github.missing || 'fallback'") == "fallback"
    assert Expression("!cancelled() && true").uses_status_function
    assert not Expression("github.event_name == 'push'").uses_status_function


# -- which jobs run, event by event ----------------------------------------------------


def _needs(job: dict) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def simulate(workflow: dict, github: dict, approve: bool) -> dict[str, str]:
    """Each job's result for one event: ``success``, ``skipped``, or ``failure`` for a job
    whose environment a maintainer did not approve. A job with no ``if:`` (or one that
    calls no status function) implicitly requires every job it needs to have succeeded."""
    jobs = workflow["jobs"]
    results: dict[str, str] = {}

    def ancestors(name: str) -> set[str]:
        found = set()
        for need in _needs(jobs[name]):
            found |= {need} | ancestors(need)
        return found

    pending = list(jobs)
    while pending:
        name = next(n for n in pending if all(need in results for need in _needs(jobs[n])))
        pending.remove(name)
        job, before = jobs[name], ancestors(name)
        functions = {
            "success": lambda before=before: all(results[a] == "success" for a in before),
            "failure": lambda before=before: any(results[a] == "failure" for a in before),
            "always": lambda: True,
            "cancelled": lambda: False,
            "contains": lambda haystack, needle: needle in haystack if haystack else False,
        }
        contexts = {
            "github": github,
            "needs": {n: {"result": results[n]} for n in _needs(job)},
            "inputs": {},
            "vars": {},
        }
        condition = job.get("if")
        if condition is None or isinstance(condition, bool):
            runs = functions["success"]() and condition is not False
        else:
            expression = Expression(str(condition))
            runs = truthy(expression.evaluate(contexts, functions))
            if not expression.uses_status_function:
                runs = runs and functions["success"]()
        if not runs:
            results[name] = "skipped"
        elif job.get("environment"):
            results[name] = "success" if approve else "failure"
        else:
            results[name] = "success"
    return results


def pull_request(head_repository: str) -> dict:
    return {
        "event_name": "pull_request",
        "repository": REPOSITORY,
        "ref": "refs/pull/7/merge",
        "event": {"pull_request": {"number": 7, "head": {"repo": {"full_name": head_repository}}}},
    }


TRUSTED_EVENTS = {
    "push": {"event_name": "push", "repository": REPOSITORY, "ref": "refs/heads/main", "event": {}},
    "schedule": {"event_name": "schedule", "repository": REPOSITORY, "ref": "refs/heads/main", "event": {}},
    "workflow_dispatch": {
        "event_name": "workflow_dispatch",
        "repository": REPOSITORY,
        "ref": "refs/heads/main",
        "event": {},
    },
    "same-repository pull request": pull_request(REPOSITORY),
}


def gated(workflow: dict) -> set[str]:
    """Jobs that wait for a maintainer: they name a protected environment."""
    return {name for name, job in workflow["jobs"].items() if job.get("environment")}


def test_a_fork_pull_request_runs_nothing_until_a_maintainer_approves():
    workflow = load(ACCELERATORS)
    results = simulate(workflow, pull_request(FORK), approve=False)
    ran = sorted(name for name, result in results.items() if result != "skipped" and name not in gated(workflow))
    assert ran == [], f"jobs that would run fork code without approval: {ran}"
    waiting = [name for name in gated(workflow) if results[name] != "skipped"]
    assert waiting, "a fork's pull request must wait in a job with a protected environment"
    for name in waiting:
        environment = workflow["jobs"][name]["environment"]
        environment = environment["name"] if isinstance(environment, dict) else environment
        assert "${{" not in str(environment), f"job {name}: the protected environment must be named literally"


def test_an_approved_fork_pull_request_is_verified():
    workflow = load(ACCELERATORS)
    results = simulate(workflow, pull_request(FORK), approve=True)
    assert results["verify"] == "success"


@pytest.mark.parametrize("event", list(TRUSTED_EVENTS))
def test_trusted_events_are_verified_without_waiting(event):
    workflow = load(ACCELERATORS)
    results = simulate(workflow, TRUSTED_EVENTS[event], approve=False)
    assert results["verify"] == "success"
    assert all(results[name] == "skipped" for name in gated(workflow)), "only forks wait for approval"


# -- the publish workflow ------------------------------------------------------------


def workflow_run(event: str, head_repository: str, conclusion: str = "success") -> dict:
    return {
        "event_name": "workflow_run",
        "repository": REPOSITORY,
        "ref": "refs/heads/main",
        "event": {
            "workflow_run": {
                "id": 42,
                "event": event,
                "conclusion": conclusion,
                "head_branch": "main",
                "head_repository": {"full_name": head_repository},
            }
        },
    }


@pytest.mark.parametrize(
    ("github", "builds"),
    [
        (workflow_run("push", REPOSITORY), True),
        (workflow_run("schedule", REPOSITORY, conclusion="failure"), True),
        (workflow_run("workflow_dispatch", REPOSITORY), True),
        (workflow_run("pull_request", FORK), False),
        (workflow_run("pull_request", REPOSITORY), False),
        (workflow_run("push", REPOSITORY, conclusion="cancelled"), False),
        (TRUSTED_EVENTS["push"], True),
        (TRUSTED_EVENTS["workflow_dispatch"], True),
    ],
    ids=[
        "after-push",
        "after-schedule-with-errors",
        "after-dispatch",
        "after-fork-pr",
        "after-pr",
        "after-cancelled",
        "push",
        "dispatch",
    ],
)
def test_publish_never_uses_a_pull_requests_artifacts(github, builds):
    results = simulate(load(PUBLISH), github, approve=True)
    assert (results["build"] == "success") is builds
    assert results["deploy"] == results["build"]


def test_publish_deploys_with_the_pages_permissions_only():
    jobs = load(PUBLISH)["jobs"]
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert "write" not in jobs["build"]["permissions"].values()


# -- accelerators: a job for every backend the site has a column for -----------------


def test_every_backend_but_the_cpu_reference_has_an_accelerator_job():
    from torchclaims.backends import BACKEND_NAMES

    jobs = load(ACCELERATORS)["jobs"]["verify"]["strategy"]["matrix"]["include"]
    assert sorted(j["backend"] for j in jobs) == sorted(set(BACKEND_NAMES) - {"cpu"})
    for job in jobs:
        runner = job["runner"]
        if isinstance(runner, list):  # a self-hosted machine: its label names the backend
            assert runner[0] == "self-hosted" and job["backend"] in runner, job
        assert job["session"] in ("verify", "xla", "tpu"), job


# -- the release sweep as a matrix -----------------------------------------------------

SWEEP = WORKFLOWS / "sweep.yml"


def test_the_sweep_workflow_never_runs_for_a_pull_request():
    assert set(triggers(load(SWEEP))) == {"schedule", "workflow_dispatch"}


def test_the_sweep_runs_one_job_per_release_and_merges_them_after():
    jobs = load(SWEEP)["jobs"]
    assert jobs["release"]["needs"] == "plan"
    assert "fromJSON(needs.plan.outputs.matrix)" in str(jobs["release"]["strategy"]["matrix"])
    assert jobs["merge"]["needs"] == "release"
    merge_steps = [step.get("uses", "") + step.get("run", "") for step in jobs["merge"]["steps"]]
    assert any(s.startswith("actions/download-artifact@") for s in merge_steps)
    assert any("torchclaims merge" in s for s in merge_steps), "the merged files are checked as any submitted file is"
    results = simulate(load(SWEEP), TRUSTED_EVENTS["workflow_dispatch"], approve=False)
    assert results == {"plan": "success", "release": "success", "merge": "success"}


def test_sweep_matrix_lists_each_selected_release_once():
    from torchclaims.history.releases import load_releases

    run = subprocess.run(
        [sys.executable, "-m", "torchclaims", "sweep", "--matrix", "--series", "torch_xla"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert run.returncode == 0, run.stderr
    include = json.loads(run.stdout)["include"]
    assert [(j["series"], j["version"], j["backend"]) for j in include] == [
        ("torch_xla", v, "xla") for v in load_releases(ROOT).series["torch_xla"].versions
    ]
