"""Small factories for the unit tests: environments, result records, claim files."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from torchclaims.evidence.records import CheckResult, Environment, ResultRecord, ScriptInfo, Verdict
from torchclaims.evidence.results import ResultsFile, write_results

STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SHA = "a" * 64


def make_environment(**overrides) -> Environment:
    """A plausible CPU fingerprint; ``torch=`` also moves ``packages['torch']``."""
    torch_version = overrides.get("torch", "2.13.0")
    values = dict(
        backend="cpu",
        device="cpu",
        device_name="Test CPU",
        torch=torch_version,
        packages={"torch": torch_version, "numpy": "2.4.6"},
        accelerator_runtime={},
        python="3.12.3",
        os="Linux 6.8",
        machine="x86_64",
        env_vars={},
        torchclaims="0.1.0",
    )
    values.update(overrides)
    return Environment(**values)


def make_record(claim_id: str, verdict: Verdict | str = Verdict.HOLDS, **overrides) -> ResultRecord:
    """A valid, consistent record: one check whose outcome is the verdict (none for
    an error); ``environment`` may be an Environment or a dict of overrides."""
    verdict = Verdict(verdict)
    environment = overrides.pop("environment", None)
    if environment is None:
        environment = make_environment()
    elif isinstance(environment, dict):
        environment = make_environment(**environment)
    values = dict(
        claim_id=claim_id,
        verdict=verdict,
        reason="" if verdict in (Verdict.HOLDS, Verdict.REFUTED) else f"{verdict.value} for a test reason",
        checks=[] if verdict is Verdict.ERROR else [CheckResult(name="the check", outcome=verdict)],
        started_at=STARTED,
        duration_s=1.5,
        script=ScriptInfo(path=f"gallery/{claim_id.replace('-', '_')}.py", sha256=SHA),
        environment=environment,
    )
    values.update(overrides)
    return ResultRecord(**values)


def make_results(records: list[ResultRecord], environment: Environment | None = None, **overrides) -> ResultsFile:
    values = dict(
        created=STARTED,
        label="test runner",
        environment=environment or (records[0].environment if records else make_environment()),
        records=records,
    )
    values.update(overrides)
    return ResultsFile(**values)


def write_results_file(
    path: Path, records: list[ResultRecord], environment: Environment | None = None, **overrides
) -> Path:
    write_results(path, make_results(records, environment, **overrides))
    return path


# -- claim records ---------------------------------------------------------------------


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {value!r} as TOML")


def default_source(**overrides) -> dict:
    source = dict(
        url="https://pytorch.org/docs/stable/notes/numerical_accuracy.html",
        quote="Results may differ between devices.",
        publisher="PyTorch documentation",
        date="2025-03",
    )
    source.update(overrides)
    return source


def claim_fields(claim_id: str, **fields) -> dict:
    """The fields of a valid record for ``claim_id``; a field given as None is left out."""
    kind = fields.get("kind", "executable")
    values = dict(
        id=claim_id,
        title=f"Claim {claim_id}",
        proposition=f"The operation named {claim_id} gives the same result on every backend.",
        kind=kind,
        topic="numerics",
        about=["cpu"],
        relation="is",
        script=f"gallery/{claim_id.replace('-', '_')}.py" if kind == "executable" else None,
        sources=[default_source()],
    )
    claimed_by = fields.pop("claimed_by", ["Test Publisher"])
    values.update(fields)
    values["sources"] = with_claimants(values.get("sources"), claimed_by, values.get("about"))
    return {k: v for k, v in values.items() if v is not None}


def with_claimants(sources, claimed_by, about):
    """Sources naming ``claimed_by`` as their claimants, each about ``about``: the first source
    (and any other without a claimant) names the first, one more source per further claimant.
    Nothing is added for an own finding ([PROJECT]), where the sources are not a list of tables,
    or where a source names a claimant or scope itself."""
    if (
        not isinstance(sources, list)
        or not all(isinstance(s, dict) for s in sources)
        or claimed_by in (None, ["torchclaims"])
    ):
        return sources
    if any("claimant" in s or "about" in s for s in sources):
        return sources  # the test says who claims what itself
    from torchclaims.backends import BACKEND_NAMES

    known = [
        b for b in BACKEND_NAMES if isinstance(about, list) and b in about
    ]  # a bad `about` stays the claim's own problem
    scope = known or ["cpu"]
    named = [dict(s) if "claimant" in s else {**s, "claimant": claimed_by[0], "about": scope} for s in sources]
    return named + [default_source(claimant=c, about=scope) for c in claimed_by[1:]]


def claim_toml(fields: dict) -> str:
    lines = []
    tables = {k: v for k, v in fields.items() if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)}
    for key, value in fields.items():
        if key not in tables:
            lines.append(f"{key} = {_toml_value(value)}")
    for key, items in tables.items():
        for item in items:
            lines.append("")
            lines.append(f"[[{key}]]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in item.items())
    return "\n".join(lines) + "\n"


def write_claim(directory: Path, claim_id: str, **fields) -> Path:
    """Write ``<directory>/<claim_id>.toml``; fields override the valid defaults."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{claim_id}.toml"
    path.write_text(claim_toml(claim_fields(claim_id, **fields)), encoding="utf-8")
    return path


