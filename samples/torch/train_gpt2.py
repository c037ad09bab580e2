# A small GPT-2 training loop, as a PyTorch user writes it: transformers'
# GPT2LMHeadModel built from a config (random weights, no download),
# random token batches, CPU bf16 autocast, AdamW.  `./run demo` traces it:
#   amptrace run -o gpt2.json -- python samples/torch/train_gpt2.py
# usage: train_gpt2.py [STEPS]
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
torch.manual_seed(0)
config = GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2,
                    n_head=4)
model = GPT2LMHeadModel(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(steps):
    tokens = torch.randint(0, config.vocab_size, (8, 32))
    with torch.autocast("cpu", torch.bfloat16):
        loss = model(tokens, labels=tokens).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print("step %d loss %.4f" % (step, loss.item()))
