# Two trace() blocks around one DataLoader: its workers, forked in the
# first, still run in the second when persistent ("persistent"), or are
# forked anew in each epoch ("fresh").  argv: first.json second.json MODE
import sys
import torch
import amptrace_torch
from torch.utils.data import DataLoader

from scenario_api_workers import Numbers  # the same 8 small batches


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
