"""The compiler stack, for runs with several torch.compile claims.

Inductor also works out once per process which vector instructions the CPU
has, by compiling and running small test programs (seconds; more with a cold
cache). That answers a question about the hardware, not about any claim's
graphs, so it is done here once and inherited by every claim's process:
torch's own fresh_cache() keeps it too. The compilers it runs are processes of
their own, so it runs in the background while the server imports what follows.
"""

from torchclaims.run.preload import in_background, load

# The search starts as soon as what it imports is imported, here: importing that
# in its thread while this one imports the same modules could deadlock. The rest follows.
SEARCH_IMPORTS = ("torch._dynamo", "torch._inductor.codecache", "torch.utils.cpp_extension")

load(SEARCH_IMPORTS)
in_background("torch._inductor.cpu_vec_isa", "pick_vec_isa")
load(("torch._inductor.compile_fx",))
