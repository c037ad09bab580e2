# A training loop killed in the middle of a step: `python3
# scenario_killed.py STEPS PIDFILE` trains STEPS whole steps (an
# optimizer step each), then runs the forward of one more under autocast,
# writes its pid into PIDFILE and waits to be killed (SIGKILL), blocked.
import os
import signal
import sys

import torch
import torch.nn.functional as F

steps, pidfile = int(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for _ in range(steps):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
with torch.autocast("cpu", dtype=torch.bfloat16):
    model(x)
with open(pidfile + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(pidfile + ".tmp", pidfile)
while True:
    signal.pause()
