"""Compiles that fail, and what the program sees of it.  Modes:
  suppressed  the backend fails; suppress_errors keeps the error from the
              program, which runs the frame eagerly
  skipped     a graph break inside a context manager Dynamo cannot resume
              from: Dynamo skips the frame (a soft failure), eagerly
  raised      the backend fails; the error reaches the program, which
              catches it
  fullgraph   the backend fails under fullgraph=True: suppress_errors
              (set) does not hold the error back
  handling    no compile fails: the program compiles while it handles an
              exception of its own (an `except` block), which Dynamo's
              end callback sees as well
  raised-handling  raised's, while the program handles one of its own
Prints the results (and the exception the program caught), for the
traced run to match the untraced one."""
import sys

import torch
import torch._dynamo

torch.manual_seed(0)
mode = sys.argv[1]


class Unresumable:
    """A context manager Dynamo does not know: a graph break inside it
    cannot be resumed from."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def g(x, w):
    return (x @ w).relu()


def breaks(x, w):
    with Unresumable():
        y = (x @ w).relu()
        torch._dynamo.graph_break()
        return y.sum()


def broken(gm, example_inputs):
    raise RuntimeError("this backend fails")


w = torch.randn(8, 8)
torch._dynamo.config.suppress_errors = mode in ("suppressed", "fullgraph")
if mode == "skipped":
    h = torch.compile(breaks, backend="aot_eager")
elif mode == "handling":
    h = torch.compile(g, backend="aot_eager")
else:
    h = torch.compile(g, backend=broken, fullgraph=mode == "fullgraph")


def steps():
    try:
        for _ in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                print(float(h(torch.randn(4, 8), w).sum()).hex())
    except Exception as e:
        print("raised", type(e).__name__)


if mode.endswith("handling"):
    try:
        raise LookupError("the program's own")
    except LookupError:
        steps()
else:
    steps()
