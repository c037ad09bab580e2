#!/usr/bin/env python3
"""`amptrace merge` of two traces against their length: its peak RSS
and CPU time at N and 4N steps recorded as aggregates (the traces of
bench_aggregate_steps.py, written here).  A merge that holds one event
of each input at a time, and forgets each step's names with its event,
peaks at about the same RSS at both sizes (the ratio 4N / N near 1); one
that holds every input's events, as merge did, at about 4x, one that
keeps every name it read (each step's is new), as merge did after that,
at about 2.6x.  With --before-amptrace (another build, e.g. main's) that
build runs in the same rounds and its numbers are printed too; its
output must be the same bytes.

    bench_merge_memory.py --amptrace A [--steps N] [--rounds 3]
                          [--before-amptrace A0]
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_aggregate_steps as aggregate  # noqa: E402
import scaling  # noqa: E402


def merged(amptrace, inputs, out):
    """Peak RSS (MB) and CPU seconds of `amptrace merge inputs -o out`."""
    p = subprocess.Popen([amptrace, 'merge', *inputs, '-o', out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit('%s merge: exit %d: %s' % (amptrace, p.returncode,
                                            stderr.decode()))
    return usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    scaling.add_build_arguments(parser)
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    builds = scaling.builds_of(args)
    sizes = [args.steps, 4 * args.steps]
    with tempfile.TemporaryDirectory(prefix='bench-merge-') as work:
        inputs = {}
        for steps in sizes:
            inputs[steps] = [os.path.join(work, '%d-%d.json' % (steps, rank))
                             for rank in range(2)]
            for path in inputs[steps]:
                aggregate.write_trace(path, steps)

        def measure(build, amptrace, steps):
            out = os.path.join(work, '%s.json' % build.split()[0])
            numbers = merged(amptrace, inputs[steps], out)
            if build == 'before' and not filecmp.cmp(
                    os.path.join(work, 'this.json'), out, shallow=False):
                sys.exit('the two builds merged %d steps differently' % steps)
            return numbers

        medians = scaling.interleaved(builds, sizes, args.rounds, measure)
        size = sum(os.path.getsize(p) for p in inputs[sizes[1]])
    scaling.print_memory('amptrace merge', size, sizes, args.rounds, builds,
                         medians)


if __name__ == '__main__':
    main()
