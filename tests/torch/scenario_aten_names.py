# Calls named "aten::..." that are no dispatcher op: a custom autograd
# Function's apply is recorded under its class name (FUNCTION scope, no
# schema), in a std::string on the C++ stack, so two such names come at
# the same address call after call.  Each must stay itself in the trace.
import torch


def function(name):
    return type(name, (torch.autograd.Function,), {
        "forward": staticmethod(lambda ctx, x: x * 2),
        "backward": staticmethod(lambda ctx, g: g * 2),
    })


fake_a, fake_b = function("aten::fake_a"), function("aten::fake_b")
x = torch.ones(4, requires_grad=True)
total = 0
for _ in range(10):
    with torch.autograd.profiler.record_function("aten::fake_a"):
        y = fake_a.apply(x)
    with torch.autograd.profiler.record_function("aten::fake_b"):
        z = fake_b.apply(x)
    loss = (y + 3 * z).sum()
    loss.backward()
    total += loss.item()
print(total)
