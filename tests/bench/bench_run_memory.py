#!/usr/bin/env python3
"""`amptrace run`'s peak RSS against the number of steps recorded as
aggregates: the mlp sample (10 layers, width 8, batch 4, a GradScaler,
CUDA autocast emulated) traced at N and 4N steps (the first 20 in full
detail, the default).  Its memory per step is the slope, (RSS at 4N -
RSS at N) / 3N: what `amptrace run` keeps of each step for the findings
(the file keeps everything, whatever the build).  The program's own RSS,
in the peak too (wait4 counts the larger of the two), is the same at
both sizes; so is this script's, which a child's peak counts from
before its exec: N is large enough by default for amptrace to pass it
(a peak at that floor is said).  Printed: the medians of --rounds interleaved runs, peak RSS,
wall and CPU time (the program's and amptrace's); with --before-amptrace
(another build's amptrace, its libamptrace-recorder.so beside it) that
build runs in the same rounds, its numbers and the ratios of the two are
printed, and the findings each appended to the trace must be the same.

    bench_run_memory.py --amptrace A --mlp MLP [--steps 20000] [--rounds 3]
                        [--before-amptrace A0]
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402

PROGRAM = ['--layers', '10', '--hidden', '8', '--batch', '4',
           '--device', 'cuda']


def traced(amptrace, mlp, steps, out):
    """Peak RSS (MB), wall and CPU seconds of `amptrace run` of the mlp
    sample for `steps` steps, writing `out`."""
    start = time.perf_counter()
    p = subprocess.Popen([amptrace, 'run', '-q', '-o', out, '--', mlp,
                          '--steps', str(steps)] + PROGRAM,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit('%s run: exit %d: %s' % (amptrace, code, stderr.decode()))
    return (usage.ru_maxrss / 1024.0, wall,
            usage.ru_utime + usage.ru_stime)


def appended_findings(path):
    """The findings `amptrace run` appended to the trace at `path` (its
    amp.diag events with a severity), their times and pids left out."""
    found = []
    with open(path) as f:
        for line in f:
            if '"cat":"amp.diag"' in line and '"severity"' in line:
                found.append(re.sub(r'"(ts|pid)":[0-9.]+', '', line.strip()
                                    .rstrip(',')))
    return found


def per_step_kb(medians, build, sizes):
    """KB of peak RSS per step, between the two sizes."""
    grown = medians[build, sizes[1]][0] - medians[build, sizes[0]][0]
    return grown * 1024.0 / (sizes[1] - sizes[0])


def main():
    parser = argparse.ArgumentParser()
    scaling.add_build_arguments(parser)
    parser.add_argument('--mlp', required=True)
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    builds = scaling.builds_of(args)
    sizes = [args.steps, 4 * args.steps]
    with tempfile.TemporaryDirectory(prefix='bench-run-memory-') as work:
        def measure(build, amptrace, steps):
            out = os.path.join(work, '%s-%d.json' % (build.split()[0], steps))
            return traced(amptrace, args.mlp, steps, out)

        medians = scaling.interleaved(builds, sizes, args.rounds, measure)
        if 'before' in builds:
            for steps in sizes:
                ours, theirs = (appended_findings(os.path.join(
                    work, '%s-%d.json' % (name, steps)))
                    for name in ('this', 'before'))
                if ours != theirs:
                    sys.exit('the two builds appended different findings '
                             'at %d steps:\n%s\n%s' % (steps, ours, theirs))
    print('amptrace run of the mlp sample (%s), steps 0-19 in full detail, '
          'the others as aggregates; medians of %d interleaved rounds'
          % (' '.join(PROGRAM), args.rounds))
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if any(numbers[0] < 1.1 * floor for numbers in medians.values()):
        print('  (a peak near this script\'s own %.1f MB measures it, not '
              'amptrace: use more --steps)' % floor)
    for build in builds:
        for steps in sizes:
            print('  %-10s %7d steps: peak RSS %7.1f MB, %7.2f s wall, '
                  '%7.2f s CPU' % ((build, steps) + medians[build, steps]))
        print('  %-10s %.2f KB of peak RSS a step'
              % (build, per_step_kb(medians, build, sizes)))
    if 'before' in builds:
        print('  this build / before: %.2fx the RSS a step; at %d steps '
              '%.2fx the peak RSS, %.2fx the wall time, %.2fx the CPU'
              % (per_step_kb(medians, 'this build', sizes) /
                 max(per_step_kb(medians, 'before', sizes), 1e-9), sizes[1],
                 *(medians['this build', sizes[1]][k] /
                   max(medians['before', sizes[1]][k], 1e-9)
                   for k in range(3))))


if __name__ == '__main__':
    main()
