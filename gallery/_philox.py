"""What PyTorch's CUDA generator draws, rebuilt on the CPU for any SM count.

PyTorch's CUDA random kernels (``aten/src/ATen/native/cuda/DistributionTemplates.h``)
launch ``blocks = min(SMs x (max threads per SM / 256), ceil(n / 256))``
blocks of 256 threads. Thread ``t`` seeds cuRAND's Philox4x32-10 generator
with ``curand_init(seed, subsequence=t, offset)``, so its ``k``-th ``curand4``
call returns Philox applied to the counter ``(k, 0, t, 0)`` (offset 0, as
after ``manual_seed``) with the key ``(seed, 0)``. Each call yields 4 values,
and element ``i`` of the output comes from thread ``i mod G``
(``G = 256 x blocks``), call ``i // (4G)``, value ``(i // G) mod 4``.

So the layout, and with it the values at positions ``>= G``, depends on the
GPU's SM count. :func:`randint` and :func:`randn` rebuild ``torch.randint``
(a range below 2**28, which PyTorch draws from 32-bit values) and
``torch.randn`` (float32, cuRAND's Box-Muller transform) for a given SM
count, with NumPy.
"""

from __future__ import annotations

import numpy as np

BLOCK = 256  # threads per block in PyTorch's distribution kernels
UNROLL = 4  # values per curand4 call
_MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)

# Random123's published known answers for Philox4x32-10: (counter, key) -> output.
KNOWN_ANSWERS = (
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
)


def philox4x32_10(counter, key):
    """Philox4x32-10 on arrays: counter is 4 arrays of uint32 values, key 2; returns 4 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint64) for k in key)
    for round_ in range(10):
        if round_:
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        p0, p1 = _M0 * c0, _M1 * c2  # products of two 32-bit values fit in 64 bits
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _MASK, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _MASK
    return c0, c1, c2, c3


def check_known_answers() -> None:
    """Raise RuntimeError unless philox4x32_10 reproduces Random123's known answers."""
    for counter, key, expected in KNOWN_ANSWERS:
        got = tuple(int(x) for x in philox4x32_10(counter, key))
        if got != expected:
            raise RuntimeError(f"Philox4x32-10 of {counter}, {key} gave {got}, expected {expected}")


def grid_threads(n: int, sm_count: int, threads_per_sm: int) -> int:
    """G: the threads PyTorch launches for n elements on a GPU with these properties."""
    blocks = min(sm_count * (threads_per_sm // BLOCK), -(-n // BLOCK))
    return BLOCK * blocks


def _draws(n: int, sm_count: int, threads_per_sm: int, seed: int) -> np.ndarray:
    """The 32-bit values the kernel hands out, shaped (call k, value j, thread t).

    Flattened in that order, position ``k*4G + j*G + t`` is output element
    ``i``: exactly the element thread ``t`` writes with value ``j`` of its
    ``k``-th call.
    """
    threads = grid_threads(n, sm_count, threads_per_sm)
    calls = -(-n // (UNROLL * threads))
    t = np.tile(np.arange(threads, dtype=np.uint64), calls)
    k = np.repeat(np.arange(calls, dtype=np.uint64), threads)
    zero = np.zeros_like(t)
    outputs = philox4x32_10((k, zero, t, zero), (np.uint64(seed) & _MASK, np.uint64(seed) >> np.uint64(32)))
    return np.stack(outputs).reshape(UNROLL, calls, threads).transpose(1, 0, 2)


def randint(n: int, high: int, sm_count: int, threads_per_sm: int, seed: int = 0) -> np.ndarray:
    """torch.randint(0, high, (n,)) on such a GPU after manual_seed(seed); high < 2**28."""
    if high >= 2**28:
        raise ValueError("PyTorch draws ranges of 2**28 or more from 64-bit values, which this does not rebuild")
    values = _draws(n, sm_count, threads_per_sm, seed).reshape(-1)[:n]
    return (values % np.uint64(high)).astype(np.int64)


def randn(n: int, sm_count: int, threads_per_sm: int, seed: int = 0) -> np.ndarray:
    """torch.randn(n) (float32) on such a GPU after manual_seed(seed), via cuRAND's Box-Muller transform."""
    draws = _draws(n, sm_count, threads_per_sm, seed)
    x, y, z, w = (draws[:, j, :].astype(np.float32) for j in range(UNROLL))
    scale = np.float32(2.0**-32)
    two_pi = np.float32(2.0**-32 * 2 * np.pi)

    def box_muller(a, b):
        u = a * scale + scale / np.float32(2)
        angle = (b * two_pi + two_pi / np.float32(2)).astype(np.float64)
        radius = np.sqrt(-2.0 * np.log(u.astype(np.float64)))
        return radius * np.sin(angle), radius * np.cos(angle)

    first, second = box_muller(x, y), box_muller(z, w)
    stacked = np.stack([first[0], first[1], second[0], second[1]], axis=1)  # (calls, 4, threads)
    return stacked.reshape(-1)[:n].astype(np.float32)
