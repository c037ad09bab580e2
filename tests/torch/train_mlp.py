# A small CPU bf16 autocast MLP training loop, unmodified PyTorch: what
# `amptrace run -- python3 train_mlp.py` must record end to end.
import torch

torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, width)
        self.fc2 = torch.nn.Linear(width, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = MLP()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    x, target = torch.randn(4, 8), torch.randint(0, 4, (4,))
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    optimizer.step()
print("loss %.4f" % loss.item())
