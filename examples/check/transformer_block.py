"""A pre-norm transformer block: LayerNorm, causal scaled-dot-product attention, a GELU MLP,
and a top-2 router over the tokens' mean.

    torchclaims check examples/check/transformer_block.py:transformer_step
"""

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width: int = 16, heads: int = 2, experts: int = 4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.router = nn.Linear(width, experts)

    def forward(self, x):
        batch, tokens, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + attended.transpose(1, 2).reshape(batch, tokens, width)
        x = x + self.mlp(self.norm2(x))
        weights, chosen = self.router(x.mean(dim=1)).softmax(dim=-1).topk(2, dim=-1)
        return x * weights.sum(dim=-1)[:, None, None], chosen


def transformer_step():
    torch.manual_seed(0)
    return Block(), (torch.randn(2, 8, 16),), lambda out: out[0].square().mean()
