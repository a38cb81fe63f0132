"""The compiler stack, for runs with several torch.compile claims.

Inductor also works out once per process which vector instructions the CPU
has, by compiling and running a small test program for each instruction set
the CPU reports (seconds each; more with a cold cache). That answers a
question about the hardware, not about any claim's graphs, so it is done here
once and inherited by every claim's process: torch's own fresh_cache() keeps
it too. The compilers it runs are processes of their own, so it runs in the
background while the server imports what follows, and each candidate's test
is compiled at once, in a thread of its own, instead of one after the other.
"""

import platform
import threading

from torchclaims.run.preload import accelerator_built, in_background, load

# What the search would import lazily, imported first: two threads importing the
# same modules at once could deadlock the server's imports.
SEARCH_IMPORTS = ("torch._dynamo", "torch._inductor.codecache", "torch.utils.cpp_extension")

WANTED = not accelerator_built()  # else the claims import it themselves (accelerator_built says why)
if WANTED:
    load(SEARCH_IMPORTS)


def search_vector_instructions() -> None:
    """Inductor's own choice (pick_vec_isa), after testing every candidate it
    would test in turn, all at once: each test's answer is cached in inductor."""
    from torch._inductor import cpu_vec_isa

    candidates = []
    if platform.machine() in ("x86_64", "AMD64"):  # elsewhere inductor has one candidate
        reported = cpu_vec_isa.x86_isa_checker()
        candidates = [
            isa for isa in cpu_vec_isa.supported_vec_isa_list if all(flag in reported for flag in str(isa).split())
        ]
    tests = [threading.Thread(target=bool, args=(isa,), name=f"preload test {isa}") for isa in candidates]
    for test in tests:
        test.start()
    for test in tests:
        test.join()
    cpu_vec_isa.pick_vec_isa()


if WANTED:
    in_background(search_vector_instructions)
    load(("torch._inductor.compile_fx",))
