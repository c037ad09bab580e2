"""Two threads' compiles overlapping: thread A's Dynamo compile and
thread B's lazy compile of a backward (which Dynamo's compile_lock does
not hold back), each waiting inside its compiler for the other to have
begun.  Modes: a-first (A's compile begins and ends first, inside B's)
and b-first (B's begins first, A's inside it).  After its compile, A
runs 5 matmuls of its own.  Prints what each thread computed."""
import sys
import threading

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

mode = sys.argv[1]
WAIT = 60
b_started, a_compiled = threading.Event(), threading.Event()


def forward_compiler(gm, example_inputs):
    return make_boxed_func(gm.forward)


def backward_compiler(gm, example_inputs):
    if threading.current_thread().name == "B":
        b_started.set()
        a_compiled.wait(WAIT)
    return make_boxed_func(gm.forward)


torch.manual_seed(0)
linear = torch.nn.Linear(4, 4)
fb = torch.compile(lambda x: linear(x).relu().sum(),
                   backend=aot_autograd(fw_compiler=forward_compiler,
                                        bw_compiler=backward_compiler))
loss = fb(torch.randn(2, 4))  # its backward is compiled when it runs
b = threading.Thread(target=loss.backward, name="B")


def a_backend(gm, example_inputs):
    if mode == "a-first":
        b.start()
    b_started.wait(WAIT)
    return gm.forward


fa = torch.compile(lambda x: (x * 2).sin(), backend=a_backend)


def run_a():
    if mode == "b-first":
        b.start()
    print("A", float(fa(torch.randn(3)).sum()).hex())
    a_compiled.set()
    x = torch.randn(2, 2)
    for _ in range(5):
        x = torch.mm(x, x).tanh()
    print("A after", float(x.sum()).hex())


a = threading.Thread(target=run_a, name="A")
a.start()
a.join()
b.join()
print("B", float(linear.weight.grad.sum()).hex())
