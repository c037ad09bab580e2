"""Lightning's DDP on the CPU: Trainer(strategy="ddp", devices=2).  The
launching process is rank 0 and starts rank 1 itself, running this script
again with LOCAL_RANK, NODE_RANK and WORLD_SIZE but no RANK; both make
the model before Lightning calls init_process_group.  Each rank prints
`rank R step S loss <hex>`.

usage: scenario_lightning_ddp.py STEPS ROOT
  ROOT: Lightning's default_root_dir (the caller removes it)
"""
import sys

import torch
import lightning as L


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16),
                                       torch.nn.ReLU(), torch.nn.Linear(16, 4))

    def training_step(self, batch, index):
        loss = self.net(batch).float().pow(2).mean()
        sys.stdout.write("rank %d step %d loss %s\n"
                         % (self.global_rank, index, float(loss.item()).hex()))
        sys.stdout.flush()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    steps, root = int(sys.argv[1]), sys.argv[2]
    data = torch.randn(2 * steps, 8, generator=torch.Generator().manual_seed(0))
    trainer = L.Trainer(strategy="ddp", accelerator="cpu", devices=2,
                        max_steps=steps, precision="bf16-mixed", logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False,
                        default_root_dir=root)
    trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=None))
