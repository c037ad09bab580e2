"""amptrace in a notebook: a trace shows itself as HTML (its findings, its
summary and its computation graph, inline), and `%load_ext amptrace_torch`
adds the `%%amptrace` cell magic, which records the cell it heads.

The page is made by the commands themselves (`amptrace summary --json`
and its table, `ampview`'s SVG), so a notebook shows what the terminal
would: nothing is computed twice.
"""
import html
import os
import shlex
import subprocess

# A graph bigger than this is linked, not inlined: a notebook keeps every
# output in its file, and a browser slows down on huge inline SVGs.
INLINE_SVG_LIMIT = 4 << 20

_SEVERITY_COLOURS = {"error": "#b00020", "warning": "#b26a00",
                     "info": "#1f5fa8"}


def _run(command):
    """(exit status, stdout, stderr) of a command of amptrace's."""
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          errors="replace")
    return done.returncode, done.stdout, done.stderr


def _ampview(amptrace):
    """ampview beside amptrace (both come in one install; in the build
    tree, build/viewer beside build/tracer), else on PATH."""
    import shutil
    here = os.path.dirname(amptrace)
    for candidate in (os.path.join(here, "ampview"),
                      os.path.join(here, "..", "viewer", "ampview")):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which("ampview")


def _findings_html(findings):
    if not findings:
        return "<p><b>No findings.</b></p>"
    rows = []
    for f in findings:
        colour = _SEVERITY_COLOURS.get(f.get("severity"), "inherit")
        count = f.get("count", 1)
        rows.append(
            "<tr><td style='color:%s;font-weight:bold'>%s</td>"
            "<td><code>%s</code>%s</td><td style='text-align:left'>%s</td>"
            "<td style='text-align:left'>%s</td></tr>"
            % (colour, html.escape(f.get("severity", "")),
               html.escape(f.get("kind", "")),
               " &times;%d" % count if count and count > 1 else "",
               html.escape(f.get("message", "")),
               html.escape(f.get("fix", ""))))
    return ("<table><thead><tr><th>severity</th><th>finding</th>"
            "<th style='text-align:left'>message</th>"
            "<th style='text-align:left'>fix</th></tr></thead><tbody>%s"
            "</tbody></table>" % "".join(rows))


def _svg_html(svg_path):
    """The graph inline: the SVG element alone (no XML prolog), in a box
    that scrolls; a link when it is too big to inline."""
    size = os.path.getsize(svg_path)
    if size > INLINE_SVG_LIMIT:
        return ("<p>The graph is %.1f MB, too big to show inline: "
                "<a href='%s'>%s</a></p>"
                % (size / 1e6, html.escape(svg_path), html.escape(svg_path)))
    with open(svg_path, encoding="utf-8", errors="replace") as f:
        svg = f.read()
    start = svg.find("<svg")
    return ("<div style='max-height:720px;overflow:auto;border:1px solid "
            "#ccc'>%s</div>" % svg[start if start >= 0 else 0:])


def page(path, amptrace, graph=True):
    """The HTML a notebook shows for the trace file `path`."""
    import json
    title = "<h4>amptrace: %s</h4>" % html.escape(path)
    if not os.path.isfile(path):
        return title + "<p>No trace yet: the block has not ended.</p>"
    status, out, err = _run([amptrace, "summary", "--json", path])
    if status != 0:
        return title + "<pre>%s</pre>" % html.escape(err.strip())
    summary = json.loads(out)
    status, table, err = _run([amptrace, "summary", "--color=never", path])
    parts = [title,
             "<p>%s &middot; %d events &middot; %s steps</p>"
             % (html.escape(summary.get("framework") or "libamp"),
                summary.get("events", 0),
                summary.get("steps", {}).get("count", 0)),
             "<h5>Findings</h5>", _findings_html(summary.get("findings"))]
    if graph:
        parts.append(_graph_html(path, amptrace))
    parts.append("<details open><summary><b>Summary</b> "
                 "(<code>amptrace summary</code>)</summary><pre>%s</pre>"
                 "</details>" % html.escape(table or err))
    return "\n".join(parts)


def _graph_html(path, amptrace):
    ampview = _ampview(amptrace)
    if not ampview:
        return "<p>No graph: ampview was not found.</p>"
    svg_path = os.path.splitext(path)[0] + ".svg"
    status, _, err = _run([ampview, path, "-o", svg_path])
    if status != 0:
        return "<p>No graph: <code>%s</code></p>" % html.escape(err.strip())
    return ("<details open><summary><b>Graph</b> (<code>ampview</code>: "
            "%s)</summary>%s</details>"
            % (html.escape(svg_path), _svg_html(svg_path)))


class _CellOptions:
    """`%%amptrace [-o FILE] [--no-graph]`: where the trace goes, and
    whether to draw the graph."""

    usage = "usage: %%amptrace [-o TRACE.json] [--no-graph]"

    def __init__(self, line):
        self.output = "trace.json"
        self.graph = True
        words = shlex.split(line)
        while words:
            word = words.pop(0)
            if word in ("-o", "--output") and words:
                self.output = words.pop(0)
            elif word.startswith("--output="):
                self.output = word[len("--output="):]
            elif word == "--no-graph":
                self.graph = False
            else:
                raise ValueError("%%%%amptrace: unknown option %r\n%s"
                                 % (word, self.usage))


def _cell_number(ipython):
    """The number IPython gave the cell running now: its execution
    result's (IPython 9 counts on to the next cell as this one starts,
    earlier ones once it has ended)."""
    running = getattr(ipython.displayhook, "exec_result", None)
    number = getattr(running, "execution_count", None)
    return number if number is not None else ipython.execution_count


def _cache(ipython, source, raw):
    """The name IPython gives the cell's code, its source kept for
    tracebacks (IPython before 8 takes no raw_code)."""
    number = _cell_number(ipython)
    try:
        return ipython.compile.cache(source, number, raw_code=raw)
    except TypeError:
        return ipython.compile.cache(source, number)


def _run_body(ipython, line, cell):
    """Runs the body of a `%%amptrace` cell as IPython runs a cell: its
    IPython syntax (`%time` lines, `!ls`, `x = !cmd`) made Python as
    IPython makes a cell's, and compiled under a name IPython knows as
    this cell's, so that an error shows its line and source ("Cell In[4],
    line 3"), and the regions it opens are named by the cell ("In[4]:3");
    not as a "<string>" whose source no traceback can show.  Its lines
    are numbered as the cell shows them: the %%amptrace line first, as a
    comment."""
    __tracebackhide__ = True
    head = "# %%%%amptrace %s\n" % line
    source = head + ipython.transform_cell(cell)
    code = ipython.compile(source, _cache(ipython, source, head + cell),
                           "exec")
    exec(code, ipython.user_global_ns, ipython.user_ns)


def load_ipython_extension(ipython):
    """`%load_ext amptrace_torch`: registers the %%amptrace cell magic."""
    from . import trace

    def amptrace(line, cell):
        __tracebackhide__ = True  # an error is the cell's, not the magic's
        options = _CellOptions(line)
        recording = trace(options.output, graph=options.graph)
        with recording:
            _run_body(ipython, line, cell)
        return recording

    amptrace.__doc__ = ("Records the cell's torch work into a trace and "
                        "shows its findings, summary and graph.\n"
                        + _CellOptions.usage)
    ipython.register_magic_function(amptrace, magic_kind="cell",
                                    magic_name="amptrace")
