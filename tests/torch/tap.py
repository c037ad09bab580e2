"""TAP output for the PyTorch bridge's test scripts: one line per check,
the reason under a failed one, the plan and the exit status at the end."""
import sys

results = []


def check(what, ok, detail=""):
    results.append(bool(ok))
    print("%s - %s" % ("ok" if ok else "not ok", what))
    if not ok and detail:
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def done():
    """Prints the plan; the exit status says whether all passed."""
    print("1..%d" % len(results))
    return 0 if all(results) else 1
