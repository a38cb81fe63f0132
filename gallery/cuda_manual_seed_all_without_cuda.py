"""
torch.cuda.manual_seed_all seeds nothing, without an error, where there is no CUDA GPU
======================================================================================

:claim-verdict:`cuda-manual-seed-all-without-cuda`

The claim: where ``torch.cuda.is_available()`` is False,
``torch.cuda.manual_seed_all(0)``, the seeding call of code written for CUDA,
raises nothing and does not make the configured device's random numbers
repeat: two draws of ``torch.rand`` on the device, each right after
``torch.cuda.manual_seed_all(0)``, differ. A run meant to be reproducible is
then silently not.

The portable call, ``torch.manual_seed(0)``, is tried the same way and its
result recorded: whether it repeats the device's draws is what
rng-streams-per-device checks per backend.
"""

import torch
from _cuda_code import attempt, require_no_cuda

from torchclaims.verify import verification

v = verification(
    "cuda-manual-seed-all-without-cuda",
    inputs="torch.rand(8) on the configured device, twice",
    method="each draw right after the seeding call; the two draws compared",
)


def draw_after(seed) -> torch.Tensor:
    seed(0)
    values = torch.rand(8, device=v.device)
    v.sync()
    return values.cpu()


# %%
# Two draws, each after the CUDA seeding call
# -------------------------------------------

with v.check("torch.cuda.manual_seed_all(0) raises nothing and the two draws after it differ") as check:
    require_no_cuda(check)
    what, first, _ = attempt(lambda: draw_after(torch.cuda.manual_seed_all))
    if check.expect(what == "returned", f"torch.cuda.manual_seed_all(0) raised: {first}"):
        second = draw_after(torch.cuda.manual_seed_all)
        same = torch.equal(first, second)
        check.measure("draws after torch.cuda.manual_seed_all(0) identical", same, tolerance="== False")
        check.expect(not same, "the draws repeated: torch.cuda.manual_seed_all seeded the device's generator")
    repeats = torch.equal(draw_after(torch.manual_seed), draw_after(torch.manual_seed))
    check.note(f"after torch.manual_seed(0) the two draws {'repeat' if repeats else 'differ'} (not judged)")

v.finish()
