"""FSDP imported before the bridge: fully_shard by a name the program
took before amptrace_torch.trace() installed the bridge (one process,
gloo), its bf16 policy set inside the block.

usage: scenario_api_fsdp.py TRACE STORE"""
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import amptrace_torch

dist.init_process_group("gloo", rank=0, world_size=1,
                        init_method="file://" + sys.argv[2])
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
with amptrace_torch.trace(sys.argv[1]):
    fully_shard(net, mp_policy=MixedPrecisionPolicy(
        param_dtype=torch.bfloat16))
    print(net(torch.randn(2, 8)).dtype)
dist.destroy_process_group()
