"""Trains one zoo model a few steps and prints its losses, exactly
(`loss <float.hex>` a line).  With --log PATH it then trains the same
model again, from the same seeds, under the independent dtype logger
(dtype_log.py) and writes the logger's account to PATH.

usage: zoo_run.py MODEL STEPS [--log PATH]
"""
import json
import sys

from zoo_models import MODELS

name, steps = sys.argv[1], int(sys.argv[2])
for loss in MODELS[name](steps):
    print("loss", float(loss).hex())
if "--log" in sys.argv:
    from dtype_log import DtypeLog
    with DtypeLog() as log:
        MODELS[name](steps)
    with open(sys.argv[sys.argv.index("--log") + 1], "w") as f:
        json.dump(log.summary(), f, indent=1, sort_keys=True)
