# trace() blocks in a process whose rank torch.distributed gave it before
# them (init_process_group(rank=0) of a world of 1, no RANK in its
# environment, as mp.spawn's workers have none): each block's trace names the
# process by that rank, as `amptrace run` names it from the call on
# (FORMAT.md §5).  argv: DIR
import os
import sys
import torch
import torch.distributed as dist
import amptrace_torch

folder = sys.argv[1]
store = dist.FileStore(os.path.join(folder, "store"), 1)
dist.init_process_group("gloo", store=store, rank=0, world_size=1)
for name in ("first.json", "second.json"):
    with amptrace_torch.trace(os.path.join(folder, name), quiet=True):
        with torch.autocast("cpu", torch.bfloat16):
            torch.mm(torch.ones(2, 2), torch.ones(2, 2))
dist.destroy_process_group()
if os.path.exists(os.path.join(folder, "store")):
    os.remove(os.path.join(folder, "store"))
print("traced")
