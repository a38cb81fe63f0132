"""What a coverage run's data scripts hold: the table's first view, and what an opened row shows apart.

The searchable table (static/torchclaims-sweep.js) first shows each cell's
outcome, its detail line on hover. Only an opened row shows its samples (each
sample's code beside its argument kinds, with both legends) and the ATen
operators the row dispatched, on the CPU and, where the sweep watched, on the
device (the backend's own kernels), and those its gradients dispatched on the
CPU (what its backward columns measured). Those weigh more than the outcomes (a token
per sample), so they go in a second script per run, loaded when a reader first
opens a row of that run: the first view carries none of it, nor the table's
dispatcher overloads (the page states them beside the plot). Tables recorded
before sweeps kept argument kinds or kernels simply lack them, and an opened
row shows what there is.
"""

from __future__ import annotations

from ...evidence.coverage_table import SweepTable

# table fields only an opened row shows
ROW_FIELDS = {"sample_legend", "argument_legend", "operators", "kernels", "backward_operators"}
CELL_FIELDS = {"samples", "arguments"}  # column fields only an opened row shows
ON_THE_PAGE = {"overloads"}  # in the page's HTML (coverage_tables.py), never in the script's table


def first_view(sweep: SweepTable) -> dict:
    """The table without what only an opened row shows."""
    left_out = dict.fromkeys(ROW_FIELDS | ON_THE_PAGE, True) | {"columns": {"__all__": CELL_FIELDS}}
    return sweep.model_dump(mode="json", exclude=left_out)


def row_details(sweep: SweepTable) -> dict:
    """What an opened row shows: the legends, operators and kernels by row index, and each column's
    samples and their argument kinds by row index, under the column's name."""
    details = sweep.model_dump(mode="json", include=ROW_FIELDS)
    details["columns"] = {column.name: column.model_dump(mode="json", include=CELL_FIELDS) for column in sweep.columns}
    return details
