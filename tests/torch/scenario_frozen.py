# Regions under no_grad inside training loops (FORMAT.md §8): a region
# whose results feed the step's training is part of it, one whose
# results go only to metrics is an evaluation window.
# `python3 scenario_frozen.py MODE` trains 6 optimizer steps and prints
# "steps N windows W": the steps and the evaluation windows it ran.
#   backbone  a frozen feature extractor under no_grad (outside
#             autocast), its features fed to the trained head
#   noopt     the backbone's loop with the head updated by hand (no
#             optimizer: autocast regions end the steps, the head's
#             region ending one before it reads the features), and
#             one evaluation after the third step's update
#   teacher   distillation: a teacher's logits under no_grad fed to the
#             student's KL loss
#   evalloop  every 2 steps an evaluation of 3 batches, each a region
#             under no_grad, without model.eval(), its accuracy read
#             with grad on (metrics, not training)
#   fork      the evalloop's loop, a child forked after each evaluation
#             (before the step ends), which exits as a program does
#   forkeval  the fork loop's evaluation inside model.eval() .. train(),
#             the child forked while that window is open
#   forklock  the fork loop with another thread inside the bridge's
#             steps lock at each fork (the lock _steps takes at exit):
#             a child that does not end in 30 s is killed, and the
#             scenario says "child hung"
#   single    before each training step one batch evaluated under
#             inference_mode, its loss read
import os
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
MODE = sys.argv[1]
BF16 = dict(device_type="cpu", dtype=torch.bfloat16)
STEPS = 6


def mlp(width_out):
    return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, width_out))


def batch():
    return torch.randn(8, 16), torch.randint(0, 4, (8,))


def train_step(model, opt, x, y):
    with torch.autocast(**BF16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()


def backbone():
    features = mlp(16).requires_grad_(False)
    head = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = batch()
        with torch.no_grad():
            with torch.autocast(**BF16):
                feats = features(x)
        train_step(head, opt, feats, y)
    return 0


def noopt():
    features = mlp(16).requires_grad_(False)
    head = torch.nn.Linear(16, 4)
    for it in range(STEPS):
        x, y = batch()
        with torch.no_grad():
            with torch.autocast(**BF16):
                feats = features(x)
        with torch.autocast(**BF16):
            loss = F.cross_entropy(head(feats), y)
        loss.backward()
        with torch.no_grad():
            for p in head.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        if it == 2:
            with torch.no_grad(), torch.autocast(**BF16):
                F.cross_entropy(head(features(x)), y).item()
    return 1


def teacher():
    big, student = mlp(4), mlp(4)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, _ = batch()
        with torch.no_grad(), torch.autocast(**BF16):
            logits = big(x)
        with torch.autocast(**BF16):
            out = student(x)
        loss = F.kl_div(F.log_softmax(out.float() / 2, -1),
                        F.softmax(logits.float() / 2, -1),
                        reduction="batchmean")
        loss.backward()
        opt.step()
        opt.zero_grad()
    return 0


def evalloop():
    model = mlp(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    windows = 0
    for it in range(STEPS):
        if it % 2 == 0:
            correct = 0
            for _ in range(3):
                x, y = batch()
                with torch.no_grad(), torch.autocast(**BF16):
                    out = model(x)
                correct += (out.argmax(-1) == y).sum().item()
                windows += 1
        train_step(model, opt, *batch())
    return windows


def forked_child():
    """A child that exits as a program does (its atexit handlers run)."""
    child = os.fork()
    if child == 0:
        sys.exit(0)
    return child


def fork(in_eval_mode=False):
    """`in_eval_mode`: forked inside model.eval() .. train() (forkeval)."""
    model = mlp(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = batch()
        if in_eval_mode:
            model.eval()
        with torch.no_grad(), torch.autocast(**BF16):
            model(x).argmax(-1)
        os.waitpid(forked_child(), 0)
        if in_eval_mode:
            model.train()
        train_step(model, opt, *batch())
    return STEPS


def forklock():
    import threading
    from amptrace_torch import _steps   # the bridge amptrace run gave it
    model = mlp(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = batch()
        with torch.no_grad(), torch.autocast(**BF16):
            model(x).argmax(-1)
        held, forked = threading.Event(), threading.Event()

        def hold():
            with _steps._state.lock:
                held.set()
                forked.wait()

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        child = forked_child()
        forked.set()
        holder.join()
        if not ended_within(child, 30):
            print("child hung")
            return -1
        train_step(model, opt, *batch())
    return STEPS


def ended_within(child, seconds):
    import time
    for _ in range(int(seconds * 10)):
        if os.waitpid(child, os.WNOHANG)[0]:
            return True
        time.sleep(0.1)
    os.kill(child, 9)
    os.waitpid(child, 0)
    return False


def single():
    model = mlp(4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = batch()
        with torch.inference_mode(), torch.autocast(**BF16):
            loss = F.cross_entropy(model(x), y)
        loss.item()
        train_step(model, opt, *batch())
    return STEPS


windows = {"backbone": backbone, "noopt": noopt, "teacher": teacher,
           "evalloop": evalloop, "fork": fork, "forkeval": lambda: fork(True),
           "forklock": forklock, "single": single}[MODE]()
print("steps %d windows %d" % (STEPS, windows))
