"""Coverage sweeps: every operator and every architecture, measured on a backend.

(Not the release sweep, :mod:`torchclaims.history.release_sweep`, which runs every
claim again over torch and torch_xla releases.)

A sweep fixes its list from metadata first (the denominator), runs it in
parallel worker processes that may crash or hang without taking the sweep
down, and records one coded outcome per cell in a :class:`~.table.SweepTable`
that the result record carries whole.

- :class:`TableBuilder` and :class:`SweepTable`: the compact table a record
  carries (pure Python; defined with the records, in
  :mod:`torchclaims.evidence.coverage_table`), for a script that fills one itself.
- :mod:`.pool`: parallel, crash- and hang-proof worker processes.
- :mod:`.operators`: OpInfo operators × dtypes, compared with the CPU the way
  PyTorch's ``test_compare_cpu`` does (:mod:`.op_list`, :mod:`.op_samples`,
  :mod:`.op_check`, :mod:`.fallback`).
- :mod:`.architectures`: every causal-LM architecture transformers registers,
  built from a tiny configuration (:mod:`.arch_config`, :mod:`.arch_check`).
"""

from ..evidence.coverage_table import SweepTable, TableBuilder

__all__ = ["SweepTable", "TableBuilder"]
