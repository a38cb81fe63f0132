"""Attention over a sliding window longer than the sequence: the slice starts before the front.

    torchclaims check examples/check/sliding_window.py:sliding_window_step

Keeping the last ``window`` positions with ``keys[:, -window:]`` when the
sequence is shorter than the window is the slice that raises on torch_xla
(claim ``xla-slice-negative-start``), as in the sliding-window attention of
Mistral and Gemma 2.
"""

import torch
from torch import nn


class SlidingWindowMixer(nn.Module):
    def __init__(self, width: int = 8, window: int = 16):
        super().__init__()
        self.window = window
        self.project = nn.Linear(width, width)

    def forward(self, x):
        keys = self.project(x)[:, -self.window :]  # 6 positions, a window of 16: the start is before the front
        return torch.softmax(x @ keys.transpose(1, 2), dim=-1) @ keys


def sliding_window_step():
    torch.manual_seed(0)
    return SlidingWindowMixer(), (torch.randn(2, 6, 8),)
