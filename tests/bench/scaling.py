"""What the benches of a command against a trace's length share
(bench_aggregate_steps, bench_findings_scans, bench_merge_memory,
bench_diff_memory): a synthetic trace written as it is made, the builds
compared (this one and --before-amptrace), their runs at N and 4N
interleaved round by round, and the CPU and wall time of `amptrace
summary`."""
import os
import resource
import statistics
import subprocess
import sys
import time


def header(generator, framework, steps):
    """A trace's opening up to its first event (FORMAT.md §1)."""
    return ('{"displayTimeUnit":"ms","schemaVersion":1,"amptrace":{"format":'
            '"1.4","generator":"%s","command":["prog"],"rank":null,'
            '"host":"bench","monotonic_base_ns":1,"flush":"event",'
            '"framework":"%s","recording":{"steps":"%s","max_size":0}},'
            '"baseTimeNanoseconds":1,\n"traceEvents":[\n'
            % (generator, framework, steps))


def write_trace(path, opening, pid, events, duration_us):
    """The trace of process `pid`: its name, then each line of the
    iterable `events`, written as they come (a child's peak RSS includes
    its parent's before the exec, so the writer stays small)."""
    count = 1
    with open(path, 'w') as f:
        f.write(opening)
        f.write('{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":'
                '{"name":"prog (pid %d)"}}' % (pid, pid))
        for line in events:
            f.write(',\n' + line)
            count += 1
        f.write('\n],\n"amptraceEnd":{"complete":true,"events":%d,'
                '"duration_us":%d,"exit":{"status":"exited","code":0},'
                '"processes":[]}\n}\n' % (count, duration_us))


def add_build_arguments(parser):
    parser.add_argument('--amptrace', required=True)
    parser.add_argument('--before-amptrace',
                        default=os.environ.get('BENCH_BEFORE_AMPTRACE'))


def builds_of(args):
    """The builds compared: {name: amptrace}."""
    builds = {'this build': args.amptrace}
    if args.before_amptrace:
        builds['before'] = args.before_amptrace
    return builds


def interleaved(builds, sizes, rounds, measure):
    """measure(build name, amptrace, size) -> a tuple of numbers, run
    `rounds` times at each size and build in turn: {(build, size): the
    medians of each number}."""
    runs = {(b, s): [] for b in builds for s in sizes}
    for _ in range(rounds):
        for size in sizes:
            for build, amptrace in builds.items():
                runs[build, size].append(measure(build, amptrace, size))
    return {key: tuple(statistics.median(column) for column in zip(*values))
            for key, values in runs.items()}


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_summary(amptrace, trace):
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


def ratio(medians, build, sizes, column):
    """A number at the larger size over the smaller's."""
    return (medians[build, sizes[1]][column] /
            max(medians[build, sizes[0]][column], 1e-9))


def print_memory(command, size, sizes, rounds, builds, medians):
    """The medians of a command's peak RSS and CPU (MB, s) on two traces
    of aggregated steps at each size, and how they grow 4x the steps."""
    print('%s of two traces of aggregated steps (%.0f MB of input at %d '
          'steps); medians of %d interleaved rounds'
          % (command, size / 1e6, sizes[1], rounds))
    for build in builds:
        for steps in sizes:
            print('  %-10s %7d steps: peak RSS %7.1f MB, %7.3f s CPU'
                  % ((build, steps) + medians[build, steps]))
        print('  %-10s 4x the steps: %.2fx the peak RSS, %.1fx the CPU'
              % (build, ratio(medians, build, sizes, 0),
                 ratio(medians, build, sizes, 1)))
