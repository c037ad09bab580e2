"""Runs a notebook headlessly (nbclient, the environment's own kernel)
that uses amptrace as the README shows, and checks what it displays:
`%load_ext amptrace_torch` and a `%%amptrace` cell, then
`amptrace_torch.trace()` as a cell's value.  Each must show the findings,
the summary (its linear ops in bf16) and the graph inline (SVG), and
the cell's own output must pass through.  A region is named by its
cell, as IPython's tracebacks name it ("In[1]:7"), and a `%%amptrace`
cell that raises shows the cell's line and source in its traceback, and
still writes its trace.

usage: python notebook.py WORKDIR   (prints TAP lines: ok / not ok)
"""
import os
import re
import sys

import nbformat
from nbclient import NotebookClient

MODEL = """import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def step():
    with torch.autocast("cpu", torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(
            model(torch.randn(8, 16)), torch.randint(0, 4, (8,)))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()
"""

CELLS = [
    MODEL,
    "%load_ext amptrace_torch",
    "%%amptrace -o magic.json\nfor _ in range(2):\n    step()\n"
    "print('cell ran')",
    "import amptrace_torch\nwith amptrace_torch.trace('api.json') as t:\n"
    "    step()\nt",
    "%%amptrace -o raised.json --no-graph\n"
    "with torch.autocast('cpu', torch.bfloat16):\n"
    "    model(torch.randn(2, 16))\nraise ValueError('raised in the cell')",
    # IPython's own syntax in the body, as in any cell
    "%%amptrace -o magics.json --no-graph\n%time step()\n"
    "!echo shell ran\nlines = !echo captured\nprint(lines[0])\n"
    "with torch.autocast('cpu', torch.bfloat16):\n"
    "    model(torch.randn(2, 16))\n1 / 0",
]
RAISES = 4  # the index of the cell that raises
MAGICS = 5  # the index of the cell with magics (it raises on its line 8)


def traceback_of(cell):
    """The cell's error traceback, without its colours."""
    return "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", line)
                     for output in cell.outputs
                     if output.get("output_type") == "error"
                     for line in output.get("traceback", []))


def html_of(cell):
    for output in cell.outputs:
        data = output.get("data", {})
        if "text/html" in data:
            return data["text/html"]
    return ""


def stdout_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


def main():
    work = sys.argv[1]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.cells[RAISES].metadata["tags"] = ["raises-exception"]
    nb.cells[MAGICS].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": work}})
    client.execute()
    failed = 0

    def check(ok, what):
        nonlocal failed
        print("%s - %s" % ("ok" if ok else "not ok", what))
        failed += not ok

    for index, name in ((2, "%%amptrace cell"), (3, "trace() as a value")):
        page = html_of(nb.cells[index])
        check("Findings" in page, "%s: shows the findings" % name)
        check("lower_precision_fp" in page and "linear" in page,
              "%s: shows the summary (linear, lower_precision_fp)" % name)
        check("<svg" in page, "%s: shows the graph inline (SVG)" % name)
        if not page:
            print("# outputs: %r" % nb.cells[index].outputs)
    check("cell ran" in stdout_of(nb.cells[2]),
          "%%amptrace: the cell's own output passes through")
    check(os.path.isfile(os.path.join(work, "magic.json")),
          "%%amptrace -o: the trace is written where asked")
    # the model cell's region: `with torch.autocast` on its line 7
    check("step (In[1]:7)" in html_of(nb.cells[2]),
          "a region in a notebook cell is named by the cell (In[1]:7)")
    shown = traceback_of(nb.cells[RAISES])
    check("Cell In[5], line 4" in shown and
          "raise ValueError('raised in the cell')" in shown,
          "%%amptrace: an error shows the cell's line and source")
    if "Cell In[5], line 4" not in shown:
        print("# traceback: %r" % shown[-800:])
    raised = os.path.join(work, "raised.json")
    with open(raised) if os.path.isfile(raised) else open(os.devnull) as f:
        check('"scope":"In[5]:2"' in f.read(),
              "%%amptrace: a cell that raises writes its trace, its "
              "region named by the cell (In[5]:2)")
    out = stdout_of(nb.cells[MAGICS])
    check("Wall time" in out and "shell ran" in out and "captured" in out,
          "%%amptrace: a body's %magic, !shell and x = !cmd lines run")
    if "shell ran" not in out:
        print("# outputs: %r" % nb.cells[MAGICS].outputs)
    shown = traceback_of(nb.cells[MAGICS])
    check("Cell In[6], line 8" in shown and "1 / 0" in shown,
          "%%amptrace: after magic lines, an error's line is the cell's")
    if "Cell In[6], line 8" not in shown:
        print("# traceback: %r" % shown[-800:])
    magics = os.path.join(work, "magics.json")
    with open(magics) if os.path.isfile(magics) else open(os.devnull) as f:
        check('"scope":"In[6]:6"' in f.read(),
              "%%amptrace: with magic lines, the region named by its "
              "cell line (In[6]:6)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
