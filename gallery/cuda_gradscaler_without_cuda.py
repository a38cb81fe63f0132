"""
A GradScaler made for CUDA steps the optimizer as plain SGD where there is no CUDA GPU
======================================================================================

:claim-verdict:`cuda-gradscaler-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False, a
``torch.amp.GradScaler("cuda")``, as training loops written for CUDA make it,
disables itself: ``scale(loss)`` returns the loss unchanged, and
``step(optimizer)`` followed by ``update()`` leaves the parameters exactly
where a plain ``optimizer.step()`` does.

One SGD step of a small linear model on the configured device is taken twice
from the same start, once through the scaler and once without it. A build
whose scaler stays enabled without a GPU either raises here or scales the
loss, and the claim is refuted with what happened.
"""

import torch
from _cuda_code import attempt, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-gradscaler-without-cuda",
    model="torch.nn.Linear(8, 1), SGD lr 0.1",
    inputs="a seeded batch of 4",
    method="one step through torch.amp.GradScaler('cuda') against one plain step from the same weights",
)

torch.manual_seed(0)
start = torch.nn.Linear(8, 1)
x, y = torch.randn(4, 8), torch.randn(4, 1)


def one_step(scaler=None) -> tuple[torch.Tensor, float]:
    model = torch.nn.Linear(8, 1).to(v.device)
    model.load_state_dict(start.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(x.to(v.device)), y.to(v.device))
    scaled = scaler.scale(loss) if scaler else loss
    ratio = (scaled / loss).item()
    scaled.backward()
    if scaler:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    v.sync()
    return torch.cat([p.detach().cpu().flatten() for p in model.parameters()]), ratio


# %%
# Through the scaler and without it
# ---------------------------------

with v.check("the CUDA GradScaler leaves the loss unscaled and the step equal to a plain step") as check:
    require_no_cuda(check)
    made, scaler, warned = attempt(lambda: torch.amp.GradScaler("cuda"))  # device under test
    for message in warned:
        check.note(f"warning: {message}")
    check.measure("GradScaler('cuda').is_enabled()", scaler.is_enabled() if made == "returned" else scaler)
    plain, _ = one_step()
    what, value, _ = attempt(lambda: one_step(scaler))
    if check.expect(what == "returned", f"a step through GradScaler('cuda') raised: {value}"):
        through, ratio = value
        check.measure("scaled loss / loss", ratio, tolerance="== 1")
        check.expect(ratio == 1.0, f"the loss was scaled by {ratio:g}")
        check.equal(through, plain, "parameters after the step through the scaler and after a plain step")

v.finish()
