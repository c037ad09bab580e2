# A small training loop of N steps (argv[1]), for bounded recording:
# autocast bf16, AdamW, gradient clipping.  With argv[2] = "api", the
# loop runs inside amptrace_torch.trace(argv[3], steps=argv[4]).
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1])
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 8))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 32), torch.randint(0, 8, (16,))


def train():
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return loss


if len(sys.argv) > 2 and sys.argv[2] == "api":
    import amptrace_torch
    try:
        with amptrace_torch.trace(sys.argv[3], steps=sys.argv[4]):
            loss = train()
    except RuntimeError as e:
        print("refused: %s" % e)
        sys.exit(0)
else:
    loss = train()
print("loss %.4f" % loss.item())
