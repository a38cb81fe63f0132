"""The coverage table a sweep records: one coded outcome per row and column.

A sweep (operators × dtypes, architectures × stages) produces thousands of
cells. A result record carries all of them, compactly and column-oriented:
each column is a string with one code character per row, its own legend
(code → outcome name), and sparse maps from row index to a detail line and to
the per-sample codes. The code ``.`` means "not in the list" (say, a dtype the
CPU reference does not support): such cells are outside every denominator.

The model validates what it reads (a results file from a stranger carries
tables too) and bounds it: rows, columns, detail length and per-cell sample
codes are limited, so a hostile file cannot make a page or a diff explode.
A table may also name, per row, the ATen operators its samples dispatched on
the CPU (``operators``), which ``torchclaims check`` matches a model's
operators against; for rows whose device call the sweep watched, the ATen
operators it dispatched there (``kernels``: each backend's own kernel names);
for rows whose backward pass the sweep ran (in a column named
:func:`backward_column` of the dtype), the ATen operators the gradients
dispatched on the CPU (``backward_operators``: ``aten::convolution_backward``
for a convolution row); per cell, the argument kinds of each sample
(``arguments``: one token per sample code, tensor ranks then ``/`` and kind
letters that ``argument_legend`` names, see
:mod:`torchclaims.coverage.op_arguments`), so that it can tell whether a bad
sample looks like a model's calls; and its denominator in dispatcher
overloads (``overloads``, :class:`OverloadCount`). Tables recorded before these
existed simply lack them.

A cell whose outcome is named :data:`NOT_REACHED` was listed but never
judged (the sweep's time guard ran out): :meth:`SweepTable.reach` counts the
cells that were, and a table with cells not reached decides nothing about
them (the verification states the share reached, see
:meth:`torchclaims.verify.Verification.finish`).
Pure Python: nothing here imports torch.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

NOT_LISTED = "."  # a cell outside the list: not counted in any denominator
NOT_REACHED = "not reached"  # the outcome name of a listed cell the sweep never judged
MAX_ROWS = 5000
MAX_COLUMNS = 16
MAX_DETAIL = 300
MAX_SAMPLE_CODES = 2000
MAX_ROW_OPERATORS = 64
MAX_ARGUMENTS = 2000  # characters of one cell's argument tokens
MAX_UNKNOWN = 5000  # unknown overloads listed (torch 2.13 has about 2,200 backend-relevant ones)

Code = Annotated[str, StringConstraints(pattern=r"^[!-~]$")]  # one printable ASCII character
Label = Annotated[str, StringConstraints(min_length=1, max_length=60)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f]+$")]
# A dispatched operator with its overload, in any namespace: aten::add.Tensor, and the
# operators torch defines elsewhere (torch_nn::_linear_cross_entropy_batch_chunked in 2.13).
OperatorName = Annotated[
    str, StringConstraints(max_length=120, pattern=r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?$")
]

ARGUMENT_TOKEN = re.compile(r"^[0-9+]*/([a-z]*)$")  # ranks, then the kind letters
# The kind letters the operator sweep writes (torchclaims.coverage.op_arguments), defined here, free of torch,
# so the pages can list them without importing what the sweep imports.
ARGUMENT_KINDS = {
    "c": "a complex tensor input",
    "e": "an empty tensor input (a dimension of size 0)",
    "n": "a negative integer argument (a dim, start or shift)",
    "k": "keepdim=True",
    "a": "accumulate=True",
}
MAX_TENSORS = 8  # ranks kept per token; the rest are summed up as "+"
# The name (SweepTable.name) of each coverage sweep's table.
OPERATOR_TABLE, ARCHITECTURE_TABLE = "operators", "architectures"
BACKWARD = " backward"  # what the column of a dtype's backward pass adds to the dtype's name


def backward_column(dtype: str) -> str:
    """The name of the column that holds the backward pass in ``dtype``: ``float32 backward``."""
    return dtype + BACKWARD


class OverloadCount(BaseModel):
    """The table's denominator in dispatcher overloads: how many backend-relevant overloads its rows dispatched."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    relevant: int = Field(ge=0)
    measured: int = Field(ge=0)
    unknown: list[OperatorName] = Field(default_factory=list, max_length=MAX_UNKNOWN)
    definition: Annotated[str, StringConstraints(max_length=MAX_DETAIL)] = ""

    @model_validator(mode="after")
    def _consistent(self) -> OverloadCount:
        if self.measured > self.relevant:
            raise ValueError(f"{self.measured} overloads measured of only {self.relevant}")
        if len(self.unknown) > self.relevant - self.measured:
            raise ValueError(f"{len(self.unknown)} unknown overloads listed, more than the {self.relevant} - measured")
        return self

    def summary(self) -> str:
        unknown = self.relevant - self.measured
        return f"{self.measured} of {self.relevant} backend-relevant overloads measured, {unknown} unknown"


