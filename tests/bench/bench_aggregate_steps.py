#!/usr/bin/env python3
"""`amptrace summary` against the number of steps recorded as per-step
aggregates: a run whose GradScaler skips every step, each step's backward
overflowing (an f16 run diverged; the findings decide, step by step,
whether its overflows are the scaler's), at N and 4N steps.  The ratio
4N / N it prints is 4 for a reader linear in steps and 16 for a
quadratic one (a walk through every event for each step, what the
bisection replaced): --before-amptrace with such a build prints both
ratios, measured in the same rounds.

The traces are written here, in the trace format (FORMAT.md §3.6, §3.12),
each step a scaler update that skipped and the step's amp.aggregate event
with one backward fp16-overflow row.  Printed: the median wall and CPU
time of --rounds runs at each size, interleaved, and the ratio 4N / N;
with --before-amptrace (another build, e.g. main's) that build runs in the
same rounds and its ratio is printed too.

    bench_aggregate_steps.py --amptrace A [--steps N] [--rounds 5]
                             [--before-amptrace A0]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402

HEADER = scaling.header('bench_aggregate_steps', 'libamp 0.1.0', 'none')
PID = 100


def step_lines(step):
    """A skipped step: its scaler update, then its aggregates."""
    begin = 100.0 + step * 10.0
    return [
        '{"name":"scaler update","cat":"amp.scaler","ph":"i","ts":%.3f,'
        '"pid":%d,"tid":1,"s":"t","args":{"what":"update","scaler_id":1,'
        '"scale":1,"found_inf":true,"step_skipped":true}}' % (begin + 5, PID),
        '{"name":"step %d aggregates","cat":"amp.aggregate","ph":"i",'
        '"ts":%.3f,"pid":%d,"tid":1,"s":"t","args":{"step":%d,'
        '"begin":%.3f,"events":9,"ops":[["mm","","forward",'
        '"lower_precision_fp","f16","cpu",1,0,1.0],["mm","","backward",'
        '"none","f16","cpu",2,0,1.0]],"casts":[],"diags":[["fp16-overflow",'
        '"backward",1,%d,%d,"mm (op %d) produced inf/NaN in its f16 '
        'output"]],"regions":1,"cache":{"clears":0,"entries":0,"bytes":0,'
        '"max_entries":0,"max_bytes":0}}}'
        % (step, begin + 8, PID, step, begin, 3 * step + 1, 5 * step + 1,
           3 * step + 1),
    ]


def write_trace(path, steps):
    scaling.write_trace(path, HEADER, PID,
                        (line for step in range(steps)
                         for line in step_lines(step)), steps * 10 + 100)


def main():
    parser = argparse.ArgumentParser()
    scaling.add_build_arguments(parser)
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    builds = scaling.builds_of(args)
    sizes = [args.steps, 4 * args.steps]
    with tempfile.TemporaryDirectory(prefix='bench-aggregate-') as work:
        traces = {}
        for steps in sizes:
            traces[steps] = os.path.join(work, '%d.json' % steps)
            write_trace(traces[steps], steps)
        medians = scaling.interleaved(
            builds, sizes, args.rounds,
            lambda build, amptrace, steps:
            scaling.timed_summary(amptrace, traces[steps]))
    print('amptrace summary of a run that skipped every step, its steps '
          'recorded as aggregates; medians of %d interleaved rounds'
          % args.rounds)
    for build in builds:
        for steps in sizes:
            print('  %-10s %7d steps: %7.3f s wall, %7.3f s CPU'
                  % ((build, steps) + medians[build, steps]))
        print('  %-10s 4x the steps: %.1fx the CPU time (linear: ~4x)'
              % (build, scaling.ratio(medians, build, sizes, 1)))


if __name__ == '__main__':
    main()
