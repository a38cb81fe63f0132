"""A spectral filter: torch.fft.rfft, a learned per-frequency gain, torch.fft.irfft.

    torchclaims check examples/check/fft_model.py:spectral_step
"""

import torch
from torch import nn


class SpectralFilter(nn.Module):
    def __init__(self, length: int = 16):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(length // 2 + 1))
        self.length = length

    def forward(self, x):
        return torch.fft.irfft(torch.fft.rfft(x) * self.gain, n=self.length)


def spectral_step():
    torch.manual_seed(0)
    return SpectralFilter(), (torch.randn(4, 16),), lambda out: out.square().mean()
