#!/usr/bin/env python3
"""Writes a hand-made torch-style trace whose ops name their nn.Module,
for ampview's module views (tests/test_viewer_modules.sh): a model of
BLOCKS blocks, each blocks.N.fc1 (linear, its weight cast f32->bf16) ->
blocks.N.act (relu) -> blocks.N.fc2 (linear) -> blocks.N (residual add),
then head (linear).  With --error, blocks.2.fc2's linear failed (an
op-error finding).  With --flat, a Sequential instead: modules 0, 1, 2,
... alternately Linear and ReLU, BLOCKS of each.  With --functional, a
ModuleList's layers.0 ... (Linear), a relu of the model itself ("", Net)
after each, as `torch.relu(layer(x))` in its forward.  With --prefix=PATH,
every module sits inside PATH (a deep model's long paths).  With
--backward, every op is a backward one (no forward pass).  No torch
needed.

    viewer_module_trace.py OUT.json BLOCKS [--error] [--flat] [--functional]
                           [--prefix=PATH] [--backward]
"""
import json
import sys

PID, TID = 100, 1


def main():
    out, blocks = sys.argv[1], int(sys.argv[2])
    error = "--error" in sys.argv[3:]
    flat = "--flat" in sys.argv[3:]
    functional = "--functional" in sys.argv[3:]
    phase = "backward" if "--backward" in sys.argv[3:] else "forward"
    prefix = ""
    for arg in sys.argv[3:]:
        if arg.startswith("--prefix="):
            prefix = arg[len("--prefix="):] + "."
    events = [{"name": "process_name", "ph": "M", "pid": PID, "tid": 0,
               "args": {"name": "python3", "argv": ["python3", "model.py"],
                        "framework": "torch 2.13.0 (policy table: 2.13)"}}]
    state = {"ts": 1000.0, "op": 0, "tensor": 1}
    region = "model.py:10"

    def tensor(dtype, shape=(4, 8)):
        state["tensor"] += 1
        return {"tensor": state["tensor"], "dtype": dtype, "shape": list(shape)}

    def op(name, module, cls, inputs, out_dtype, policy="none", fail=False):
        module = prefix + module
        state["op"] += 1
        state["ts"] += 10
        output = tensor(out_dtype)
        args = {"op_id": state["op"], "op": name, "overload": "",
                "phase": phase, "policy": policy, "device": "cpu",
                "emulated": False,
                "autocast": {"enabled": True, "device": "cpu", "dtype": "bf16",
                             "cache_enabled": True, "depth": 1,
                             "scope": region},
                "module": module, "module_class": cls,
                "inputs": inputs, "outputs": [output],
                "Input type": ["float"] * len(inputs),
                "Input Dims": [t["shape"] for t in inputs],
                "External id": state["op"]}
        if fail:
            args["error"] = "RuntimeError: made up for the test"
        events.append({"name": name, "cat": "amp.op", "ph": "X",
                       "ts": state["ts"], "pid": PID, "tid": TID, "dur": 5.0,
                       "args": args})
        return output

    def linear(module, x):
        state["ts"] += 1
        weight = {"tensor": 1000 + state["op"], "dtype": "f32",
                  "shape": [8, 8], "leaf": True}
        cast = tensor("bf16", (8, 8))
        events.append({"name": "cast f32->bf16", "cat": "amp.cast", "ph": "X",
                       "ts": state["ts"], "pid": PID, "tid": TID, "dur": 1.0,
                       "args": {"op_id": state["op"] + 1, "op": "linear",
                                "phase": phase, "scope": region,
                                "module": prefix + module,
                                "module_class": "Linear",
                                "arg": 1, "tensor": weight["tensor"],
                                "result": cast["tensor"], "from": "f32",
                                "to": "bf16", "cache": "miss",
                                "reason": "leaf f32 weight requiring grad",
                                "bytes": 128,
                                "name": prefix + module + ".weight",
                                "shape": [8, 8], "leaf": True}})
        return op("linear", module, "Linear", [x, cast], "bf16",
                  "lower_precision_fp", error and module == "blocks.2.fc2")

    events.append({"name": region, "cat": "amp.scope", "ph": "B",
                   "ts": state["ts"], "pid": PID, "tid": TID,
                   "args": {"scope": region, "depth": 1, "device": "cpu",
                            "dtype": "bf16", "enabled": True,
                            "cache_enabled": True}})
    x = tensor("f32")
    for n in range(blocks if flat else 0):
        x = linear(str(2 * n), x)
        x = op("relu", str(2 * n + 1), "ReLU", [x], "bf16")
    for n in range(blocks if functional else 0):
        x = linear("layers.%d" % n, x)
        x = op("relu", "", "Net", [x], "bf16")
    for n in range(0 if flat or functional else blocks):
        block = "blocks.%d" % n
        h = linear(block + ".fc1", x)
        h = op("relu", block + ".act", "ReLU", [h], "bf16")
        h = linear(block + ".fc2", h)
        x = op("add", block, "Block", [x, h], "f32", "promote")
    linear(str(2 * blocks) if flat else "head", x)
    state["ts"] += 10
    events.append({"name": region, "cat": "amp.scope", "ph": "E",
                   "ts": state["ts"], "pid": PID, "tid": TID,
                   "args": {"depth": 1}})
    trace = {"displayTimeUnit": "ms", "schemaVersion": 1,
             "amptrace": {"format": "1.4", "generator": "viewer_module_trace.py",
                          "command": ["python3", "model.py"]},
             "traceEvents": events,
             "amptraceEnd": {"complete": True, "events": len(events)}}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(trace, f)


if __name__ == "__main__":
    main()
