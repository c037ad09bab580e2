# The README's train.py: a small bf16 autocast training loop, unmodified
# PyTorch, that runs alone (`python train.py`) or one process per rank
# under a launcher (`torchrun --nproc_per_node 2 train.py`: DDP on gloo).
import os

import torch

torch.manual_seed(0)
distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    import torch.distributed as dist
    dist.init_process_group("gloo")

model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 4))
if distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    x, target = torch.randn(4, 8), torch.randint(0, 4, (4,))
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    optimizer.step()
print("loss %.4f" % loss.item())
if distributed:
    dist.destroy_process_group()
