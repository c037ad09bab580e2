"""DistributedDataParallel started as PyTorch's DDP tutorial starts it:
torch.multiprocessing.spawn, no RANK in any process's environment, each
worker giving init_process_group its rank (gloo, CPU bf16 autocast).  The
model is made before init_process_group, so each worker records ops
before it has a rank.  Each worker prints `rank R step S loss <hex>`.

usage: scenario_spawn_ddp.py STEPS STORE [--no-init | --mesh] [--loader]
                             [--node K/N]
  STORE: a file that does not exist yet, the ranks' rendezvous (a file,
         not a TCP port another job could take meanwhile)
  --no-init: the workers train alone and never call init_process_group
  --mesh: the workers call init_device_mesh (torch 2.2+) instead, as
          FSDP2's examples do: it calls init_process_group itself, which
          reads the rank each worker puts in its environment (RANK) and
          meets the others at a TCP port the parent found free, not at
          STORE
  --loader: each worker's batches come from a DataLoader with one worker
            process of its own (spawned, mp.spawn's workers' start
            method, after init_process_group), which makes them with
            torch ops
  --node K/N: this run is node K (from 0) of a job of N nodes, each a
              run of this script with the same STORE, side by side: its
              two workers are ranks 2K and 2K+1 of 2N (a multi-node job
              on one machine; without it, node 0 of 1; not with --mesh,
              whose port is each run's own)
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

RANKS_PER_NODE = 2


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


class Batches(torch.utils.data.Dataset):
    def __init__(self, rank, steps):
        self.rank, self.steps = rank, steps

    def __len__(self):
        return self.steps

    def __getitem__(self, step):
        if step >= self.steps:
            raise IndexError(step)  # iterated without a DataLoader
        generator = torch.Generator().manual_seed(100 * self.rank + step)
        return torch.randn(4, 8, generator=generator)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def join(rank, world_size, store, init):
    """The worker joins the job as `init` says: "file" (init_process_group
    at STORE), a port number (init_device_mesh), or None (alone)."""
    if init == "file":
        dist.init_process_group("gloo", rank=rank, world_size=world_size,
                                init_method="file://" + store)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(init))
        init_device_mesh("cpu", (world_size,))


def worker(local_rank, node, nodes, store, steps, init, loader):
    rank = node * RANKS_PER_NODE + local_rank
    net = model()
    if init:
        join(rank, nodes * RANKS_PER_NODE, store, init)
        net = DistributedDataParallel(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    batches = Batches(rank, steps)
    if loader:
        batches = torch.utils.data.DataLoader(batches, batch_size=None,
                                              num_workers=1)
    for step, x in enumerate(batches):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        # one write: the workers share the parent's stdout
        sys.stdout.write("rank %d step %d loss %s\n"
                         % (rank, step, float(loss.item()).hex()))
        sys.stdout.flush()
    if init:
        dist.destroy_process_group()


if __name__ == "__main__":
    options = sys.argv[3:]
    init = None if "--no-init" in options else \
        free_port() if "--mesh" in options else "file"
    node, nodes = 0, 1
    if "--node" in options:
        node, nodes = map(int, options[options.index("--node") + 1]
                          .split("/"))
    mp.spawn(worker, args=(node, nodes, sys.argv[2], int(sys.argv[1]), init,
                           "--loader" in options),
             nprocs=RANKS_PER_NODE)