class SweepColumn(BaseModel):
    """One column: a code per row, the legend that names the codes, details."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Name
    codes: str
    legend: dict[Code, Label]
    details: dict[int, Annotated[str, StringConstraints(max_length=MAX_DETAIL)]] = Field(default_factory=dict)
    samples: dict[int, Annotated[str, StringConstraints(max_length=MAX_SAMPLE_CODES, pattern=r"^[!-~]*$")]] = Field(
        default_factory=dict
    )
    # row index -> one argument token per sample code, space-separated
    arguments: dict[int, Annotated[str, StringConstraints(max_length=MAX_ARGUMENTS, pattern=r"^[0-9+/a-z ]*$")]] = (
        Field(default_factory=dict)
    )

    def count(self) -> Counter:
        """How many listed cells carry each code (``.`` cells are left out)."""
        return Counter(code for code in self.codes if code != NOT_LISTED)

    @property
    def listed(self) -> int:
        """The denominator: cells in the list."""
        return sum(1 for code in self.codes if code != NOT_LISTED)


class SweepTable(BaseModel):
    """A whole sweep: rows (operators, architectures) against columns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,39}$")]
    item: Label  # what a row is: "operator", "architecture"
    rows: list[Name] = Field(max_length=MAX_ROWS)
    columns: list[SweepColumn] = Field(min_length=1, max_length=MAX_COLUMNS)
    sample_legend: dict[Code, Label] = Field(default_factory=dict)
    # row index -> the ATen operators (aten::name.overload) its samples dispatched on the CPU
    operators: dict[int, list[OperatorName]] = Field(default_factory=dict)
    # row index -> the ATen operators its device call dispatched, where the sweep watched for them (the
    # backend's own kernels: CUDA's _scaled_dot_product_flash_attention for the CPU's ..._for_cpu)
    kernels: dict[int, list[OperatorName]] = Field(default_factory=dict)
    # row index -> the ATen operators the gradients of its samples dispatched on the CPU (backward columns)
    backward_operators: dict[int, list[OperatorName]] = Field(default_factory=dict)
    argument_legend: dict[Code, Label] = Field(default_factory=dict)
    overloads: OverloadCount | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SweepTable:
        if len(set(self.rows)) != len(self.rows):
            raise ValueError("a row name appears twice")
        if len({c.name for c in self.columns}) != len(self.columns):
            raise ValueError("a column name appears twice")
        for column in self.columns:
            where = f"column {column.name!r}"
            if len(column.codes) != len(self.rows):
                raise ValueError(f"{where} has {len(column.codes)} codes for {len(self.rows)} rows")
            unknown = set(column.codes) - set(column.legend) - {NOT_LISTED}
            if unknown:
                raise ValueError(f"{where} uses codes {sorted(unknown)} that its legend does not name")
            for mapping, what in ((column.details, "details"), (column.samples, "samples")):
                outside = [i for i in mapping if not 0 <= i < len(self.rows)]
                if outside:
                    raise ValueError(f"{where}: {what} for row index {outside[0]}, outside the table")
            unknown = {c for s in column.samples.values() for c in s} - set(self.sample_legend)
            if unknown:
                raise ValueError(f"{where}: sample codes {sorted(unknown)} are not in sample_legend")
            for index, tokens in column.arguments.items():
                self._check_arguments(where, index, tokens.split(), column.samples.get(index, ""))
        for field, mapping in (
            ("operators", self.operators),
            ("kernels", self.kernels),
            ("backward_operators", self.backward_operators),
        ):
            for index, names in mapping.items():
                if not 0 <= index < len(self.rows):
                    raise ValueError(f"{field} for row index {index}, outside the table")
                if len(names) > MAX_ROW_OPERATORS:
                    raise ValueError(
                        f"{field} of row {self.rows[index]!r}: {len(names)}, more than {MAX_ROW_OPERATORS}"
                    )
        return self

    def _check_arguments(self, where: str, index: int, tokens: list[str], samples: str) -> None:
        if len(tokens) != len(samples):
            raise ValueError(f"{where}: {len(tokens)} argument tokens for {len(samples)} sample codes at row {index}")
        for token in tokens:
            match = ARGUMENT_TOKEN.match(token)
            if match is None:
                raise ValueError(f"{where}: argument token {token[:20]!r} at row {index} is not ranks/letters")
            unknown = set(match.group(1)) - set(self.argument_legend)
            if unknown:
                raise ValueError(f"{where}: argument kinds {sorted(unknown)} are not in argument_legend")

    def reach(self) -> tuple[int, int]:
        """(cells reached, cells listed): every listed cell whose outcome is not NOT_REACHED was reached."""
        listed = reached = 0
        for column in self.columns:
            unreached = {code for code, label in column.legend.items() if label == NOT_REACHED}
            listed += column.listed
            reached += sum(1 for code in column.codes if code != NOT_LISTED and code not in unreached)
        return reached, listed

    def column(self, name: str) -> SweepColumn:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    def cells(self):
        """Every listed cell as (row, column, outcome name, detail, sample codes)."""
        for column in self.columns:
            for index, code in enumerate(column.codes):
                if code != NOT_LISTED:
                    yield (
                        self.rows[index],
                        column.name,
                        column.legend[code],
                        column.details.get(index, ""),
                        column.samples.get(index, ""),
                    )

    def summary(self) -> list[str]:
        """One line per column: each outcome's count and share of the listed cells."""
        lines = []
        for column in self.columns:
            counts, listed = column.count(), column.listed
            parts = [f"{n} {column.legend[code]} ({100 * n / listed:.1f}%)" for code, n in counts.most_common()]
            lines.append(f"{column.name}: {listed} listed; " + (", ".join(parts) or "nothing listed"))
        return lines


