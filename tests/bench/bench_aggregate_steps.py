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
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HEADER = ('{"displayTimeUnit":"ms","schemaVersion":1,"amptrace":{"format":'
          '"1.4","generator":"bench_aggregate_steps","command":["prog"],'
          '"rank":null,"host":"bench","monotonic_base_ns":1,"flush":"event",'
          '"framework":"libamp 0.1.0","recording":{"steps":"none",'
          '"max_size":0}},"baseTimeNanoseconds":1,\n"traceEvents":[\n')
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
    lines = ['{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":'
             '{"name":"prog (pid %d)"}}' % (PID, PID)]
    for step in range(steps):
        lines += step_lines(step)
    with open(path, 'w') as f:
        f.write(HEADER + ',\n'.join(lines))
        f.write('\n],\n"amptraceEnd":{"complete":true,"events":%d,'
                '"duration_us":%d,"exit":{"status":"exited","code":0},'
                '"processes":[]}\n}\n' % (len(lines), steps * 10 + 100))


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(amptrace, trace):
    """Wall and CPU seconds of `amptrace summary trace`."""
    cpu = child_cpu()
    start = time.perf_counter()
    p = subprocess.run([amptrace, 'summary', trace], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit('%s summary %s: exit %d: %s' % (amptrace, trace,
                                                 p.returncode, p.stderr.decode()))
    return wall, child_cpu() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--amptrace', required=True)
    parser.add_argument('--before-amptrace',
                        default=os.environ.get('BENCH_BEFORE_AMPTRACE'))
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--rounds', type=int, default=5)
    args = parser.parse_args()
    builds = {'this build': args.amptrace}
    if args.before_amptrace:
        builds['before'] = args.before_amptrace
    sizes = [args.steps, 4 * args.steps]
    with tempfile.TemporaryDirectory(prefix='bench-aggregate-') as work:
        traces = {}
        for steps in sizes:
            traces[steps] = os.path.join(work, '%d.json' % steps)
            write_trace(traces[steps], steps)
        wall = {(b, s): [] for b in builds for s in sizes}
        cpu = {(b, s): [] for b in builds for s in sizes}
        for _ in range(args.rounds):
            for steps in sizes:
                for build, amptrace in builds.items():
                    w, c = timed(amptrace, traces[steps])
                    wall[build, steps].append(w)
                    cpu[build, steps].append(c)
    print('amptrace summary of a run that skipped every step, its steps '
          'recorded as aggregates; medians of %d interleaved rounds'
          % args.rounds)
    for build in builds:
        for steps in sizes:
            print('  %-10s %7d steps: %7.3f s wall, %7.3f s CPU'
                  % (build, steps, statistics.median(wall[build, steps]),
                     statistics.median(cpu[build, steps])))
        print('  %-10s 4x the steps: %.1fx the CPU time (linear: ~4x)'
              % (build, statistics.median(cpu[build, sizes[1]]) /
                 max(statistics.median(cpu[build, sizes[0]]), 1e-9)))


if __name__ == '__main__':
    main()
