"""Two training steps of a real model under CPU bf16 autocast, for
ampview's default-graph test (tests/test_viewer_models.sh): a 12-layer
GPT-2 (transformers) or a ResNet-50 (timm), tiny sizes, random weights.

    view_models.py gpt2|resnet50
"""
import sys

import torch


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=128, n_positions=32, n_embd=32, n_layer=12, n_head=2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    return model, lambda: model(input_ids=ids, labels=ids).loss


def resnet50():
    import timm
    torch.manual_seed(0)
    model = timm.create_model("resnet50", num_classes=10)
    images = torch.randn(1, 3, 64, 64)
    labels = torch.tensor([3])
    return model, lambda: torch.nn.functional.cross_entropy(model(images), labels)


def main():
    model, loss_of = {"gpt2": gpt2, "resnet50": resnet50}[sys.argv[1]]()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_of()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
