# A CUDA f16 training loop with a real GradScaler on a small transformer
# built from a config (no downloads), unmodified PyTorch: what
# `amptrace run -- python3 gpu_train.py` must record on a GPU, kernels
# linked to the ops that launched them.  Prints, per model, the median ms
# per step (after warm-up), so the cost of tracing can be read off two runs.
#
# usage: gpu_train.py [--model torch|hf|llama[,...]] [--steps N] [--batch B]
#                     [--seq S] [--width W] [--layers L] [--profile]
# Models: torch (GPT-style, torch.nn only), hf (transformers' GPT-2), llama
# (transformers' Llama); several, comma-separated, train one after the
# other in one process.
# --profile: each loop runs under torch.profiler (CPU and CUDA activities,
# shapes recorded), for comparison; "whole" then includes its exit.
import argparse
import statistics
import sys
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="torch")
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--seq", type=int, default=64)
parser.add_argument("--width", type=int, default=128)
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--profile", action="store_true")
args = parser.parse_args()

if not torch.cuda.is_available():
    print("no CUDA device", file=sys.stderr)
    sys.exit(77)

torch.manual_seed(0)
VOCAB = 512
config = dict(vocab=VOCAB, width=args.width, heads=4, layers=args.layers,
              seq=args.seq)


class GPT(torch.nn.Module):
    """Token and position embeddings, pre-norm encoder layers with a
    causal mask, a tied output head."""

    def __init__(self, c):
        super().__init__()
        self.tokens = torch.nn.Embedding(c["vocab"], c["width"])
        self.positions = torch.nn.Embedding(c["seq"], c["width"])
        layer = torch.nn.TransformerEncoderLayer(
            c["width"], c["heads"], 4 * c["width"], dropout=0.0,
            batch_first=True, norm_first=True, activation="gelu")
        self.blocks = torch.nn.TransformerEncoder(layer, c["layers"],
                                                  enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(c["width"])
        self.mask = torch.nn.Transformer.generate_square_subsequent_mask(c["seq"])

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(pos)
        x = self.blocks(x, mask=self.mask.to(ids.device))
        return self.norm(x) @ self.tokens.weight.t()


def build(name):
    if name == "hf":
        import transformers
        cfg = transformers.GPT2Config(vocab_size=VOCAB, n_positions=args.seq,
                                      n_embd=args.width, n_layer=args.layers,
                                      n_head=4)
        model = transformers.GPT2LMHeadModel(cfg)
        return model, lambda ids: model(ids).logits
    if name == "llama":
        import transformers
        cfg = transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=args.width,
            intermediate_size=4 * args.width, num_hidden_layers=args.layers,
            num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=args.seq)
        model = transformers.LlamaForCausalLM(cfg)
        return model, lambda ids: model(ids).logits
    if name != "torch":
        sys.exit("gpu_train.py: unknown model %r (torch, hf, llama)" % name)
    model = GPT(config)
    return model, model


def train(name):
    torch.manual_seed(0)
    model, forward = build(name)
    model = model.cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = (torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler")
              else torch.cuda.amp.GradScaler())
    times = []
    profiler = None
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU,
                                       ProfilerActivity.CUDA],
                           record_shapes=True)
        profiler.__enter__()
    for step in range(args.steps):
        ids = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device="cuda")
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = forward(ids[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, VOCAB).float(), ids[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    exit_s = 0.0
    if profiler:
        start = time.perf_counter()
        profiler.__exit__(None, None, None)
        profiler.key_averages()
        exit_s = time.perf_counter() - start
    warm = times[2:] or times
    print("model %s steps %d loss %.4f scale %g ms/step %.3f whole %.3f" % (
        name, args.steps, loss.item(), scaler.get_scale(),
        1000 * statistics.median(warm),
        1000 * (sum(times) + exit_s) / len(times)), flush=True)


for name in args.model.split(","):
    train(name)
