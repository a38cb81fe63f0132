"""Worker entry points for the pool tests (spawned workers import them by name)."""

import os
import signal
import time


def echo(conn, slot, prefix):
    from torchclaims.coverage.pool import Progress

    conn.send(("ready", {"slot": slot}))
    while (item := conn.recv()) is not None:
        if item.startswith("progress"):  # progress[-crash]: says what it is about to do twice, then goes on
            conn.send(Progress({"sample": 0}))
            conn.send(Progress({"sample": 1}))
        if item == "progress-crash":
            os.kill(os.getpid(), signal.SIGFPE)
        if item == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if item == "exit":  # answers, then dies while idle
            conn.send({"echo": item, "pid": os.getpid(), "slot": slot})
            os._exit(0)
        if item == "hang":
            time.sleep(60)
        if item.startswith("sleep:"):  # sleep:<seconds>[:<tag>]
            time.sleep(float(item.split(":")[1]))
        answer = {"echo": f"{prefix}{item}", "pid": os.getpid(), "slot": slot}
        if item == "spoil":
            answer["restart"] = "the device is spoilt"
        conn.send(answer)
        if "restart" in answer:
            break


def never_ready(conn, slot):
    os._exit(3)


def serve_dying_on_device_dropout(conn, slot, *args):
    """The operator sweep's worker on a "device" whose runtime kills the process with SIGFPE when dropout runs
    on it, as torch_xla 2.9.0's does on ``roll``. On the CPU the device call is the one on the moved copy of a
    sample, which carries no "made for the device" mark; the CPU reference runs on the marked original."""
    import torch

    from torchclaims.coverage.op_samples import FOR_DEVICE
    from torchclaims.coverage.operators import _serve

    dropout = torch.nn.functional.dropout

    def dying(input, *rest, **kwargs):
        if not getattr(input, FOR_DEVICE, False):
            os.kill(os.getpid(), signal.SIGFPE)
        return dropout(input, *rest, **kwargs)

    torch.nn.functional.dropout = dying
    _serve(conn, slot, *args)


def serve_dying_in_device_gelu_backward(conn, slot, *args):
    """The operator sweep's worker on a "device" whose runtime kills the process with SIGFPE in gelu's backward
    kernel, while gelu's forward runs: the device call is told apart as above, by the missing mark."""
    import torch

    from torchclaims.coverage.op_samples import FOR_DEVICE
    from torchclaims.coverage.operators import _serve

    gelu = torch.nn.functional.gelu

    class DiesInBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, approximate):
            ctx.save_for_backward(input)
            ctx.approximate, ctx.on_device = approximate, not getattr(input, FOR_DEVICE, False)
            return gelu(input, approximate=approximate)

        @staticmethod
        def backward(ctx, grad):
            if ctx.on_device:
                os.kill(os.getpid(), signal.SIGFPE)
            (input,) = ctx.saved_tensors
            return torch.ops.aten.gelu_backward(grad, input, approximate=ctx.approximate), None

    torch.nn.functional.gelu = lambda input, approximate="none": DiesInBackward.apply(input, approximate)
    _serve(conn, slot, *args)
