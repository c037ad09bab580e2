"""A small f16 training run whose GradScaler scale collapses, for the
README's "Why did my loss scale collapse?": the input features are raw
counts (0 to 60000) that nobody normalized.  In f32 the model trains; in
f16 the first layer's outputs pass 65504, so every step holds inf, every
step is skipped, and the scale halves until it collapses.  --normalize
scales the features to [0, 1), the fix.  Needs torch 2.x (f16 autocast
and GradScaler on the CPU)."""
import argparse
from collections import OrderedDict

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--normalize", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(OrderedDict(
        encoder=torch.nn.Linear(64, 128), norm=torch.nn.LayerNorm(128),
        act=torch.nn.ReLU(), head=torch.nn.Linear(128, 1)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(args.steps):
        counts = torch.randint(0, 60000, (32, 64)).float()
        features = counts / 60000 if args.normalize else counts
        target = (features[:, :1] > features[:, 1:2]).float()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(features).float(),
                                                target)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step} loss {loss.item():.4g} scale {scaler.get_scale():g}")


if __name__ == "__main__":
    main()
