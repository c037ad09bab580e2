#!/usr/bin/env python3
"""The README's examples run as written.

Usage: test_readme.py README.md BUILD_DIR

Which blocks are checked is marked in the README itself, by an HTML comment
(invisible on GitHub) on the line before a fenced block:

  <!-- readme-test: file NAME -->   the block's text is written to NAME
  <!-- readme-test: run -->         the block's commands run and must exit 0

Every `file` block is written first, then the `run` blocks run in README
order, all in one scratch directory where `build` links to BUILD_DIR (so
`build/tracer/amptrace` is the one just built).  In a `run` block the lines
that start with `$ ` are commands; the lines after a command, up to the
next one, are its output as shown: each shown line must appear in the
command's output, in order, and when the shown output has no `...` line
it must be the whole output.  A `run` block without `$ ` lines runs each
line as a command.  Unmarked blocks (`./run`, `meson install`, C
fragments, the layout of the tree) are not run; the test lists them.
"""
import os
import re
import subprocess
import sys
import tempfile

MARK = re.compile(r"<!--\s*readme-test:\s*(file\s+(\S+)|run)\s*-->")


def blocks(lines):
    """(line number, mark or None, file name, block lines) per fenced block."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            mark = MARK.search(lines[i - 1]) if i else None
            start = i + 1
            end = start
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if end == len(lines):
                sys.exit(f"README.md:{i + 1}: unterminated code block")
            kind = None if not mark else ("file" if mark.group(2) else "run")
            yield start, kind, mark.group(2) if mark else None, lines[start:end]
            i = end + 1
        else:
            i += 1


def commands(block):
    """(command, shown output lines) per `$ ` line, else per line."""
    if not any(line.startswith("$ ") for line in block):
        return [(line, None) for line in block if line.strip()]
    out = []
    for line in block:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def shown_matches(shown, actual):
    """Why the shown output does not match, or None."""
    shown = [line.rstrip() for line in shown]
    actual = [line.rstrip() for line in actual.splitlines()]
    if "..." not in shown:
        return None if shown == actual else "output differs from the README"
    at = 0
    for line in shown:
        if line == "...":
            continue
        while at < len(actual) and actual[at] != line:
            at += 1
        if at == len(actual):
            return f"no line '{line}' (in this order) in the output"
        at += 1
    return None


def main():
    readme, build = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found = list(blocks(lines))
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        os.symlink(build, os.path.join(scratch, "build"))
        for start, kind, name, block in found:
            if kind == "file":
                with open(os.path.join(scratch, name), "w") as f:
                    f.write("\n".join(block) + "\n")
        for start, kind, name, block in found:
            if kind != "run":
                if kind is None:
                    print(f"# not checked: README.md:{start} ({block[0][:40]!r})")
                continue
            for command, shown in commands(block):
                run = subprocess.run(["bash", "-c", command], cwd=scratch,
                                     capture_output=True, text=True,
                                     timeout=300)
                why = (f"exit {run.returncode}: {run.stderr.strip()[-400:]}"
                       if run.returncode else
                       shown_matches(shown, run.stdout) if shown else None)
                if why:
                    failed += 1
                    print(f"not ok - README.md:{start}: {command}\n#   {why}")
                    if run.returncode == 0:
                        print("#   got:\n" + "\n".join(
                            "#   " + line for line in run.stdout.splitlines()))
                else:
                    print(f"ok - README.md:{start}: {command}")
    checked = sum(1 for block in found if block[1])
    if not checked:
        print("not ok - no README block is marked <!-- readme-test: ... -->")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
