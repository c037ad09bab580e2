# The three dtype errors of PyTorch programs, each ending the program (the
# bridge then has torch's text), and each with its fix (argv[1] ends in
# "-fixed": the program runs through):
#   outside     a bf16 activation from an autocast region meets an f32
#               Linear outside it: "mat1 and mat2 must have the same dtype"
#   half-model  model.half() meets an f32 input: "expected scalar type
#               Float but found Half"
#   explicit    the program's .to(torch.bfloat16) meets an f32 conv:
#               "Input type (...) and weight type (...) should be the same"
#   uncovered   under autocast, torch.mv (on no CPU autocast list) gets a
#               bf16 matrix and an f32 vector
import sys
import torch

torch.manual_seed(0)
mode = sys.argv[1]
fixed = mode.endswith("-fixed")
mode = mode.replace("-fixed", "")
if mode == "outside":
    encoder, head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = encoder(torch.randn(2, 8))
    if fixed:
        h = h.float()
    print(head(h).shape)
elif mode == "half-model":
    conv = torch.nn.Conv2d(3, 4, 3, bias=False)
    if not fixed:
        conv.half()
    print(conv(torch.randn(1, 3, 8, 8)).shape)
elif mode == "explicit":
    conv = torch.nn.Conv2d(3, 4, 3, bias=False)
    x = torch.randn(1, 3, 8, 8)
    if not fixed:
        x = x.to(torch.bfloat16)
    print(conv(x).shape)
elif mode == "uncovered":
    proj = torch.nn.Linear(8, 8)
    v = torch.randn(8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        m = proj(torch.randn(3, 8))
        print(torch.mv(m.float() if fixed else m, v).shape)
