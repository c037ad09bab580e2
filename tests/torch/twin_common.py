"""What the PyTorch twins of samples/ share: the samples' MLP (linear
layers of width `hidden` with ReLU between, 10 classes), SGD with
momentum and 1.13's GradScaler (which disables itself without CUDA)."""
import warnings

import torch

CLASSES = 10


def mlp(hidden, layers):
    modules = []
    for i in range(layers):
        modules.append(torch.nn.Linear(
            hidden, CLASSES if i == layers - 1 else hidden))
        if i + 1 < layers:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules)


def sgd(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def scaler():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.cuda.amp.GradScaler()


def batch(size, hidden):
    return torch.randn(size, hidden), torch.randint(0, CLASSES, (size,))


def train_step(loss, optimizer, grad_scaler):
    grad_scaler.scale(loss).backward()
    grad_scaler.step(optimizer)
    grad_scaler.update()
