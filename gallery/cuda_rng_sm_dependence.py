"""
Seeded CUDA sampling differs between GPUs with different SM counts
==================================================================

:claim-verdict:`cuda-rng-sm-dependence`

The claim: with a fixed seed, what PyTorch's CUDA generator draws depends on
the GPU's number of streaming multiprocessors (SMs). A random kernel launches
at most ``SMs x (max threads per SM / 256)`` blocks of 256 threads, each
thread drawing from its own Philox subsequence, so element ``i`` comes from
thread ``i mod (256 x blocks)``. On a CUDA GPU, ``torch.randint`` and
``torch.randn`` of 2**22 elements after ``manual_seed(0)`` equal a CPU
reconstruction of that layout for the GPU's SM count, and differ from the
reconstructions for other SM counts, as other GPU models or MIG slices would
draw them.

One GPU has one SM count, so the script reads the layout back from the GPU's
own draw. Up to the grid's last thread, element ``i`` is the first value of
thread ``i``; from there on the threads start again with their second value.
So the first position where the draw stops matching "one value per thread"
is the number of threads the GPU launched, and it must be the one its SM count
gives. A GPU whose launch ignored its SM count, or whose generator drew other
numbers, fails that check. The rebuild on the CPU (``gallery/_philox.py``:
cuRAND's Philox4x32-10, checked against Random123's published answers, and
PyTorch's launch layout) must then reproduce the whole draw; what GPUs with
other SM counts launch, and so where their draws part from this one, follows
from the same layout. Other backends report unverified.
"""

import _philox
import numpy as np
import torch

from torchclaims.verify import verification

N = 2**22
HIGH = 2**27  # below 2**28, so PyTorch draws each value from one 32-bit Philox output
NORMAL_ATOL = 1e-3  # cuRAND's Box-Muller uses float32 logf and __sincosf; other layouts differ by O(1)
CUDA = "cuda"  # the device type the claim is about (data under test)

v = verification(
    "cuda-rng-sm-dependence",
    inputs="torch.randint(0, 2**27, (2**22,)) and torch.randn(2**22) on the GPU after torch.manual_seed(0)",
    method="exact comparison (randint; randn within 1e-3) with a NumPy rebuild of PyTorch's CUDA random kernel "
    "for the GPU's SM count; rebuilds for other SM counts compared with the GPU's draw",
)

# the rebuild's Philox must reproduce Random123's known answers, or nothing below means anything
_philox.check_known_answers()


def nvidia_gpu(check):
    """The GPU's SM count and threads per SM, or unsupported when this is not an NVIDIA CUDA run."""
    if v.backend.name != CUDA:
        check.unsupported(f"the configured backend is {v.backend.name}; the claim is about NVIDIA CUDA generators")
    if torch.version.hip is not None:
        check.unsupported("this is a ROCm build; the claim covers NVIDIA CUDA generators only")
    props = torch.cuda.get_device_properties(v.device)
    threads = getattr(props, "max_threads_per_multi_processor", None)
    check.measure("GPU", props.name)
    check.measure("SM count", props.multi_processor_count)
    check.measure("max threads per SM", str(threads))
    if threads is None:
        check.unsupported(f"torch {torch.__version__} does not report max_threads_per_multi_processor")
    check.measure("threads launched for 2**22 elements", _philox.grid_threads(N, props.multi_processor_count, threads))
    return props.multi_processor_count, threads


def seeded(draw):
    torch.manual_seed(0)
    sample = draw()
    v.sync()
    return sample.cpu()


# %%
# Reproducible on this GPU
# ------------------------

with v.check("re-seeding reproduces the sample on the same GPU") as check:
    nvidia_gpu(check)
    first = seeded(lambda: torch.randint(0, HIGH, (N,), device=v.device))
    check.equal(
        seeded(lambda: torch.randint(0, HIGH, (N,), device=v.device)), first, "two seeded draws of 2**22 integers"
    )

# %%
# The grid, read back from the draw
# ---------------------------------
# The rebuild for a GPU with enough SMs to give every element its own thread
# is "one value per thread"; this GPU's draw follows it up to its own grid.

drawn_ints = None
with v.check("the grid read back from the GPU's draw is the one its SM count gives") as check:
    sms, threads = nvidia_gpu(check)
    drawn_ints = seeded(lambda: torch.randint(0, HIGH, (N,), device=v.device)).numpy()
    one_per_thread = _philox.randint(N, HIGH, -(-N // threads) + 1, threads)
    parted = np.nonzero(drawn_ints != one_per_thread)[0]
    launched = int(parted[0]) if len(parted) else N
    expected = _philox.grid_threads(N, sms, threads)
    check.measure("threads launched, read from the draw", launched, tolerance=f"== {expected}")
    check.equal(launched, expected, f"threads launched for {N} elements by a GPU with {sms} SMs")
    for other in sorted({sms - 1, sms + 1, max(1, sms // 2)} - {sms}):
        check.note(
            f"a GPU with {other} SMs launches {_philox.grid_threads(N, other, threads)} threads, "
            f"so its draw parts from this one at position {min(launched, _philox.grid_threads(N, other, threads))}"
        )

# %%
# The rebuild for this GPU's SM count
# -----------------------------------
# ``torch.randint`` is compared exactly; ``torch.randn`` within a tolerance,
# because the GPU's float32 transcendental functions round differently from
# NumPy's float64 ones.

with v.check("torch.randint equals the rebuild for this GPU's SM count, exactly") as check:
    sms, threads = nvidia_gpu(check)
    mismatched = int((drawn_ints != _philox.randint(N, HIGH, sms, threads)).sum())
    check.measure("elements that differ from the rebuild", mismatched, tolerance="== 0")
    check.expect(mismatched == 0, f"{mismatched} of {N} elements differ from the rebuild for {sms} SMs")

with v.check(f"torch.randn equals the rebuild for this GPU's SM count within {NORMAL_ATOL:g}") as check:
    sms, threads = nvidia_gpu(check)
    drawn_normals = seeded(lambda: torch.randn(N, device=v.device)).numpy()
    error = float(np.abs(drawn_normals.astype(np.float64) - _philox.randn(N, sms, threads)).max())
    check.measure("max abs difference from the rebuild", error, tolerance=f"<= {NORMAL_ATOL:g}")
    check.expect(error <= NORMAL_ATOL, f"randn differs from the rebuild by up to {error:.3g}")

v.finish()
