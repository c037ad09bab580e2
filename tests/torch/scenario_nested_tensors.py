# Tensors without plain sizes: nested (a list of differently shaped
# parts) and sparse, as an op's arguments and results, and the nested
# fast path of a TransformerEncoder (padding mask, eval, no_grad).
import warnings

import torch

# torch says nested tensors are a prototype, once per process: the same
# traced or not, but noise in the stderr the test compares
warnings.simplefilter("ignore", UserWarning)
nt = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(3, 4)])
y = torch.nn.functional.relu(nt * 2)
s = torch.randn(4, 4).to_sparse()
layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
encoder = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=True)
mask = torch.tensor([[False, False, True], [False, True, True]])
with torch.no_grad():
    out = encoder.eval()(torch.randn(2, 3, 8), src_key_padding_mask=mask)
print(y.is_nested, (s * 2).is_sparse, tuple(out.shape))
