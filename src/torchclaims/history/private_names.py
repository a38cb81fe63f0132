"""Every private name of torch that the engine or a claim script uses, and why.

torch promises nothing about these (``torch._C._*``, ``torch._dynamo``,
``torch._inductor``, ``torch.testing._internal``, underscored attributes), so a
release may rename or drop one without notice. Listing them in one place is
what lets the release sweep ask each release whether they all still resolve
(:mod:`.name_probe`, :mod:`.name_answers`); ``tests/test_private_torch_names.py``
reads the syntax trees of ``src/`` and ``gallery/`` and fails when a use is not
listed here or a name listed here is used nowhere. This module imports nothing,
as the probe that reads it uses the standard library alone.
"""

# dotted name -> why the project needs it
NAMES = {
    # The dispatcher: whether an operator has a kernel of a device's own, and which key a device uses.
    "torch._C._dispatch_dump_table": "coverage/fallback.py reads an operator's kernels per dispatch key "
    "to tell a native kernel from a CPU fallback",
    "torch._C._dispatch_get_all_op_names": "coverage/op_overloads.py lists every registered operator, the "
    "denominator of the operator table (the backend-relevant overloads)",
    "torch._C._dispatch_has_kernel_for_dispatch_key": "the fallback claims (MPS, Neuron, XLA) ask whether an "
    "operator has a kernel of the device's own key or a composite one",
    "torch._C._dispatch_key_for_device": "the dispatch key of the configured device, for the fallback "
    "tables and the PrivateUse1 claims",
    "torch._C._dispatch_keys": "backends_use_privateuse1.py shows which keys a tensor on the device carries",
    "torch._C._get_privateuse1_backend_name": "the PrivateUse1 claims read which name the slot has been given",
    "torch._C._BlasBackend.Ck": "rocm_ck_optin.py compares the BLAS library selected with Composable Kernel",
    "torch._chunk_cat": "xla_chunk_cat.py checks this private operator on the device against the CPU",
    # torch.compile's front end (dynamo) and its compiler (inductor).
    "torch._dynamo": "imported once before forking (gallery/_jobs.py, the fork server's compiler preload), "
    "and named by the runner as a module that means a claim uses the compiler",
    "torch._dynamo.backends.registry.lookup_backend": "custom_op_eager_and_compile.py wraps the configured "
    "compile backend",
    "torch._dynamo.config": "recompile_dynamic_shapes.py reads dynamo's settings",
    "torch._dynamo.config._config": "recompile_dynamic_shapes.py reads the declared default of a setting",
    "torch._dynamo.config.automatic_dynamic_shapes": "the setting recompile_dynamic_shapes.py reports and checks",
    "torch._dynamo.config.patch": "compile_failure_raises.py turns suppress_errors on for one call",
    "torch._dynamo.config.suppress_errors": "the default compile_failure_raises.py checks",
    "torch._dynamo.explain": "torchclaims check counts the graph breaks of a team's step",
    "torch._dynamo.list_backends": "compile_backend_and_modes.py lists the compile backends torch registers",
    "torch._dynamo.lookup_backend": "compile_failure_raises.py wraps the configured compile backend to fail",
    "torch._dynamo.reset": "scripts drop compiled graphs between cases so each compiles afresh",
    "torch._dynamo.utils.counters": "scripts count graphs, breaks and recompilations dynamo records",
    "torch._dynamo.utils.counters.clear": "scripts zero dynamo's counters before each case",
    "torch._inductor": "named by the runner as a module that means a claim uses the compiler",
    "torch._inductor.codecache": "imported before inductor's search for the CPU's vector instructions, "
    "which would import it lazily from two threads",
    "torch._inductor.compile_fx": "the fork server's compiler preload imports it once for every claim",
    "torch._inductor.cpu_vec_isa": "the fork server runs inductor's search for the CPU's vector instructions",
    "torch._inductor.cpu_vec_isa.pick_vec_isa": "inductor's own choice, made once in the fork server",
    "torch._inductor.cpu_vec_isa.supported_vec_isa_list": "the candidates tested at once in the fork server",
    "torch._inductor.cpu_vec_isa.x86_isa_checker": "the instruction sets the CPU reports, to test only those",
    # PyTorch's own device tests: the operator database and how it compares devices.
    "torch.testing._comparison.default_tolerances": "the operator sweep's default tolerance per dtype, "
    "as torch.testing's",
    "torch.testing._internal.common_device_type.precisionOverride": "per-operator tolerances of op_db, "
    "applied as PyTorch's device tests apply them",
    "torch.testing._internal.common_device_type.toleranceOverride": "per-operator tolerances of op_db",
    "torch.testing._internal.common_methods_invocations.op_db": "every operator the coverage sweep runs",
    "torch.testing._internal.common_utils.set_rng_seed": "each operator's samples made from the same seed "
    "on the CPU and the device",
    "torch.testing._internal.opinfo.core.DecorateInfo": "reading op_db's skips and tolerance decorators",
    # Utilities with no public counterpart.
    "torch.utils._python_dispatch.TorchDispatchMode": "recording the ATen operators a step or a sample "
    "dispatches (torchclaims check, the fallback tables)",
    "torch.utils._pytree.tree_flatten": "comparing an operator's nested outputs leaf by leaf",
    "torch.utils._pytree.tree_leaves": "the tensors in a step's nested inputs and outputs",
    "torch.utils._pytree.tree_map": "moving a step's nested inputs to the device",
    "torch.distributed.tensor.experimental._attention.context_parallel_unshard": "the context-parallel "
    "claim gathers its sharded output",
    "torch.Tensor._base": "the operator sweep tells a view from the tensor it views",
}
