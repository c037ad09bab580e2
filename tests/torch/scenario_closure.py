# An optimizer step with a closure, as Lightning and LBFGS run one: the
# forward and backward passes happen inside optimizer.step().
import torch

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def closure():
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        loss = model(torch.randn(2, 4)).float().sum()
    loss.backward()
    return loss


for _ in range(2):
    optimizer.step(closure)
print("ok")
