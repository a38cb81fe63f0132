"""
SPMD over XLA's CPU devices gives the single-device training step
=================================================================

:claim-verdict:`xla-spmd-parallel-step`

The claim: with torch_xla's SPMD mode over 2 CPU devices of one process
(``CPU_NUM_DEVICES=2``), one SGD step of the distributed claims' model gives
the loss and the parameters of one ordinary step on the CPU, within float32
tolerance, whether the batch is sharded over the devices (data parallel) or
the two linear layers' weights are (tensor parallel).

SPMD is how torch_xla runs one program over several devices without
process groups: the program is written for one device, ``mark_sharding``
annotates tensors, and XLA partitions the graph and inserts the collectives.
It is the one way to run a parallel step on XLA on the CPU (the process-group
routes fail there, see the related claims). SPMD mode must be chosen before
the runtime starts, so the step runs in a fresh Python process, from the
helper module's model and batch; its results come back in a file.
"""

import _jobs

from torchclaims.verify import verification

DEVICES = 2
RTOL, ATOL = 1e-4, 1e-5
STEP = f"""
import sys, numpy as np, torch, torch_xla, torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs
import _jobs
xr.use_spmd()
mesh = xs.Mesh(np.arange({DEVICES}), ({DEVICES}, 1), ("shard", "none"))
results = {{}}
for layout in ("data parallel", "tensor parallel"):
    model = _jobs.make_model().to(torch_xla.device())
    inputs, targets = (t.to(torch_xla.device()) for t in _jobs.make_batch())
    if layout == "data parallel":
        xs.mark_sharding(inputs, mesh, ("shard", None))
        xs.mark_sharding(targets, mesh, ("shard", None))
        sharded = inputs
    else:
        xs.mark_sharding(model[0].weight, mesh, ("shard", None))  # output features of the first layer
        xs.mark_sharding(model[2].weight, mesh, (None, "shard"))  # input features of the second
        sharded = model[0].weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    torch_xla.sync()
    results[layout] = {{"loss": loss.cpu(), "params": {{k: p.detach().cpu() for k, p in model.named_parameters()}},
                        "devices": xr.global_runtime_device_count(),
                        "sharding": torch_xla._XLAC._get_xla_sharding_spec(sharded)}}
torch.save(results, sys.argv[1])
"""

v = verification(
    "xla-spmd-parallel-step",
    model="MLP 8-16-1 with Tanh, float32, seed 0 (the distributed claims' model)",
    inputs="batch of 8 random inputs and targets (the distributed claims' batch)",
    method=f"torch_xla SPMD over CPU_NUM_DEVICES={DEVICES} in a fresh process: mark_sharding of the batch (data "
    "parallel) or of both weights (tensor parallel); one SGD step (lr 0.1, MSE mean) against the same step on the CPU; "
    f"rtol {RTOL:g}, atol {ATOL:g}",
)

reference = _jobs.single_process_step(v.reference_device, lambda: None)

# %%
# The step under SPMD, in its own process
# ---------------------------------------

results, failure = {}, ""
if v.backend.name == "xla":
    results, failure = _jobs.run_spmd_program(STEP, DEVICES)

for layout in ("data parallel", "tensor parallel"):
    with v.check(f"a {layout} SPMD step over {DEVICES} CPU devices matches one step on the CPU") as check:
        if v.backend.name != "xla":
            check.unsupported(f"the claim is about torch_xla's SPMD mode; the configured backend is {v.backend.name}")
        check.expect(not failure, f"the SPMD process failed: {failure}")
        if failure:
            continue
        result = results[layout]
        check.measure("devices the SPMD program ran on", result["devices"], tolerance=f"== {DEVICES}")
        check.expect(result["devices"] == DEVICES, f"ran on {result['devices']} devices")
        check.measure("XLA sharding of the sharded tensor", result["sharding"], tolerance="not replicated")
        check.expect(
            result["sharding"] not in ("", "{replicated}"), f"the tensor is not sharded: {result['sharding']!r}"
        )
        check.close(result["loss"], reference["loss"], rtol=RTOL, atol=ATOL, what="loss")
        for name, value in result["params"].items():
            check.close(value, reference["after"][name], rtol=RTOL, atol=ATOL, what=f"{name} after the step")

v.finish()
