"""What every test gets: a process that looks the same before and after it.

Tests run in one process, so what one changes there reaches every later one,
and which tests a run holds changes what a test sees. Two such changes broke
tests only in a full run: importing Dynamo sets TORCHINDUCTOR_CACHE_DIR in the
environment, which the fingerprint records, and importing
torch.testing._internal.common_utils (op_db) freezes the torch.backends flags,
so setting torch.backends.cudnn.benchmark raises; and running the site's
conf.py puts src/ first on sys.path, where the fingerprint then counted
src/torchclaims.egg-info as an installed distribution. Each test starts and ends
with the environment the run started with (what collection or a module's
fixture set is undone too) and ends with the sys.path it started with; a test that needs op_db runs in its own forked
process (``@pytest.mark.own_process``), and one that freezes the flags here fails.

It also holds what several test files share: the ``new_site`` fixture and the
``--regen-doctrees`` option of tests/test_directive_doctrees.py.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest
import torch

from forked import run_forked
from kb import write_claim, write_site

OWN_PROCESS_LIMIT_S = 900  # a test that takes longer on a loaded 2-core machine is stuck
STARTED_WITH = dict(os.environ)  # conftest is imported before any test module


def restore_environment() -> None:
    current = os.environ.get("PYTEST_CURRENT_TEST")  # pytest's own: it removes the variable after each phase
    os.environ.clear()
    os.environ.update(STARTED_WITH)
    if current is not None:
        os.environ["PYTEST_CURRENT_TEST"] = current


def pytest_addoption(parser):
    parser.addoption(
        "--regen-doctrees",
        action="store_true",
        help="write tests/doctrees/*.txt from this build (test_directive_doctrees.py)",
    )


@pytest.fixture(autouse=True)
def the_process_is_left_as_it_was():
    restore_environment()  # autouse: before the test's own fixtures, after the module's
    frozen = torch.backends.flags_frozen()
    path = list(sys.path)
    yield
    sys.path[:] = path
    restore_environment()
    if torch.backends.flags_frozen() and not frozen:
        pytest.fail(
            "this test froze the torch.backends flags in the test process (it imported "
            "torch.testing._internal.common_utils); mark it @pytest.mark.own_process"
        )


@pytest.fixture(scope="session")
def new_site(tmp_path_factory):
    """Writes the site of a small knowledge base (tests/kb.py) into a new folder and returns it:
    ``new_site("name", ("kb-holds", "holds"), ...)``, each claim as kb.write_claim's arguments."""

    def make(name: str, *claims: tuple) -> Path:
        root = tmp_path_factory.mktemp(name)
        write_site(root)
        for claim in claims:
            write_claim(root, *claim)
        return root

    return make


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run a test marked ``own_process`` in a forked child of this process."""
    if pyfuncitem.get_closest_marker("own_process") is None:
        return None
    test = pyfuncitem.obj
    arguments = {name: pyfuncitem.funcargs[name] for name in inspect.signature(test).parameters}
    run_forked(lambda: test(**arguments), OWN_PROCESS_LIMIT_S, pyfuncitem.name)
    return True
