"""A small vision block: convolution, bilinear and bicubic upsampling, a running sum over
the width, a log-sum-exp pooling and a scatter-add of per-pixel scores into class bins.

    torchclaims check examples/check/vision_block.py:vision_step

Every tensor it computes on has 2 to 4 dimensions: no 0-dim input reaches an
operator that reduces or indexes along a dimension.
"""

import torch
from torch import nn
from torch.nn import functional as F


class VisionBlock(nn.Module):
    def __init__(self, classes: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.norm = nn.LayerNorm(16)
        self.classes = classes

    def forward(self, x, bins):
        y = self.conv(x)  # (2, 8, 8, 8)
        y = F.interpolate(y, scale_factor=2, mode="bilinear") + F.interpolate(y, scale_factor=2, mode="bicubic")
        y = self.norm(y.cumsum(dim=-1))  # (2, 8, 16, 16)
        pooled = torch.logsumexp(y.flatten(2), dim=-1)  # (2, 8)
        scores = torch.zeros(pooled.shape[0], self.classes).index_put_(bins, pooled[:, :4].reshape(-1), accumulate=True)
        return scores.scatter(1, bins[1].view(2, 4)[:, :2], pooled[:, :2])


def vision_step():
    torch.manual_seed(0)
    bins = (torch.arange(2).repeat_interleave(4), torch.tensor([0, 1, 2, 3, 3, 2, 1, 0]))
    return VisionBlock(), (torch.randn(2, 3, 8, 8), bins), lambda out: out.square().mean()
