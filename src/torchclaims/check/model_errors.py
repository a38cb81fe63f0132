"""A model that cannot run: its file, its function or its step raised.

The user gets one line naming the exception and the user's own frame
(``model.py:12 in forward``), not a traceback through torch and this package:
the frame is the innermost one outside the standard library, torch and
torchclaims (for a syntax error, the line the parser stopped at).
"""

from __future__ import annotations

import sysconfig
import traceback
from contextlib import contextmanager
from pathlib import Path

import torch

from ..errors import TorchclaimsError

PATHS = sysconfig.get_paths()
OURS = tuple(str(Path(p).resolve()) for p in (Path(torch.__file__).parent, Path(__file__).resolve().parents[1]))
STDLIB = str(Path(PATHS["stdlib"]).resolve())
INSTALLED = tuple(str(Path(PATHS[k]).resolve()) for k in ("purelib", "platlib"))  # may lie under the stdlib's


def _users(filename: str) -> bool:
    """Whether a frame's file is the user's: not torch, torchclaims or the standard library (<frozen ...> neither)."""
    path = str(Path(filename).resolve())
    if filename.startswith("<") or path.startswith(OURS):
        return False
    return path.startswith(INSTALLED) or not path.startswith(STDLIB)


class ModelError(TorchclaimsError):
    """The model could not run, through no fault of the command line: no evidence either way."""


def users_frame(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame of the user's code, or '' if none is."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if _users(frame.filename):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return ""


def describe(what: str, exc: BaseException) -> str:
    """One line: what raised, the exception's first line and where in the user's code."""
    message = (str(exc.msg if isinstance(exc, SyntaxError) else exc).strip().splitlines() or [""])[0]
    where = users_frame(exc)
    return f"{what} raised {type(exc).__name__}: {message[:300]}" + (f" ({where})" if where else "")


@contextmanager
def model_code(what: str):
    """Any exception from the user's code in the block becomes a :class:`ModelError` saying ``what`` raised."""
    try:
        yield
    except TorchclaimsError:
        raise
    except Exception as exc:
        raise ModelError(describe(what, exc)) from None
