"""Where a line of the program is, as the trace names it: "train.py:23".

A notebook cell has no file of its own: IPython compiles it under a name
it makes up (ipykernel: "/tmp/ipykernel_4242/2837465551.py"; a terminal
IPython: "<ipython-input-3-5f2a...>"), which says nothing to the user.
Such a line is named as IPython's own tracebacks name it, by the cell's
execution count: "In[3]:2".
"""
import os
import sys


def place(filename, line):
    """"file.py:LINE", or "In[N]:LINE" for a line of notebook cell N."""
    return "%s:%s" % (_cell(filename) or os.path.basename(filename), line)


def _cell(filename):
    """"In[N]" when IPython compiled cell N under `filename`, else None.
    Only asked when IPython is loaded already: a script pays nothing."""
    ipython_module = sys.modules.get("IPython")
    get_ipython = getattr(ipython_module, "get_ipython", None)
    shell = get_ipython() if get_ipython else None
    format_code_name = getattr(getattr(shell, "compile", None),
                               "format_code_name", None)
    if format_code_name is None:
        return None
    try:
        named = format_code_name(filename)
    except Exception:  # an IPython of another shape: the file's name
        return None
    return named[1] if named else None
