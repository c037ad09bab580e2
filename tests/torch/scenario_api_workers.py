# The Python API around a DataLoader whose workers outlive the block
# (persistent_workers): forked inside it, they must not hold its end.
import sys
import torch
import amptrace_torch
from torch.utils.data import DataLoader


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.full((8,), float(i))


if __name__ == "__main__":
    layer = torch.nn.Linear(8, 8)
    loader = DataLoader(Numbers(), batch_size=4, num_workers=2,
                        persistent_workers=True)
    with amptrace_torch.trace(sys.argv[1]):
        for batch in loader:
            with torch.autocast("cpu", torch.bfloat16):
                layer(batch)
    print("done")
