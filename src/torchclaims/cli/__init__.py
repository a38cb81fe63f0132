"""Command line: verify, lint, diff, merge, attest, show, new, schema, sweep, check, bundle, doctor.

Works in the current environment with no site build. ``verify`` runs the same
scripts through the same isolated runner as the Sphinx build. Each command is
one module of this package: ``register(add)`` declares its options and
``run(args)`` does it. Usage errors are caught in one place (``main``) and
printed to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from enum import IntEnum

from ..errors import InvalidFileError, TorchclaimsError, UsageError
from ..text_safety import guarded


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # a claim errored, lint found problems, diff found a regression, check found the model wrong
    USAGE_ERROR = 2
    INVALID_INPUT = 3  # a results file or record failed validation
    CHECK_ERROR = 4  # check: the model could not run (it raised here) or the run on the backend broke
    CHECK_UNVERIFIED = 5  # check: the backend could not be checked here, or a targeted backend was never measured
    INTERRUPTED = 130  # Ctrl-C, as shells report it


# The commands' modules, in the order --help lists them.
COMMANDS = ("verify", "lint", "diff", "merge", "attest", "show", "sweep", "bundle", "new", "check", "doctor", "schema")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="torchclaims", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=".", help="project root holding claims/ and gallery/ (default: .)")
    sub = top.add_subparsers(dest="command", required=True)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, parents=[common])

    for name in COMMANDS:  # imported here: a command's module imports ExitCode from this one
        importlib.import_module(f".{name}", __name__).register(add)
    return top


def main(argv: list[str] | None = None) -> int:
    with guarded():  # every console line: data never drives the terminal (text_safety)
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt as exc:  # the runner has ended every process it started
        print(f"torchclaims: {exc or 'interrupted'}", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except UsageError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except InvalidFileError as exc:
        print(f"torchclaims: invalid input:\n{exc}", file=sys.stderr)
        return ExitCode.INVALID_INPUT
    except TorchclaimsError as exc:
        print(f"torchclaims: {exc}", file=sys.stderr)
        return ExitCode.FAILED
