"""Does each private torch name the project uses resolve in this interpreter?

``python -m torchclaims.history.name_probe OUTPUT PACKAGE`` imports each name
of :mod:`.private_names` as code would reach it (a module where one is found,
else an attribute) and writes to OUTPUT, as JSON, the names that resolve, why
each other one does not, and the installed versions of torch and of PACKAGE
(the package the release sweep's series varies). The release sweep runs it
with a release's interpreter, in the environment its claims run in; it uses
the standard library alone, so that no package of the project's can stand
between torch and the answer, and the sweep validates what it wrote before
keeping it (:mod:`.name_answers`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import platform
import sys
from pathlib import Path

from .private_names import NAMES

REASON_CHARS = 300  # of the first line of why a name does not resolve


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text[:REASON_CHARS]


def resolve(name: str) -> str:
    """'' when ``name`` resolves here, else why not: each part is an attribute of
    the one before, or a submodule not imported yet."""
    head, *parts = name.split(".")
    try:
        found = importlib.import_module(head)
        for depth, part in enumerate(parts, 2):
            try:
                found = getattr(found, part)
            except AttributeError:
                if not hasattr(found, "__path__"):  # not a package: nothing more to import
                    raise
                found = importlib.import_module(".".join(name.split(".")[:depth]))
    except Exception as exc:  # whatever importing or reading raises, the name is not there to use
        return _why(exc)
    return ""


def probe(names=NAMES) -> dict:
    resolves, missing = [], {}
    for name in sorted(names):
        why = resolve(name)
        if why:
            missing[name] = why
        else:
            resolves.append(name)
    return {"resolves": resolves, "missing": missing}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m torchclaims.history.name_probe OUTPUT PACKAGE", file=sys.stderr)
        return 2
    output, package = Path(argv[0]), argv[1]
    try:
        versions = {name: importlib.metadata.version(name) for name in ("torch", package)}
    except importlib.metadata.PackageNotFoundError as exc:
        print(f"name_probe: {exc.args[0]} is not installed here", file=sys.stderr)
        return 2
    answer = {
        "package": package,
        "version": versions[package],
        "torch": versions["torch"],
        "python": platform.python_version(),
        **probe(),
    }
    output.write_text(json.dumps(answer, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