class TableBuilder:
    """Fill a table cell by cell, then freeze it; unset cells are ``.`` (not listed)."""

    def __init__(
        self,
        name: str,
        item: str,
        rows: list[str],
        legends: dict[str, dict[str, str]],
        sample_legend: dict[str, str] | None = None,
        argument_legend: dict[str, str] | None = None,
    ):
        self.name, self.item, self.rows = name, item, list(rows)
        self.index = {row: i for i, row in enumerate(self.rows)}
        self.legends = legends
        self.sample_legend = dict(sample_legend or {})
        self.argument_legend = dict(argument_legend or {})
        self.arguments: dict[str, dict[int, str]] = {column: {} for column in legends}
        self.overloads: OverloadCount | None = None
        self.codes = {column: [NOT_LISTED] * len(self.rows) for column in legends}
        self.details: dict[str, dict[int, str]] = {column: {} for column in legends}
        self.samples: dict[str, dict[int, str]] = {column: {} for column in legends}
        self.operators: dict[int, set[str]] = {}
        self.kernels: dict[int, set[str]] = {}
        self.backward_operators: dict[int, set[str]] = {}

    def set(self, row: str, column: str, code: str, detail: str = "", samples: str = "", arguments: str = "") -> None:
        """One cell; ``arguments`` (one token per sample code) is kept only beside its sample codes."""
        if code not in self.legends[column]:
            raise ValueError(f"code {code!r} is not in the legend of column {column!r}")
        i = self.index[row]
        self.codes[column][i] = code
        if detail:
            self.details[column][i] = clip(detail, MAX_DETAIL)
        if samples:
            self.samples[column][i] = samples[:MAX_SAMPLE_CODES]
        if samples and arguments and len(arguments.split()) == len(samples) and len(arguments) <= MAX_ARGUMENTS:
            self.arguments[column][i] = arguments

    def add_operators(self, row: str, names, on_device: bool = False, backward: bool = False) -> None:
        """ATen operators the row's samples dispatched on the CPU (in the ``backward`` pass: backward_operators),
        or ``on_device`` (in either pass: kernels), kept sorted, at most MAX_ROW_OPERATORS."""
        found = self.kernels if on_device else self.backward_operators if backward else self.operators
        found.setdefault(self.index[row], set()).update(names)

    def count_overloads(self, relevant: list[str], definition: str = "") -> None:
        """The denominator: which of the ``relevant`` overloads some row dispatched, forward or backward (see
        OverloadCount)."""
        passes = (*self.operators.values(), *self.backward_operators.values())
        dispatched = {name for names in passes for name in names}
        unknown = sorted(set(relevant) - dispatched)
        self.overloads = OverloadCount(
            relevant=len(set(relevant)),
            measured=len(set(relevant) & dispatched),
            unknown=unknown[:MAX_UNKNOWN],
            definition=clip(definition, MAX_DETAIL),
        )

    def get(self, row: str, column: str) -> str:
        return self.codes[column][self.index[row]]

    def table(self) -> SweepTable:
        return SweepTable(
            name=self.name,
            item=self.item,
            rows=self.rows,
            columns=[
                SweepColumn(
                    name=column,
                    codes="".join(self.codes[column]),
                    legend=legend,
                    details=self.details[column],
                    samples=self.samples[column],
                    arguments=self.arguments[column],
                )
                for column, legend in self.legends.items()
            ],
            sample_legend=self.sample_legend,
            operators={i: sorted(names)[:MAX_ROW_OPERATORS] for i, names in sorted(self.operators.items()) if names},
            kernels={i: sorted(names)[:MAX_ROW_OPERATORS] for i, names in sorted(self.kernels.items()) if names},
            backward_operators={
                i: sorted(names)[:MAX_ROW_OPERATORS] for i, names in sorted(self.backward_operators.items()) if names
            },
            argument_legend=self.argument_legend,
            overloads=self.overloads,
        )


def clip(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
