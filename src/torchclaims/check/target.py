"""The model to check: TARGET (``file.py:function`` or ``package.module:function``) loaded.

The function takes no argument and returns ``(model, example_inputs)`` or
``(model, example_inputs, loss_fn)``: a module (or any callable), a tuple of
its positional inputs (a single tensor is taken as a one-tuple) or a dict of
its keyword inputs, and a
function of the model's output giving the scalar loss of a training step.
A dict with the keys ``model``, ``inputs``, ``loss`` and ``other_inputs``
(inputs of another shape, for the recompilation check) is taken too.
Anything else is a usage error that says what was returned.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .model_errors import ModelError, describe, model_code


@dataclass
class Step:
    """A model, its example inputs, and optionally a loss: one training step."""

    model: Callable
    inputs: tuple | dict
    loss: Callable | None = None
    other_inputs: tuple | dict | None = None
    name: str = "model"

    def forward(self, inputs: tuple | dict, model=None):
        """The model's output for ``inputs`` (``model``: another copy of it, on a device)."""
        model = self.model if model is None else model
        return model(**inputs) if isinstance(inputs, dict) else model(*inputs)


def _module(spec: str):
    if spec.endswith(".py"):
        path = Path(spec).resolve()
        if not path.is_file():
            raise UsageError(f"{spec}: no such file")
        name = f"torchclaims_check_target_{path.stem}"
        loader = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module  # as an import would: torch.compile looks functions' modules up there
        sys.path.insert(0, str(path.parent))  # so that the file imports its neighbours
        try:
            with model_code(f"importing {spec}"):
                loader.loader.exec_module(module)
        finally:
            sys.path.remove(str(path.parent))
        return module
    try:
        return importlib.import_module(spec)
    except Exception as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and (spec + ".").startswith(missing + "."):  # the target itself, not what it imports
            raise UsageError(f"cannot import {spec}: {exc}") from None
        raise ModelError(describe(f"importing {spec}", exc)) from None


def parse_target(target: str) -> tuple[str, str]:
    """TARGET's module (a file that exists, or a dotted name) and function, without importing anything."""
    spec, sep, function = target.rpartition(":")
    if not sep or not spec or not function:
        raise UsageError(f"TARGET {target!r} must be path/to/file.py:function or package.module:function")
    if spec.endswith(".py") and not Path(spec).is_file():
        raise UsageError(f"{spec}: no such file")
    return spec, function


def load_target(target: str) -> Step:
    """Import TARGET and call its function; see the module docstring."""
    spec, function = parse_target(target)
    factory = getattr(_module(spec), function, None)
    if not callable(factory):
        raise UsageError(f"{target}: {spec} has no function {function!r}")
    with model_code(f"{target}"):
        returned = factory()
    return as_step(returned, function, where=target)


def _inputs(inputs, what: str, where: str) -> tuple | dict:
    import torch

    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    if isinstance(inputs, dict) and all(isinstance(k, str) for k in inputs):
        return dict(inputs)
    raise UsageError(f"{where}: {what} must be a tensor, a tuple or a dict of inputs, not {type(inputs).__name__}")


def as_step(returned, name: str = "model", *, where: str = "the check", loss=None, other_inputs=None) -> Step:
    """A :class:`Step` from what a TARGET function returned (or from the Python API's arguments)."""
    if isinstance(returned, dict):
        unknown = set(returned) - {"model", "inputs", "loss", "other_inputs"}
        if unknown or not {"model", "inputs"} <= set(returned):
            raise UsageError(
                f"{where}: a dict needs the keys model and inputs (and may have loss, other_inputs); "
                f"got {sorted(returned)}"
            )
        model, inputs = returned["model"], returned["inputs"]
        loss, other_inputs = returned.get("loss", loss), returned.get("other_inputs", other_inputs)
    elif isinstance(returned, tuple) and len(returned) in (2, 3):
        model, inputs = returned[:2]
        loss = returned[2] if len(returned) == 3 else loss
    else:
        raise UsageError(f"{where}: expected (model, example_inputs[, loss_fn]), got {type(returned).__name__}")
    if not callable(model):
        raise UsageError(f"{where}: the model must be callable (a torch.nn.Module), not {type(model).__name__}")
    if loss is not None and not callable(loss):
        raise UsageError(f"{where}: the loss function must be callable, not {type(loss).__name__}")
    other = None if other_inputs is None else _inputs(other_inputs, "other_inputs", where)
    return Step(model, _inputs(inputs, "the example inputs", where), loss, other, name)
