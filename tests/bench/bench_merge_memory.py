#!/usr/bin/env python3
"""`amptrace merge` of two traces against their length: its peak RSS
and CPU time at N and 4N steps recorded as aggregates (the traces of
bench_aggregate_steps.py, written here).  A merge that holds one event
of each input at a time peaks at about the same RSS at both sizes (the
ratio 4N / N near 1); one that holds every input's events, as merge did,
at about 4x.  With --before-amptrace (another build, e.g. main's) that
build runs in the same rounds and its numbers are printed too; its
output must be the same bytes.

    bench_merge_memory.py --amptrace A [--steps N] [--rounds 3]
                          [--before-amptrace A0]
"""
import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_aggregate_steps as aggregate  # noqa: E402


def write_trace(path, steps):
    """bench_aggregate_steps's trace, written as it is made: the RSS a
    child reports includes its parent's before the exec, so this process
    stays small."""
    with open(path, 'w') as f:
        f.write(aggregate.HEADER)
        f.write('{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":'
                '{"name":"prog (pid %d)"}}' % (aggregate.PID, aggregate.PID))
        for step in range(steps):
            for line in aggregate.step_lines(step):
                f.write(',\n' + line)
        f.write('\n],\n"amptraceEnd":{"complete":true,"events":%d,'
                '"duration_us":%d,"exit":{"status":"exited","code":0},'
                '"processes":[]}\n}\n' % (1 + 2 * steps, steps * 10 + 100))


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
    parser.add_argument('--amptrace', required=True)
    parser.add_argument('--before-amptrace',
                        default=os.environ.get('BENCH_BEFORE_AMPTRACE'))
    parser.add_argument('--steps', type=int, default=20000)
    parser.add_argument('--rounds', type=int, default=3)
    args = parser.parse_args()
    builds = {'this build': args.amptrace}
    if args.before_amptrace:
        builds['before'] = args.before_amptrace
    sizes = [args.steps, 4 * args.steps]
    with tempfile.TemporaryDirectory(prefix='bench-merge-') as work:
        inputs = {}
        for steps in sizes:
            inputs[steps] = [os.path.join(work, '%d-%d.json' % (steps, rank))
                             for rank in range(2)]
            for path in inputs[steps]:
                write_trace(path, steps)
        rss = {(b, s): [] for b in builds for s in sizes}
        cpu = {(b, s): [] for b in builds for s in sizes}
        for _ in range(args.rounds):
            for steps in sizes:
                for build, amptrace in builds.items():
                    out = os.path.join(work, '%s.json' % build.split()[0])
                    r, c = merged(amptrace, inputs[steps], out)
                    rss[build, steps].append(r)
                    cpu[build, steps].append(c)
                if len(builds) > 1 and not filecmp.cmp(
                        os.path.join(work, 'this.json'),
                        os.path.join(work, 'before.json'), shallow=False):
                    sys.exit('the two builds merged %d steps differently'
                             % steps)
                size = sum(os.path.getsize(p) for p in inputs[steps])
    print('amptrace merge of two traces of aggregated steps (%.0f MB of '
          'input at %d steps); medians of %d interleaved rounds'
          % (size / 1e6, sizes[1], args.rounds))
    for build in builds:
        for steps in sizes:
            print('  %-10s %7d steps: peak RSS %7.1f MB, %7.3f s CPU'
                  % (build, steps, statistics.median(rss[build, steps]),
                     statistics.median(cpu[build, steps])))
        print('  %-10s 4x the steps: %.2fx the peak RSS, %.1fx the CPU'
              % (build, statistics.median(rss[build, sizes[1]]) /
                 statistics.median(rss[build, sizes[0]]),
                 statistics.median(cpu[build, sizes[1]]) /
                 max(statistics.median(cpu[build, sizes[0]]), 1e-9)))


if __name__ == '__main__':
    main()
