"""
torch_xla runs operators without an XLA lowering on the CPU and counts them
===========================================================================

:claim-verdict:`xla-cpu-fallback-ops`

The claim: on torch_xla, an operator without an XLA lowering does not raise.
It is forwarded to the CPU ATen implementation, its result comes back as an
XLA tensor, and the fallback shows up as an ``aten::`` counter in the metrics
report and in ``torch_xla.debug.metrics.executed_fallback_ops()``.

Which operators lack a lowering changes between torch_xla releases, so the
script asks the dispatcher: among candidate operators, those with no kernel
registered for the ``XLA`` dispatch key (and no composite kernel that would
decompose them) are the ones under test. Each is called on the XLA device
after ``metrics.clear_all()``; the result must be an XLA tensor equal to the
CPU's, and its name must appear as a counter in ``metrics_report()`` and in
``executed_fallback_ops()``. Operators that do have an XLA kernel are run too,
as a contrast (measured, not judged). Other backends report unverified.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

v = verification(
    "xla-cpu-fallback-ops",
    inputs="12 candidate operators on a float32 vector of 16 (seed 0); those without an XLA kernel are tested",
    method="dispatcher introspection picks the operators; per operator: metrics.clear_all(), call, "
    "torch_xla.sync(), read counters, metrics_report() and executed_fallback_ops(); "
    "outputs compared with the CPU (rtol 1e-4, atol 1e-5)",
)

ON_XLA = v.backend.name == "xla"
if ON_XLA:
    # Only when torch_xla is the configured backend: elsewhere it may not be installed.
    import torch_xla.debug.metrics as met

NOT_XLA = (
    f"torch_xla is not the configured backend (backend is {v.backend.name}); the claim is about torch_xla's "
    "CPU fallback and its metrics"
)

# Candidate operators: aten name (as the dispatcher and the counters spell it)
# and a call on a 16-element float vector. Complex results are compared as
# (real, imag) pairs. kthvalue, cummax and mm have XLA lowerings in recent
# torch_xla releases and serve as a contrast.
CANDIDATES = {
    "aten::histc": lambda t: torch.histc(t, bins=4, min=-2, max=2),
    "aten::bincount": lambda t: torch.bincount((t.abs() * 3).long()),
    "aten::mode": lambda t: torch.mode(t.round()).values,
    "aten::median": lambda t: torch.median(t),
    "aten::_unique2": lambda t: torch.unique(t.round()),
    "aten::searchsorted.Tensor": lambda t: torch.searchsorted(t.sort().values, t),
    "aten::_fft_r2c": lambda t: torch.view_as_real(torch.fft.rfft(t)),
    "aten::linalg_eig": lambda t: torch.view_as_real(torch.linalg.eigvals(t.reshape(4, 4))),
    "aten::_linalg_det": lambda t: torch.linalg.det(t.reshape(4, 4)),
    "aten::kthvalue": lambda t: torch.kthvalue(t, 3).values,
    "aten::cummax": lambda t: torch.cummax(t, 0).values,
    "aten::mm": lambda t: t.reshape(4, 4) @ t.reshape(4, 4),
}

torch.manual_seed(0)
x = torch.randn(16)
reference = {name: call(x) for name, call in CANDIDATES.items()}

# %%
# Which candidates have no XLA kernel?
# ------------------------------------

key = torch._C._dispatch_key_for_device(v.device.type)
# A composite kernel would decompose the operator into others; an XLA kernel
# lowers it (or, like nonzero, decides itself to call the CPU).
OWN_OR_COMPOSITE = (key, "CompositeImplicitAutograd", "CompositeExplicitAutograd")
has_kernel = {
    name: any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in OWN_OR_COMPOSITE) for name in CANDIDATES
}
without_kernel = [name for name, has in has_kernel.items() if not has]
print(f"dispatch key for {v.device.type}: {key}; candidates without a kernel: {without_kernel}")


def xla_only(check):
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    check.measure(f"candidates without an {key} kernel", ", ".join(without_kernel) or "none")
    if not without_kernel:
        check.unsupported(f"every candidate has an {key} kernel in this torch_xla; none would fall back")


# %%
# Calling each operator on the XLA device
# ---------------------------------------
# One operator at a time, with the metrics cleared before, so each row of the
# table below shows what that operator alone did.

rows = {}  # name -> dict of observations


def run_one(name):
    v.sync()
    met.clear_all()
    row = {"xla kernel": has_kernel[name]}
    try:
        out = CANDIDATES[name](x.to(v.device))
        v.sync()
        row["result"] = out
    except Exception as exc:  # evidence: the claim says this does not happen
        row["raised"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        return row
    short = name.split(".")[0]  # counters may carry the overload name or not
    row["counters"] = {n: met.counter_value(n) for n in met.counter_names() if n.startswith(short)}
    report = met.metrics_report()
    row["in report"] = any(f"Counter: {n}" in report for n in row["counters"])
    row["in executed_fallback_ops"] = any(op.startswith(short) for op in met.executed_fallback_ops())
    return row


if ON_XLA:
    for name in CANDIDATES:
        rows[name] = run_one(name)

with v.check("operators without an XLA kernel run without raising") as check:
    xla_only(check)
    for name in without_kernel:
        row = rows[name]
        check.expect("raised" not in row, f"{name} raised {row.get('raised')}")

returned = [name for name in without_kernel if rows.get(name, {}).get("result") is not None]

with v.check("their results come back as XLA tensors with the CPU's values") as check:
    xla_only(check)
    if not returned:
        check.unsupported("no operator without an XLA kernel returned a result (see the previous check)")
    for name in returned:
        out = rows[name]["result"]
        check.expect(out.device.type == v.device.type, f"{name}: result on {out.device}, not {v.device.type}")
        check.close(out.cpu(), reference[name], rtol=1e-4, atol=1e-5, what=name)

with v.check(
    "each fallback appears as an aten:: counter in the metrics report and in executed_fallback_ops()"
) as check:
    xla_only(check)
    if not returned:
        check.unsupported("no operator without an XLA kernel returned a result (see the first check)")
    for name in returned:
        row = rows[name]
        check.measure(f"{name}: aten:: counters", str(row["counters"]))
        check.expect(row["in report"], f"{name}: no 'Counter: {name}' in metrics_report() (counters {row['counters']})")
        check.expect(row["in executed_fallback_ops"], f"{name}: not in executed_fallback_ops()")
    contrast = [n for n in CANDIDATES if has_kernel[n] and n in rows and "raised" not in rows[n]]
    for name in contrast:
        check.measure(
            f"contrast, {name} (has an XLA or composite kernel): in executed_fallback_ops()",
            rows[name]["in executed_fallback_ops"],
        )

# %%
# Per-operator table
# ------------------

if rows:
    print(f"{'operator':<28} {'XLA kernel':<10} {'counter':<8} {'in report':<9} {'fallback_ops':<12} result device")
    for name, row in rows.items():
        count = sum((row.get("counters") or {}).values())
        device = row["result"].device if "result" in row else row.get("raised", "")
        print(
            f"{name:<28} {str(row['xla kernel']):<10} {count:<8} {str(row.get('in report', '-')):<9} "
            f"{str(row.get('in executed_fallback_ops', '-')):<12} {device}"
        )

# %%
# What fell back
# --------------
# The height is the operator's own ``aten::`` counter after one call; operators
# with an XLA lowering stay at zero.

if rows:
    names = list(rows)
    counts = [sum((rows[n].get("counters") or {}).values()) for n in names]
    colors = ["tab:gray" if rows[n]["xla kernel"] else "tab:red" for n in names]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(len(names)), counts, color=colors)
    ax.set_xticks(range(len(names)), [n.removeprefix("aten::") for n in names], rotation=45, ha="right")
    ax.set_ylabel("aten:: fallback counter")
    ax.set_title("CPU fallbacks on torch_xla (red: no XLA kernel, grey: XLA kernel)")
    fig.tight_layout()

v.finish()
