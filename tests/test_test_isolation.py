"""The test process is left as each test found it (tests/conftest.py): an inner
pytest run with this suite's conftest shows each guard failing or holding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.processes  # an inner pytest run

HERE = Path(__file__).parent


def test_a_test_that_freezes_the_backend_flags_fails_and_one_in_its_own_process_does_not(pytester, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # the inner run starts without it
    for helper in ("conftest.py", "forked.py", "kb.py"):  # the conftest and what it imports
        shutil.copy(HERE / helper, pytester.path / helper)
    pytester.makeini("[pytest]\nmarkers =\n    own_process: in a forked child\n")
    pytester.makepyfile(
        test_inner="""
import os

import pytest
import torch


@pytest.fixture(scope="module")
def sets_a_variable_for_the_module():
    os.environ["TORCHCLAIMS_LEAKED"] = "module"


def test_a_sets_a_variable(sets_a_variable_for_the_module):
    assert "TORCHCLAIMS_LEAKED" not in os.environ, "a module fixture's change is undone before the test"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/somewhere"


def test_b_finds_it_unset():
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ and "TORCHCLAIMS_LEAKED" not in os.environ


def test_b1_puts_a_folder_first_on_the_import_path():
    import sys

    sys.path.insert(0, "/leaked/by/a/test")  # as running the site's conf.py does


def test_b2_finds_the_path_as_it_was():
    import sys

    assert "/leaked/by/a/test" not in sys.path


@pytest.mark.own_process
def test_c_imports_op_db_in_its_own_process(tmp_path):
    from torch.testing._internal.common_methods_invocations import op_db

    assert op_db and tmp_path.is_dir() and torch.backends.flags_frozen()


@pytest.mark.own_process
def test_d_fails_in_its_own_process():
    assert False, "the child's failure reaches the parent"


def test_e_imports_op_db_here():
    from torch.testing._internal.common_methods_invocations import op_db

    assert op_db
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*froze the torch.backends flags*mark it @pytest.mark.own_process*",  # errors come first
            "*test_d_fails_in_its_own_process failed in its own process*",
        ]
    )
    assert "ERROR test_inner.py::test_e_imports_op_db_here" in result.stdout.str()
