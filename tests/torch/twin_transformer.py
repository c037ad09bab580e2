# PyTorch twin of samples/transformer.c: one attention block (embedding,
# layer_norm, softmax attention, GELU MLP) applied --layers times with
# the same weights, so the weight-cast cache hits; tied output head,
# cross entropy, AdamW with the GradScaler.  usage: twin_transformer.py [STEPS]
import math
import sys

import torch
import torch.nn.functional as F
from twin_common import scaler, train_step

VOCAB, D, SEQ, BATCH, LAYERS = 16, 32, 8, 16, 2
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
torch.manual_seed(11)


def param(*shape, fill=None):
    t = torch.empty(*shape)
    if fill is None:
        torch.nn.init.uniform_(t, -1 / math.sqrt(D), 1 / math.sqrt(D))
    else:
        t.fill_(fill)
    return torch.nn.Parameter(t)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = param(VOCAB, D)
        self.position = param(SEQ, D)
        self.ln1_w, self.ln1_b = param(D, fill=1.0), param(D, fill=0.0)
        self.wq, self.wk, self.wv, self.wo = (param(D, D) for _ in range(4))
        self.ln2_w, self.ln2_b = param(D, fill=1.0), param(D, fill=0.0)
        self.w1, self.b1 = param(4 * D, D), param(4 * D)
        self.w2, self.b2 = param(D, 4 * D), param(D)
        self.lnf_w, self.lnf_b = param(D, fill=1.0), param(D, fill=0.0)

    def attention(self, a):
        q, k, v = F.linear(a, self.wq), F.linear(a, self.wk), F.linear(a, self.wv)
        scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(D))
        return F.linear(torch.bmm(torch.softmax(scores, -1), v), self.wo)

    def forward(self, tokens):
        x = F.embedding(tokens, self.embedding) + self.position
        for _ in range(LAYERS):
            x = x + self.attention(F.layer_norm(x, (D,), self.ln1_w, self.ln1_b))
            n = F.layer_norm(x, (D,), self.ln2_w, self.ln2_b)
            x = x + F.linear(F.gelu(F.linear(n, self.w1, self.b1)), self.w2, self.b2)
        n = F.layer_norm(x, (D,), self.lnf_w, self.lnf_b)
        return F.linear(n, self.embedding).reshape(BATCH * SEQ, VOCAB)


model = Model()
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
grad_scaler = scaler()
for step in range(1, steps + 1):
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    targets = torch.cat([tokens[:, :1], tokens[:, :-1]], 1).reshape(-1)
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        logits = model(tokens)
        loss = F.cross_entropy(logits, targets)
    if step == 1:
        print("logits %s, loss %s" % (logits.dtype, loss.dtype))
    train_step(loss, optimizer, grad_scaler)
    print("step %d loss %.4f" % (step, loss.item()))
