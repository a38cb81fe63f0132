"""Settings given as text (environment variables, command-line options, conf.py),
checked once with a message that names the setting."""

from __future__ import annotations

import math
from pathlib import Path

from .errors import UsageError


def seconds(value, name: str) -> float:
    """A positive, finite number of seconds."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number of seconds, not {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
    return number


def count(value, name: str) -> int:
    """A whole number of at least 1."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a whole number, not {value!r}") from None
    if number < 1:
        raise UsageError(f"{name} must be at least 1, not {value!r}")
    return number


def days(value, name: str) -> float:
    """A non-negative, finite number of days."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number of days, not {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise UsageError(f"{name} must be zero or a positive number of days, not {value!r}")
    return number


def flag(value, name: str) -> bool:
    """A boolean (conf.py) or the text 0/1, true/false, yes/no (environment)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise UsageError(f"{name} must be 0 or 1 (or true/false), not {value!r}")


def directory(value, name: str) -> Path:
    """A folder that exists or can be created (anything else at that path is an error)."""
    path = Path(value).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise UsageError(f"{name} {value} is not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{name} {value} cannot be created: {parent} is not a directory")
            break
    return path
