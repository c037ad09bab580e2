# timm's --torchscript shape: a small ResNet scripted whole, trained under
# eager autocast; the same model eagerly (PYTORCH_JIT=0 gives eager).
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        shortcut = x
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        x += shortcut
        return F.relu(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.block = BasicBlock(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.stem(x))))
        x = self.block(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


model = Net()
if "eager" not in sys.argv:
    model = torch.jit.script(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,))
for _ in range(3):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
print("loss %.8f" % loss.item())
