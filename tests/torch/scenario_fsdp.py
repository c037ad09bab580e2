"""Mixed precision by FSDP's policy, without autocast: two ranks
(torch.multiprocessing.spawn, gloo on the CPU) train a small model
sharded by FSDP for a few steps, each printing `rank R step S loss <hex>`.
init_process_group is called before the mesh is made, so each process
has its rank.

usage: scenario_fsdp.py MODE STEPS STORE
  MODE: bf16     fully_shard(mp_policy=MixedPrecisionPolicy(bf16, f32)) on
                 each Linear (by torch.distributed._composable.fsdp's
                 name: another module's alias of the same function) and
                 the model (by torch.distributed.fsdp's)
        f32      the same with param_dtype f32, reduce_dtype bf16: the
                 parameters are not cast, the gradients' reduction is
        no_policy fully_shard without mp_policy: nothing is cast
        fsdp1    FullyShardedDataParallel(mixed_precision=MixedPrecision(
                 bf16, f32)), each Linear wrapped by an auto-wrap policy
  STORE: a file that does not exist yet, the ranks' rendezvous
"""
import functools
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD_SIZE = 2


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


def fsdp2(net, policy):
    from torch.distributed._composable.fsdp import fully_shard as shard_layer
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh("cpu", (WORLD_SIZE,))
    kwargs = {}
    if policy:
        kwargs["mp_policy"] = MixedPrecisionPolicy(*policy)
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            shard_layer(layer, mesh=mesh, **kwargs)
    return fully_shard(net, mesh=mesh, **kwargs)


def fsdp1(net):
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp import MixedPrecision
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return FullyShardedDataParallel(
        net, device_id=torch.device("cpu"),
        auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}),
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16,
                                       reduce_dtype=torch.float32))


WRAP = {
    "bf16": functools.partial(fsdp2, policy=(torch.bfloat16, torch.float32)),
    "f32": functools.partial(fsdp2, policy=(torch.float32, torch.bfloat16)),
    "no_policy": functools.partial(fsdp2, policy=None),
    "fsdp1": fsdp1,
}


def worker(rank, mode, steps, store):
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE,
                            init_method="file://" + store)
    net = WRAP[mode](model())
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 * rank)
    for step in range(steps):
        loss = net(torch.randn(4, 8, generator=generator)).float().pow(2)
        loss = loss.mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        # one write: the workers share the parent's stdout
        sys.stdout.write("rank %d step %d loss %s\n"
                         % (rank, step, float(loss.item()).hex()))
        sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], int(sys.argv[2]), sys.argv[3]),
             nprocs=WORLD_SIZE)
