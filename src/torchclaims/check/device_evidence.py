"""What a run on a backend shows beyond its verdict: the precision mode, the CPU fallbacks, each difference's size.

All of it is read back from the record's measurements as :mod:`.step_script` wrote them, so a record from
another machine reads the same way. A measurement that is missing or of another kind reads as not
recorded, never as "none": a record that says nothing about fallbacks has not shown that there were none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..evidence.judging import MAGNITUDE, MAX_ABS, close_bounds
from ..evidence.records import ResultRecord, Verdict

PRECISION = "precision mode"  # a measurement of the outputs' check
FALLBACK_CHECK = "the step runs without a CPU fallback"
FALLBACK_MEASUREMENT = "operators run through the CPU fallback"
NO_FALLBACK = "none"  # the measurement's value when the counters saw no operator
OPERATOR = re.compile(r"^[A-Za-z_][\w.:]*$")  # an ATen operator's name as the counters give it
# The backends' own words when their fallback is forbidden (MPS, XPU: "... for the MPS device").
REFUSED = re.compile(r"The operator '([A-Za-z_][\w.:]*)' is not currently implemented for the (\w+) device")


@dataclass
class Difference:
    """One compared value (an output, the gradients): its largest error against the error its tolerance allows."""

    what: str  # "output 0", "gradients"
    max_abs: float | None  # None: not a number (nan or inf), which no tolerance passes
    atol: float
    rtol: float
    scale: float  # the largest magnitude of the CPU's reference
    allowed: float  # atol + rtol x scale
    ratio: float | None  # max_abs / allowed: over 1 fails; None where it has no finite value (JSON has none)

    @property
    def passes(self) -> bool:
        return self.max_abs is not None and self.max_abs <= self.allowed

    def describe(self) -> str:
        """In one phrase, as every output of the report says it."""
        bound = f"atol {self.atol:g} + rtol {self.rtol:g} x {self.scale:.3g}"
        if self.max_abs is None:
            return f"{self.what}: not a number, which no tolerance passes ({bound})"
        times = "over" if self.ratio is None else f"{self.ratio:.3g}x"
        return f"{self.what}: max abs error {self.max_abs:.3g}, {times} the {self.allowed:.3g} allowed ({bound})"


def differences(record: ResultRecord) -> list[Difference]:
    """Every value a parity check compared with ``check.close``, in the record's order."""
    found = []
    for check in record.checks:
        values = {m.name: m.value for m in check.measurements}
        for measurement in check.measurements:
            bounds = close_bounds(measurement.tolerance)
            if bounds is None or not measurement.name.endswith(MAX_ABS):
                continue
            what = measurement.name.removesuffix(MAX_ABS)
            atol, rtol = bounds
            scale = _number(values.get(what + MAGNITUDE))
            error = _number(measurement.value)
            if scale is None or (error is None and measurement.value not in ("nan", "inf", "-inf")):
                continue  # judged by the build already (judging): nothing to size here
            allowed = atol + rtol * scale
            ratio = None if error is None or (error and not allowed) else error / allowed if allowed else 0.0
            found.append(Difference(what, error, atol, rtol, scale, allowed, ratio))
    return found


def passing_atol(found: list[Difference]) -> float | None:
    """The round ``--atol`` under which every difference passes whatever the rtol (each element's error is at
    most the largest); None when all pass already, or when one is not a number and none would."""
    if all(d.passes for d in found) or any(d.max_abs is None for d in found):
        return None
    return round_up(max(d.max_abs for d in found))


def passing_hint(atol: float) -> str:
    return f"--atol {atol:g} would pass every difference (an element's error is at most the largest)"


def round_up(value: float) -> float:
    """``value`` rounded up to one significant digit (0.0123 -> 0.02), never below it."""
    if value <= 0:
        return 0.0
    exponent = math.floor(math.log10(value))
    digit = math.ceil(value / 10**exponent - 1e-9)
    rounded = float(f"{digit}e{exponent}")
    return rounded if rounded >= value else float(f"{digit + 1}e{exponent}")


def fallbacks(record: ResultRecord) -> list[str] | None:
    """The operators the backend's counters saw run on the CPU; None when the record does not say."""
    for check in record.checks:
        if check.name != FALLBACK_CHECK or check.outcome not in (Verdict.HOLDS, Verdict.REFUTED):
            continue
        for measurement in check.measurements:
            if measurement.name == FALLBACK_MEASUREMENT and isinstance(measurement.value, str):
                if measurement.value == NO_FALLBACK:
                    return []
                names = measurement.value.split(", ")
                return names if all(OPERATOR.match(n) for n in names) else None
    return None


def precision(record: ResultRecord) -> str:
    """The float32 precision mode the step ran in, as the record states it ("" when it does not)."""
    for check in record.checks:
        for measurement in check.measurements:
            if measurement.name == PRECISION and isinstance(measurement.value, str):
                return measurement.value
    return ""


def refused(text: str) -> list[str]:
    """The operators a run with the fallback forbidden raised on, in the backend's own words."""
    return list(dict.fromkeys(match.group(1) for match in REFUSED.finditer(text)))


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
