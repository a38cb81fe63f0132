"""The compiler stack, for runs with several torch.compile claims."""

from torchclaims.preload import load

load(("torch._dynamo", "torch._inductor.compile_fx"))
