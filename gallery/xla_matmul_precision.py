"""
torch_xla sets float32 matmul precision separately; TPU default downcasts to bfloat16
=====================================================================================

:claim-verdict:`xla-matmul-precision`

The claim: torch_xla controls float32 matmul and convolution precision with its
own setting, ``torch_xla.backends.set_mat_mul_precision``, whose levels are
``'default'``, ``'high'`` and ``'highest'``; on TPU the ``'default'`` level
downcasts float32 inputs to bfloat16 before multiplying.

We check that the setting exists, which level a fresh process starts at, that
exactly the three levels are accepted, and that it is independent of
PyTorch's own ``torch.set_float32_matmul_precision``. Then we multiply the same
float32 matrices at each level and compare with a float64 product and with the
product of the inputs rounded to bfloat16: a downcast shows up as an error of
bfloat16 size that matches the rounded product. That comparison can only
confirm the TPU part on a TPU; on XLA:CPU it is recorded as what the CPU does.
Other backends report unverified.
"""

import matplotlib.pyplot as plt
import torch

from torchclaims.verify import verification

LEVELS = ["default", "high", "highest"]
N = 128

v = verification(
    "xla-matmul-precision",
    inputs=f"float32 matrices A ({N}+i x {N}) and B ({N} x {N}) from a CPU generator, seed 0; a fresh shape per level",
    method="torch_xla.backends.get/set_mat_mul_precision; max abs error of A @ B on the device against "
    "the float64 product and against the product of bfloat16-rounded inputs",
)

ON_XLA = v.backend.name == "xla"
if ON_XLA:
    # Only when torch_xla is the configured backend: elsewhere it may not be installed.
    import torch_xla.backends as xla_backends
    import torch_xla.runtime as xr

NOT_XLA = f"torch_xla is not the configured backend (backend is {v.backend.name}); the setting is torch_xla's"

# %%
# The setting and its levels
# --------------------------

initial = None
with v.check("torch_xla.backends.set_mat_mul_precision accepts exactly 'default', 'high' and 'highest'") as check:
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    initial = check.measure("level in a fresh process", xla_backends.get_mat_mul_precision())
    for level in LEVELS:
        xla_backends.set_mat_mul_precision(level)
        check.equal(xla_backends.get_mat_mul_precision(), level, f"level read back after setting {level!r}")
    # 'medium' is a level of torch.set_float32_matmul_precision, not of torch_xla's setting.
    try:
        xla_backends.set_mat_mul_precision("medium")
        check.expect(False, "set_mat_mul_precision('medium') was accepted")
    except ValueError as exc:
        check.note(f"set_mat_mul_precision('medium') raised ValueError: {exc}")
    xla_backends.set_mat_mul_precision(initial)

with v.check("the level is separate from torch.set_float32_matmul_precision") as check:
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    torch_before = torch.get_float32_matmul_precision()
    xla_before = xla_backends.get_mat_mul_precision()
    torch.set_float32_matmul_precision("medium" if torch_before != "medium" else "highest")
    check.equal(xla_backends.get_mat_mul_precision(), xla_before, "torch_xla level after changing torch's setting")
    torch.set_float32_matmul_precision(torch_before)
    xla_backends.set_mat_mul_precision("highest" if xla_before != "highest" else "default")
    check.equal(torch.get_float32_matmul_precision(), torch_before, "torch's setting after changing torch_xla's level")
    xla_backends.set_mat_mul_precision(xla_before)

# %%
# What each level computes
# ------------------------
# The level is read when XLA compiles a graph, so each level multiplies a
# matrix of a new shape: a graph compiled at an earlier level cannot be reused.

g = torch.Generator().manual_seed(0)
errors = {}  # level -> (error vs float64, error vs the bfloat16-rounded product)
if ON_XLA:
    for i, level in enumerate(LEVELS):
        a, b = torch.randn(N + i, N, generator=g), torch.randn(N, N, generator=g)
        exact = a.double() @ b.double()
        rounded = a.bfloat16().double() @ b.bfloat16().double()
        xla_backends.set_mat_mul_precision(level)
        out = (a.to(v.device) @ b.to(v.device)).cpu().double()
        errors[level] = ((out - exact).abs().max().item(), (out - rounded).abs().max().item())
    xla_backends.set_mat_mul_precision(initial)
    for level, (e_exact, e_rounded) in errors.items():
        print(f"{level:>8}: max abs error vs float64 {e_exact:.3g}, vs bfloat16-rounded inputs {e_rounded:.3g}")

with v.check("on TPU, 'default' downcasts float32 inputs to bfloat16 before multiplying") as check:
    if not ON_XLA:
        check.unsupported(NOT_XLA)
    kind = check.measure("XLA device kind (torch_xla.runtime.device_type())", xr.device_type())
    for level, (e_exact, e_rounded) in errors.items():
        check.measure(f"{level}: max abs error vs float64 product", e_exact)
        check.measure(f"{level}: max abs error vs product of bfloat16-rounded inputs", e_rounded)
    tpu = "TPU"  # the device kind the statement is about (data under test)
    if kind != tpu:
        check.unsupported(
            f"the XLA device here is {kind}, not TPU; the statement describes TPU hardware "
            f"('default' on {kind} gave a max abs error of {errors['default'][0]:.3g} against float64)"
        )
    e_exact, e_rounded = errors["default"]
    # A bfloat16 downcast leaves errors of ~2^-8 relative to the products; the
    # rounded-input product is then much closer than the exact one.
    check.expect(
        e_rounded < e_exact / 10,
        f"'default' is not closer to the bfloat16-rounded product ({e_rounded:.3g}) than to float64 ({e_exact:.3g})",
    )
    check.expect(
        errors["highest"][0] < e_exact / 10,
        f"'highest' ({errors['highest'][0]:.3g}) is not more precise than 'default' ({e_exact:.3g})",
    )

# %%
# Error against float64 per level
# -------------------------------

if errors:
    fig, ax = plt.subplots(figsize=(6, 3))
    x = range(len(errors))
    ax.bar([i - 0.2 for i in x], [e[0] for e in errors.values()], width=0.4, label="vs float64 product")
    ax.bar([i + 0.2 for i in x], [e[1] for e in errors.values()], width=0.4, label="vs bfloat16-rounded inputs")
    ax.set_xticks(list(x), list(errors))
    ax.set_yscale("log")
    ax.set_ylabel("max abs error")
    ax.set_title(f"float32 matmul on XLA {xr.device_type()} per precision level")
    ax.legend()
    fig.tight_layout()

v.finish()
