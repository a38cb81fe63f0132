"""
TorchNeuron runs operators it does not support on the CPU by default
====================================================================

:claim-verdict:`neuron-cpu-fallback-default`

The claim: on TorchNeuron, an operator with no Neuron implementation does not
raise; by default it runs on the CPU and its result is returned as a tensor on
the neuron device.

Which operators lack a Neuron implementation changes between torch-neuronx
releases, so the script asks the dispatcher: among a list of candidate aten
operators, those with no kernel registered for the device's dispatch key (and
no composite kernel that would decompose them) are the ones under test. Each
is called on the device with default settings, under the profiler; the output
must come back on the device with the CPU's values. What the profiler saw
(``aten::_to_cpu`` copies, the op dispatched a second time) is recorded as
evidence of where it ran, not judged. Other backends report unverified.
"""

import os

import torch
from torch.profiler import ProfilerActivity, profile

from torchclaims.verify import verification

v = verification(
    "neuron-cpu-fallback-default",
    inputs="9 candidate operators on a float32 vector of 16 (seed 0); those without a Neuron kernel are tested",
    method="dispatcher introspection picks the operators; outputs compared with the CPU (rtol 1e-4, atol 1e-5)",
)

NEURON = "neuron"  # the device type the claim is about (data under test)

# Candidate operators (aten name, call on a tensor). All have a CPU kernel of
# their own, so a backend without its own kernel cannot decompose them.
CANDIDATES = {
    "aten::histc": lambda t: torch.histc(t, bins=4, min=-2, max=2),
    "aten::bincount": lambda t: torch.bincount((t.abs() * 3).long()),
    "aten::mode": lambda t: torch.mode(t.round()).values,
    "aten::median": lambda t: torch.median(t),
    "aten::_unique2": lambda t: torch.unique(t.round()),
    "aten::nonzero": lambda t: torch.nonzero(t > 0),
    "aten::searchsorted.Tensor": lambda t: torch.searchsorted(t.sort().values, t),
    "aten::_fft_r2c": lambda t: torch.fft.rfft(t).abs(),
    "aten::linalg_eig": lambda t: torch.linalg.eigvals(t.reshape(4, 4)).abs().sort().values,
}

torch.manual_seed(0)
x = torch.randn(16)
reference = {name: call(x) for name, call in CANDIDATES.items()}

# %%
# Which candidates have no kernel for the device?
# -----------------------------------------------

key = torch._C._dispatch_key_for_device(v.device.type)
OWN_OR_COMPOSITE = (
    key,
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
)
without_kernel = [
    name
    for name in CANDIDATES
    if not any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in OWN_OR_COMPOSITE)
]
print(f"dispatch key for {v.device.type}: {key}; candidates without a kernel: {without_kernel}")


def neuron_only(check):
    if v.device.type != NEURON:
        check.unsupported(f"the configured backend is {v.backend.name}; the claim is about TorchNeuron")
    check.measure(f"candidates without a {key} kernel", ", ".join(without_kernel) or "none")
    settings = {k: val for k, val in os.environ.items() if k.startswith(("TORCH_NEURONX_", "NEURON_"))}
    check.note(f"Neuron environment variables: {settings or 'none set'}")
    if not without_kernel:
        check.unsupported(f"every candidate has a {key} kernel in this torch-neuronx; none would fall back")


# %%
# Calling them on the device
# --------------------------

results = {}
with v.check("operators without a Neuron kernel run without raising") as check:
    neuron_only(check)
    raised = []
    for name in without_kernel:
        try:
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                out = CANDIDATES[name](x.to(v.device))
                v.sync()
            names = [e.name for e in prof.events()]
            results[name] = out
            # at::native::cpu_fallback copies inputs with aten::_to_cpu and re-dispatches the op to the CPU.
            check.measure(f"{name}: aten::_to_cpu seen by the profiler", "aten::_to_cpu" in names)
            check.measure(f"{name}: times the op was dispatched", names.count(name.split(".")[0]))
        except Exception as exc:
            raised.append(f"{name} raised {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    check.measure("operators that raised", len(raised), tolerance="== 0")
    check.expect(not raised, "; ".join(raised))

with v.check("their results come back as tensors on the neuron device with the CPU's values") as check:
    neuron_only(check)
    if not results:
        check.unsupported("no candidate without a Neuron kernel returned a result")
    for name, out in results.items():
        check.expect(out.device.type == v.device.type, f"{name}: result on {out.device}, not {v.device.type}")
        check.close(out.cpu(), reference[name], rtol=1e-4, atol=1e-5, what=name)

v.finish()
