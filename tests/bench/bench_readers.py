#!/usr/bin/env python3
"""The readers on a big trace: `summary`, `check`, `diff`, `report` and
`ampview` of a trace of about 2 GB (issue 24: each at most 1 GB of RSS and
60 s on the 2-core development machine), and `summary` of the same trace
cut short (a killed recording).

The trace is the libamp mlp sample (batch 8, hidden 32, 4 layers: about
110 events a step), as many steps as make --size-gb (measured on a short run
first); diff compares it with the same run under f16 (every op's output
dtype changes).  Each command's wall time, CPU time (user + system: what
it costs, whatever else runs on the machine) and peak RSS (its own, from
wait4) are printed with the targets; given --before-amptrace and
--before-ampview (or BENCH_BEFORE_AMPTRACE and BENCH_BEFORE_AMPVIEW:
another build, e.g. main's), both builds run
interleaved, command by command, and the ratios are printed: medians of
--rounds runs.

    bench_readers.py --amptrace A --ampview V --mlp MLP [--size-gb 2]
                     [--before-amptrace A0 --before-ampview V0]
                     [--rounds 1] [--limit S] [--commands C,...]
                     [--keep DIR]
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RSS_TARGET_MB = 1024
TIME_TARGET_S = 60
MLP_SIZES = ['--batch', '8', '--hidden', '32', '--layers', '4']


def record(amptrace, mlp, out, steps, dtype):
    """A trace of `steps` steps of the mlp, every one in full detail (the
    default records the first 20 and aggregates the rest)."""
    env = dict(os.environ, AMP_VALUE_CHECKS='0')
    subprocess.run([amptrace, 'run', '-q', '-o', out,
                    '--steps', 'all', '--max-size', 'none',
                    '--', mlp, '--steps', str(steps), '--dtype', dtype]
                   + MLP_SIZES, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def measured(argv, limit):
    """Runs argv, killed after `limit` seconds; returns (seconds, peak RSS
    in MB, whether it was killed, CPU seconds: user + system)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    killer = threading.Timer(limit, proc.kill)
    killer.start()
    err = proc.stderr.read().decode(errors='replace')
    _, status, usage = os.wait4(proc.pid, 0)
    killer.cancel()
    seconds = time.monotonic() - start
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    killed = proc.returncode == -signal.SIGKILL
    if not killed and proc.returncode not in (0, 1):
        sys.exit(f'{argv[0]} failed ({proc.returncode}): {err.strip()}')
    return (seconds, usage.ru_maxrss / 1024.0, killed,
            usage.ru_utime + usage.ru_stime)


def commands(amptrace, ampview, work):
    trace = os.path.join(work, 'trace.json')
    return {
        'summary': [amptrace, 'summary', trace],
        'check': [amptrace, 'check', trace, os.path.join(work, 'bench.rules')],
        'diff': [amptrace, 'diff', trace, os.path.join(work, 'f16.json')],
        'report': [amptrace, 'report', trace, '-o',
                   os.path.join(work, 'report.html')],
        'ampview': [ampview, trace, '-o', os.path.join(work, 'graph.svg')],
        'summary (killed)': [amptrace, 'summary',
                             os.path.join(work, 'killed.json')],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--amptrace', required=True)
    parser.add_argument('--ampview', required=True)
    parser.add_argument('--mlp', required=True)
    parser.add_argument('--before-amptrace',
                        default=os.environ.get('BENCH_BEFORE_AMPTRACE'))
    parser.add_argument('--before-ampview',
                        default=os.environ.get('BENCH_BEFORE_AMPVIEW'))
    parser.add_argument('--size-gb', type=float, default=2.0)
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--limit', type=float, default=600,
                        help='seconds after which a command is killed '
                        '(its row says so)')
    parser.add_argument('--commands', help='the commands to time, '
                        'comma-separated (default: all)')
    parser.add_argument('--keep', help='a directory to make the traces in '
                        'and leave them (made again only when missing)')
    args = parser.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix='bench-readers-')
    os.makedirs(work, exist_ok=True)
    try:
        trace = os.path.join(work, 'trace.json')
        if not os.path.exists(trace):
            probe = os.path.join(work, 'probe.json')
            record(args.amptrace, args.mlp, probe, 200, 'bf16')
            per_step = os.path.getsize(probe) / 200
            os.unlink(probe)
            steps = int(args.size_gb * 1e9 / per_step)
            print(f'recording {steps} steps of the mlp sample '
                  f'(~{per_step / 1e3:.0f} kB a step), bf16 and f16...',
                  flush=True)
            record(args.amptrace, args.mlp, trace, steps, 'bf16')
            record(args.amptrace, args.mlp, os.path.join(work, 'f16.json'),
                   steps, 'f16')
            size = os.path.getsize(trace)
            with open(trace, 'rb') as whole, \
                    open(os.path.join(work, 'killed.json'), 'wb') as cut:
                shutil.copyfileobj(whole, cut)
                cut.truncate(size * 6 // 10)
        with open(os.path.join(work, 'bench.rules'), 'w') as rules:
            rules.write('op linear: output bf16\n'
                        'casts f32->bf16 <= 100 per step\n'
                        'cache hit-rate >= 0\n'
                        'no finding stale-cache\n')
        print(f'trace: {os.path.getsize(trace) / 1e9:.2f} GB '
              f'(killed copy: {os.path.getsize(os.path.join(work, "killed.json")) / 1e9:.2f} GB)')

        builds = [('after', args.amptrace, args.ampview)]
        if args.before_amptrace:
            builds.insert(0, ('before', args.before_amptrace,
                              args.before_ampview or args.ampview))
        names = list(commands(args.amptrace, args.ampview, work))
        if args.commands:
            unknown = set(args.commands.split(',')) - set(names)
            if unknown:
                sys.exit(f'--commands: no command {", ".join(unknown)} '
                         f'(the commands: {", ".join(names)})')
            names = [n for n in names if n in args.commands.split(',')]
        results = {}
        for name in names:
            for _ in range(args.rounds):
                for build, amptrace, ampview in builds:
                    argv = commands(amptrace, ampview, work)[name]
                    run = measured(argv, args.limit)
                    results.setdefault((name, build), []).append(run)
                    print(f'  {name} ({build}): {run[0]:.1f} s, '
                          f'{run[3]:.1f} s CPU, {run[1]:.0f} MB', flush=True)
        print(f'{"command":18} {"build":7} {"time s":>8} {"CPU s":>8} '
              f'{"RSS MB":>8}  targets '
              f'(<= {TIME_TARGET_S} s, <= {RSS_TARGET_MB} MB)')
        for name in names:
            row = {}
            for build, _, _ in builds:
                runs = results[(name, build)]
                seconds = statistics.median(r[0] for r in runs)
                rss = statistics.median(r[1] for r in runs)
                cpu = statistics.median(r[3] for r in runs)
                killed = any(r[2] for r in runs)
                row[build] = (seconds, rss, cpu)
                met = seconds <= TIME_TARGET_S and rss <= RSS_TARGET_MB
                verdict = ('killed at --limit' if killed
                           else 'met' if met else 'MISSED')
                print(f'{name:18} {build:7} {seconds:8.1f} {cpu:8.1f} '
                      f'{rss:8.0f}  {verdict}', flush=True)
            if 'before' in row:
                after, before = row['after'], row['before']
                print(f'{"":18} {"ratio":7} {after[0] / before[0]:8.2f} '
                      f'{after[2] / before[2]:8.2f} '
                      f'{after[1] / before[1]:8.2f}  after / before')
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
