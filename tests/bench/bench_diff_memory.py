#!/usr/bin/env python3
"""`amptrace diff` of two traces against their length: its peak RSS and
CPU time at N and 4N steps recorded as aggregates (the traces of
bench_aggregate_steps.py, written here).  diff streams its inputs and
keeps a record of each op, cast, GradScaler event and aggregated step,
and the few events the steps model reads whole (none a step here), so its
peak grows with the steps (4N / N nears 4 as they outweigh the rest):
what it keeps of a step is what the peak measures.  With
--before-amptrace (another build, e.g. main's) that build runs in the
same rounds, its numbers and this build's over its are printed; the two
builds' text output must be the same bytes.

    bench_diff_memory.py --amptrace A [--steps N] [--rounds 3]
                         [--before-amptrace A0]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_aggregate_steps as aggregate  # noqa: E402
import scaling  # noqa: E402


def diffed(amptrace, inputs, work):
    """Peak RSS (MB), CPU seconds and standard output of `amptrace diff
    inputs` (its standard error in a file: two pipes could block)."""
    with open(os.path.join(work, 'stderr'), 'w+b') as err:
        p = subprocess.Popen([amptrace, 'diff', *inputs],
                             stdout=subprocess.PIPE, stderr=err)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            err.seek(0)
            sys.exit('%s diff: exit %d: %s' % (amptrace, code,
                                               err.read().decode()))
    return usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime, out


def main():
    parser = argparse.ArgumentParser()
    scaling.add_build_arguments(parser)
    parser.add_argument('--steps', type=int, default=25000)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    builds = scaling.builds_of(args)
    sizes = [args.steps, 4 * args.steps]
    outputs = {}
    with tempfile.TemporaryDirectory(prefix='bench-diff-') as work:
        inputs = {}
        for steps in sizes:
            inputs[steps] = [os.path.join(work, '%d-%s.json' % (steps, side))
                             for side in ('base', 'new')]
            for path in inputs[steps]:
                aggregate.write_trace(path, steps)

        def measure(build, amptrace, steps):
            rss, cpu, out = diffed(amptrace, inputs[steps], work)
            outputs.setdefault(steps, out)
            if out != outputs[steps]:
                sys.exit('the two builds diffed %d steps differently' % steps)
            return rss, cpu

        medians = scaling.interleaved(builds, sizes, args.rounds, measure)
        size = sum(os.path.getsize(p) for p in inputs[sizes[1]])
    scaling.print_memory('amptrace diff', size, sizes, args.rounds, builds,
                         medians)
    if 'before' in builds:
        for steps in sizes:
            print('  this build over before at %d steps: %.2fx the peak '
                  'RSS, %.2fx the CPU'
                  % (steps, medians['this build', steps][0] /
                     medians['before', steps][0],
                     medians['this build', steps][1] /
                     max(medians['before', steps][1], 1e-9)))


if __name__ == '__main__':
    main()
