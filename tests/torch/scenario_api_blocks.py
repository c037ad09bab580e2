# Two trace() blocks around one DataLoader: its workers, forked in the
# first, still run in the second when persistent ("persistent"), or are
# forked anew in each epoch ("fresh").  argv: first.json second.json MODE
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
                        persistent_workers=sys.argv[3] == "persistent")
    for path in sys.argv[1:3]:
        with amptrace_torch.trace(path):
            for batch in loader:
                with torch.autocast("cpu", torch.bfloat16):
                    layer(batch)
    print("done")
