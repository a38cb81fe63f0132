"""The operator table's denominator in dispatcher overloads: what a backend must implement.

OpInfo's rows are not the unit a backend implements: the dispatcher's
overloads are. An ATen overload is *backend-relevant* when torch registers a
kernel for it that a backend has to match: one for the CPU or CUDA, or a
``CompositeExplicitAutograd`` (``NonFunctional``) kernel. An overload with only a
``CompositeImplicitAutograd`` kernel decomposes into others before any
backend sees it, so it is left out. The list comes from the dispatcher of the
sweep's own environment (``torch._C._dispatch_get_all_op_names`` and
``_dispatch_has_kernel_for_dispatch_key``), so it is per release.
"""

from __future__ import annotations

NAMESPACE = "aten::"
BACKEND_KEYS = ("CPU", "CUDA", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
DEFINITION = (
    "ATen overloads with a CPU, CUDA or CompositeExplicitAutograd kernel in the sweep's dispatcher "
    "(those with only a CompositeImplicitAutograd kernel decompose before a backend sees them)"
)


def backend_relevant() -> list[str]:
    """Every ATen overload (``aten::name.overload``) with a kernel a backend must match, sorted."""
    import torch

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(
        name
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith(NAMESPACE) and any(has(name, key) for key in BACKEND_KEYS)
    )
