"""A two-layer perceptron, forward only: operators every measured release runs natively.

    torchclaims check examples/check/native_mlp.py:mlp
"""

import torch
from torch import nn


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (torch.randn(8, 16),)
