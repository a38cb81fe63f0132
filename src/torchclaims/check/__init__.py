"""``torchclaims check``: the knowledge base applied to a team's own model.

    import torchclaims

    report = torchclaims.check(model, (x,), loss=lambda out: out.sum())
    print(torchclaims.check.summary(report))

Static mode (this module, no device): one step runs on the CPU under a
dispatch recorder (:mod:`.recorder`), sandboxed for a TARGET the command line
names (:mod:`.traced`) and in the caller's process for the Python API, whose
caller already runs the model; every operator it dispatched is looked
up (:mod:`.lookup`, which reads each cell's samples against the model's calls
with :mod:`.samples`) in every committed coverage table and defect claim
(:mod:`.knowledge`), giving a :class:`~.report.Report` that the renderers
print (:mod:`.terminal`, :mod:`.html_report`). Backend mode runs the step on
a backend against the CPU in the isolated runner (:mod:`.device_run`, which
runs :mod:`.step_script`) and writes a result record. :mod:`.testing` keeps
the check in a test suite.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from ..backends import BACKEND_NAMES
from ..errors import UsageError
from ..project import Folders
from ..site_addresses import Links, site_address
from .knowledge import load_knowledge
from .lookup import look_up
from .recorder import UsedOperator, record_step
from .report import Report
from .standing import standings
from .target import Step, as_step, parse_target
from .terminal import summary
from .traced import trace

__all__ = ["check", "check_step", "check_target", "default_root", "summary", "Report", "Step"]


def default_root(given: str | Path | None = None) -> Path:
    """The knowledge base: ``given``, else the current folder or the checkout this package runs from."""
    candidates = [Path(given)] if given is not None else [Path.cwd(), Path(__file__).resolve().parents[3]]
    for root in candidates:
        if Folders(root).claims.is_dir() and Folders(root).results.is_dir():
            return root.resolve()
    raise UsageError(
        f"no claims/ and results/ in {', '.join(map(str, candidates))}: give --root, a torchclaims checkout"
    )


def model_type(model) -> str:
    """The transformers architecture of a model (``config.model_type``), or ''."""
    value = getattr(getattr(model, "config", None), "model_type", "")
    return value if isinstance(value, str) else ""


def known_targets(targets: set[str] | None) -> None:
    """A usage error for a target backend no descriptor has."""
    unknown = sorted(set(targets or ()) - set(BACKEND_NAMES))
    if unknown:
        raise UsageError(f"unknown target backend(s) {', '.join(unknown)}; choose from {', '.join(BACKEND_NAMES)}")


def check_step(step: Step, *, target: str = "", **options) -> Report:
    """The static report of one step, traced in this process (see the module docstring);
    ``options``: those of :func:`report_on`."""
    return report_on(record_step(step), model_type(step.model), target or step.name, **options)


def check_target(target: str, *, root: str | Path | None = None, name: str = "", **options) -> Report:
    """The static report of TARGET, whose code (import, build and step) runs sandboxed (:mod:`.traced`)."""
    site_address(options.get("site_url"), root=default_root(root))  # usage errors before the model runs
    parse_target(target)
    known_targets(options.get("targets"))
    traced = trace(target)
    report = report_on(traced.used, traced.model_type, name or target, root=root, **options)
    report.sandbox = traced.sandbox
    return report


def report_on(
    used: list[UsedOperator],
    kind: str,
    target: str,
    *,
    root: str | Path | None = None,
    targets: set[str] | None = None,
    site_url: str | None = None,
    accept=(),
) -> Report:
    """The report on the operators a step dispatched; ``site_url``: see :func:`..site_addresses.site_address`;
    ``accept``: see :mod:`.lookup`."""
    known_targets(targets)
    project = default_root(root)
    knowledge = load_knowledge(project)
    address = site_address(site_url, root=project)
    links = Links(address.base)
    columns = look_up(used, knowledge, targets=targets, model_type=kind, links=links, accepted=frozenset(accept))
    problems = [str(p) for p in knowledge.problems]
    report = Report(target, [u.as_dict() for u in used], columns, kind, problems)
    report.backends = standings(columns, knowledge.claims, len(used), set(targets or ()), links)
    report.site, report.links = address.base, address.describe()
    return report


def check(
    model, example_inputs, loss=None, *, other_inputs=None, root=None, targets=None, site_url=None, accept=()
) -> Report:
    """The static report of ``model`` on ``example_inputs`` (and, with ``loss``, its backward pass).

    ``targets``: backend names the exit gate (``Report.failed``) looks at (default: all);
    ``accept``: coverage rows and defect claims to cite without judging.
    """
    step = as_step((model, example_inputs), type(model).__name__, loss=loss, other_inputs=other_inputs)
    return check_step(
        step, root=root, targets=None if targets is None else set(targets), site_url=site_url, accept=accept
    )


class _CallableModule(types.ModuleType):
    """``torchclaims.check(model, inputs)`` calls :func:`check` (the module stays a package)."""

    def __call__(self, *args, **kwargs) -> Report:
        return check(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