# -- gallery scripts -------------------------------------------------------------------


def script_text(claim_id: str, body: str = "", docstring: bool = True) -> str:
    title = f"Claim {claim_id}"  # the claim's own title (claim_fields): lint requires it
    doc = (
        f'"""\n{title}\n{"=" * len(title)}\n\n:claim-verdict:`{claim_id}`\n\nWhat the script checks.\n"""\n\n'
        if docstring
        else ""
    )
    return (
        doc
        + "import torch\n\n"
        + "from torchclaims.verify import verification\n\n"
        + f'v = verification("{claim_id}", model="a linear layer")\n\n'
        + 'with v.check("the result matches the reference") as check:\n'
        + "    x = torch.ones(3, device=v.device)\n"
        + '    check.close(x.to(v.reference_device), torch.ones(3), rtol=0, atol=0, what="ones")\n'
        + body
        + "\nv.finish()\n"
    )


def write_script(root: Path, claim_id: str, text: str | None = None, name: str | None = None) -> Path:
    """Write the gallery script for ``claim_id`` (a clean one unless ``text`` is given)."""
    path = root / "gallery" / (name or f"{claim_id.replace('-', '_')}.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script_text(claim_id) if text is None else text, encoding="utf-8")
    return path


def script_info(root: Path, claim_id: str) -> ScriptInfo:
    """What a record of ``claim_id`` says about the knowledge base's current script."""
    path = f"gallery/{claim_id.replace('-', '_')}.py"
    return ScriptInfo(path=path, sha256=hashlib.sha256((root / path).read_bytes()).hexdigest())


def make_kb(root: Path, *claim_ids: str) -> Path:
    """A clean knowledge base: one executable claim and its script per id."""
    for claim_id in claim_ids:
        write_claim(root / "claims", claim_id)
        write_script(root, claim_id)
    return root


XLA_ENV = dict(  # a run of torch_xla on the CPU, as the operator tables of the tests were made
    backend="xla", device="xla:0", device_name="XLA CPU (test)", packages={"torch": "2.13.0", "torch_xla": "2.9.0"}
)


def write_xla_table(root: Path, table, verdict: str = "refuted", others: tuple[ResultRecord, ...] = ()) -> Path:
    """The knowledge base's results: its opinfo-coverage record on xla holding ``table``, then ``others``."""
    record = make_record(
        "opinfo-coverage", verdict, environment=XLA_ENV, tables=[table], script=script_info(root, "opinfo-coverage")
    )
    write_results_file(root / "results" / "xla.json", [record, *others], make_environment(**XLA_ENV))
    return root
