"""The zoo's GPT-2 under DistributedDataParallel (gloo, CPU bf16
autocast), one process per rank as torchrun starts them; each rank prints
its losses (`loss <float.hex>`).

usage: torchrun --nproc_per_node 2 zoo_ddp.py STEPS
"""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from zoo_models import gpt2, tokens

dist.init_process_group("gloo")
rank = dist.get_rank()
model = DistributedDataParallel(gpt2())
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(int(sys.argv[1])):
    ids = tokens(2 * step + rank)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    # one write: torchrun's workers write unbuffered to one pipe, and
    # print's pieces of two ranks interleave ("lossloss 0x...")
    sys.stdout.write("loss %s\n" % float(loss.item()).hex())
    sys.stdout.flush()
dist.destroy_process_group()
