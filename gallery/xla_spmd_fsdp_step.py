"""
An FSDP step under SPMD over XLA's CPU devices gives the single-device training step
====================================================================================

:claim-verdict:`xla-spmd-fsdp-step`

The claim: torch_xla's FSDP over SPMD (``SpmdFullyShardedDataParallel``,
"FSDPv2"), over 2 CPU devices of one process (``CPU_NUM_DEVICES=2``), shards
every parameter of the distributed claims' model over the devices, and one
SGD step with the batch sharded the same way gives the loss and the
parameters of one ordinary step on the CPU, within float32 tolerance.

FSDPv2 re-expresses FSDP in SPMD: no process group, one program that XLA
partitions over a mesh with an ``fsdp`` axis. Each linear layer is wrapped,
then the whole model, as the guide's example does. SPMD mode must be chosen
before the runtime starts, so the step runs in a fresh Python process, from
the helper module's model and batch; its results come back in a file.
"""

import _jobs

from torchclaims.verify import verification

DEVICES = 2
RTOL, ATOL = 1e-4, 1e-5
STEP = f"""
import sys, numpy as np, torch, torch_xla, torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2
import _jobs
xr.use_spmd()
mesh = xs.Mesh(np.arange({DEVICES}), ({DEVICES}, 1), ("fsdp", "model"))
model = _jobs.make_model().to(torch_xla.device())
for index in (0, 2):  # each Linear, then the whole model
    model[index] = FSDPv2(model[index], mesh=mesh)
model = FSDPv2(model, mesh=mesh)
inputs, targets = (t.to(torch_xla.device()) for t in _jobs.make_batch())
xs.mark_sharding(inputs, mesh, ("fsdp", None))
xs.mark_sharding(targets, mesh, ("fsdp", None))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = torch.nn.functional.mse_loss(model(inputs), targets)
loss.backward()
optimizer.step()
torch_xla.sync()
named = [(k.replace("_orig_module.", ""), p) for k, p in model.named_parameters()]  # the plain model's names
torch.save({{"loss": loss.cpu(), "params": {{k: p.detach().cpu() for k, p in named}},
            "sharding": {{k: torch_xla._XLAC._get_xla_sharding_spec(p) for k, p in named}},
            "devices": xr.global_runtime_device_count()}}, sys.argv[1])
"""

v = verification(
    "xla-spmd-fsdp-step",
    model="MLP 8-16-1 with Tanh, float32, seed 0 (the distributed claims' model)",
    inputs="batch of 8 random inputs and targets (the distributed claims' batch), sharded on the 'fsdp' axis",
    method=f"torch_xla SPMD over CPU_NUM_DEVICES={DEVICES} in a fresh process; SpmdFullyShardedDataParallel around "
    "each "
    "Linear and the whole model, mesh (fsdp, model) = "
    f"({DEVICES}, 1); one SGD step (lr 0.1, MSE mean) against the same step on the CPU; rtol {RTOL:g}, atol {ATOL:g}",
)

reference = _jobs.single_process_step(v.reference_device, lambda: None)

# %%
# The step under FSDPv2, in its own process
# -----------------------------------------

result, failure = None, ""
skipped = f"the claim is about torch_xla's SPMD mode; the configured backend is {v.backend.name}"
if v.backend.name == "xla":
    skipped = "the SPMD step did not run (see the first check)"
    result, failure = _jobs.run_spmd_program(STEP, DEVICES)

with v.check(f"every parameter is sharded over the {DEVICES} CPU devices") as check:
    if v.backend.name != "xla":
        check.unsupported(skipped)
    check.expect(not failure, f"the SPMD process failed: {failure}")
    if result is not None:
        check.measure("devices the SPMD program ran on", result["devices"], tolerance=f"== {DEVICES}")
        check.expect(result["devices"] == DEVICES, f"ran on {result['devices']} devices")
        for name, spec in result["sharding"].items():
            print(f"{name}: {spec}")
            check.measure(f"XLA sharding of {name}", spec, tolerance="not replicated")
            check.expect(spec not in ("", "{replicated}"), f"{name} is not sharded: {spec!r}")

with v.check(f"an FSDPv2 step over {DEVICES} CPU devices matches one step on the CPU") as check:
    if result is None:
        check.unsupported(skipped)
    _jobs.require_visible_step(check, reference["before"], reference["after"], ATOL)
    check.close(result["loss"], reference["loss"], rtol=RTOL, atol=ATOL, what="loss")
    check.equal(sorted(result["params"]), sorted(reference["after"]), "parameter names")
    for name, value in reference["after"].items():
        check.close(result["params"][name], value, rtol=RTOL, atol=ATOL, what=f"{name} after the step")

v.finish()
