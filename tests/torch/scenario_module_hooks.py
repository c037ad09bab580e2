# What the bridge leaves on a program's modules: its naming must not call
# the program's own named_parameters() or named_modules(), and its naming's global forward
# pre-hook must go once the loop comes round, though a module is never
# called (the module tracker's stays: ops name their module).
import torch

calls = []


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 4)
        self.fc2 = torch.nn.Linear(4, 2)
        self.unused = torch.nn.Linear(4, 4)  # never called

    def named_parameters(self, *args, **kwargs):
        calls.append("named_parameters")
        return super().named_parameters(*args, **kwargs)

    def named_modules(self, *args, **kwargs):
        calls.append("named_modules")
        return super().named_modules(*args, **kwargs)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


model = Net()
spare = torch.nn.Linear(4, 4)  # never called either
optimizer = torch.optim.SGD([p for _, p in torch.nn.Module.named_parameters(model)],
                            lr=0.1)
calls.clear()  # torch's named_parameters calls named_modules: ours
hooks = []
for step in range(3):
    with torch.autocast("cpu", torch.bfloat16):
        loss = model(torch.randn(2, 4)).float().sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    hooks.append(len(torch.nn.modules.module._global_forward_pre_hooks))
print(calls, hooks)
