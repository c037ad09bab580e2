#!/usr/bin/env python3
"""Drives an `amptrace report` page in headless Chromium the way a user
does (clicks, typing, choosing a rank) and checks what the page does in
reply.  Chromium is controlled over its DevTools protocol through a pipe
(--remote-debugging-pipe: NUL-separated JSON on fds 3 and 4), so only the
standard library is needed.  Prints one "ok - ..." / "not ok - ..." line
per check; exit 1 when any failed.

    report_interact.py CHROMIUM PROFILE_DIR PAGE.html [MERGED.html [PARENT.html]]

PARENT.html: a merged trace's page with a process that trains not listed
first (add_process.py --first).
"""
import json
import os
import subprocess
import sys
import time


class Browser:
    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def pipe_fds():
            """In the child: Chromium reads commands on fd 3 and writes
            replies on fd 4 (copies first: the pipes may sit on 3 or 4)."""
            commands, replies = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--user-data-dir=" + profile,
             "--window-size=1400,1000", "--remote-debugging-pipe",
             "about:blank"],
            preexec_fn=pipe_fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buffer = b""
        self.console = []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")
        self.session = self.call("Target.attachToTarget", flatten=True,
                                 targetId=target["targetId"])["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")

    def _read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def _note(self, message):
        """Console messages and uncaught exceptions, whatever their level."""
        method = message.get("method")
        if method == "Runtime.consoleAPICalled":
            args = message["params"]["args"]
            self.console.append(" ".join(str(a.get("value", a.get("description")))
                                         for a in args))
        elif method == "Runtime.exceptionThrown":
            details = message["params"]["exceptionDetails"]
            self.console.append(details.get("exception", {}).get(
                "description", details.get("text")))

    def call(self, method, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            self._note(reply)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, page):
        url = "file://" + os.path.abspath(page)
        self.call("Page.navigate", url=url)
        deadline = time.time() + 60
        ready = f"document.URL === {json.dumps(url)} && document.body && document.body.dataset.ready"
        while time.time() < deadline:
            if self.evaluate(ready) == "1":
                return
            time.sleep(0.1)
        raise RuntimeError(f"{page}: the page never said it was ready")

    def close(self):
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        self.proc.wait(timeout=30)


failed = False


def check(what, ok, detail=""):
    global failed
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failed = True
        if detail:
            print("# " + str(detail))


# Clicks the first finding's link that says `text`.
CLICK = """(() => {
  const link = [...document.querySelectorAll('#r-finding-list a')]
    .find((a) => a.textContent.includes(%s));
  if (!link) return false;
  link.click();
  return true;
})()"""


def interact(browser, page):
    browser.open(page)
    name = os.path.basename(page)
    data = browser.evaluate("JSON.parse(document.getElementById('r-data').textContent)")
    group = next(f["group"] for f in data["findings"] if f["group"])
    clicked = browser.evaluate(CLICK % json.dumps("the op in the table"))
    target = browser.evaluate("[...document.querySelectorAll('tr.r-target')].map((r) => r.id)")
    check(f"{name}: a finding's table link marks its op's row", clicked and target == [group],
          f"clicked {clicked}, marked {target}, wanted {group}")

    before = browser.evaluate("document.querySelector('#r-graph-view svg').getAttribute('viewBox')")
    clicked = browser.evaluate(CLICK % json.dumps("in the graph"))
    after = browser.evaluate("document.querySelector('#r-graph-view svg').getAttribute('viewBox')")
    focus = browser.evaluate("[...document.querySelectorAll('#r-graph-view g.r-focus title')]"
                             ".map((t) => t.textContent)")
    check(f"{name}: a finding's graph link zooms to its note and marks its op",
          clicked and before != after
          and sorted(t.rstrip("0123456789") for t in focus) == ["finding", "op"],
          f"{before} -> {after}, {focus}")

    browser.evaluate("document.querySelector('[data-zoom=fit]').click()")
    svg = "document.querySelector('#r-graph-view svg')"
    check(f"{name}: fit shows the whole graph",
          browser.evaluate(f"{svg}.getAttribute('viewBox') === {svg}.dataset.full"))

    counts = "[...document.querySelectorAll('#r-ops tbody tr')].map((r) => +r.children[4].textContent.replace(/,/g, ''))"
    browser.evaluate("document.querySelectorAll('#r-ops th')[4].click()")
    first = browser.evaluate(counts)
    browser.evaluate("document.querySelectorAll('#r-ops th')[4].click()")
    second = browser.evaluate(counts)
    check(f"{name}: clicking 'count' sorts the op table both ways",
          first == sorted(first, reverse=True) and second == sorted(second) and first != second,
          f"{first[:5]} / {second[:5]}")

    browser.evaluate("""(() => { const f = document.getElementById('r-op-filter');
      f.value = 'backward'; f.dispatchEvent(new Event('input')); })()""")
    shown = browser.evaluate("[...document.querySelectorAll('#r-ops tbody tr')].filter((r) => !r.hidden)"
                             ".map((r) => r.children[1].textContent)")
    check(f"{name}: the filter keeps only matching ops",
          shown and all(p == "backward" for p in shown), shown[:5] if shown else shown)

    browser.evaluate("""(() => { const s = document.getElementById('r-graph-step');
      s.value = 'all'; s.dispatchEvent(new Event('change')); })()""")
    command = browser.evaluate("document.getElementById('r-graph-command').textContent")
    check(f"{name}: the graph's command line follows the step chosen",
          command.startswith("ampview ") and "--all-steps" in command, command)


def ranks(browser, page):
    browser.open(page)
    name = os.path.basename(page)
    options = browser.evaluate("[...document.querySelectorAll('#r-rank option')].map((o) => o.textContent)")
    visible = browser.evaluate("!document.getElementById('r-rank-box').hidden")
    check(f"{name}: a rank selector with one entry per rank", visible and len(options) == 2, options)
    rows = "document.querySelectorAll('#r-ops tbody tr').length"
    points = "[...document.querySelectorAll('figure.r-chart')].map((f) => f.dataset.points).join(',')"
    before = (browser.evaluate(rows), browser.evaluate(points))
    browser.evaluate("""(() => { const s = document.getElementById('r-rank');
      s.value = '1'; s.dispatchEvent(new Event('change')); })()""")
    data = browser.evaluate("JSON.parse(document.getElementById('r-data').textContent)")
    after = (browser.evaluate(rows), browser.evaluate(points))
    check(f"{name}: choosing rank 1 redraws its table and charts",
          after[0] == len(data["processes"][1]["op_table"]) and after[1] and
          browser.evaluate("document.body.dataset.errors") == "0", f"{before} -> {after}")


def opens_on_training(browser, page):
    """The page opens on the first process that trains, not on a parent
    that only started them."""
    browser.open(page)
    shown = browser.evaluate("document.getElementById('r-rank').value")
    rows = browser.evaluate("document.querySelectorAll('#r-ops tbody tr').length")
    data = browser.evaluate("JSON.parse(document.getElementById('r-data').textContent)")
    check("a parent that trains not, listed first: the page opens on the "
          "first process that trains, its table drawn",
          shown == "1" and rows == len(data["processes"][1]["op_table"]),
          (shown, rows))


def main():
    chromium, profile, page = sys.argv[1:4]
    browser = Browser(chromium, profile)
    try:
        interact(browser, page)
        if len(sys.argv) > 4:
            ranks(browser, sys.argv[4])
        if len(sys.argv) > 5:
            opens_on_training(browser, sys.argv[5])
        check("no console message or uncaught exception while interacting",
              not browser.console, browser.console)
    finally:
        browser.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
