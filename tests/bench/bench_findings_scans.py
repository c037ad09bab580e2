#!/usr/bin/env python3
"""`amptrace summary` against the length of traces whose findings once
searched the rest of the trace (or all of it before) for each of many
events, at N and 4N repetitions: the ratio 4N / N it prints is ~4 for
findings linear in the trace and ~16 for a quadratic search.  Each trace
repeats one unit (pid 100, thread 1) whose search finds nothing, so a
search runs to the trace's end or start:

  failed-ops    a failed mm on a bf16 tensor and the f32 parameter
                'head.weight' outside autocast (dtype-mismatch), no
                exception text after it: where did the parameter's
                dtype come from (a module conversion before it?)
  overflows     a backward mm whose output overflowed (an fp16-overflow
                amp.diag), no GradScaler: did the scaler skip the step
                before its next update?
  jit-casts     a TorchScript cast whose result no op of its thread
                reads (policy-divergence): which op was it made for?

The traces are written here, in the trace format (FORMAT.md §3).
Printed: the median wall and CPU time of --rounds runs at each size,
interleaved, and the ratio 4N / N; with --before-amptrace (another
build, e.g. main's) that build runs in the same rounds and its ratio is
printed too.

    bench_findings_scans.py --amptrace A [--units N] [--rounds 5]
                            [--before-amptrace A0] [--case NAME]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402

HEADER = scaling.header('bench_findings_scans',
                        'torch 2.13.0 (policy table: newest)', 'all')
PID = 100
TORCH_TYPE = {'f32': 'float', 'f16': 'c10::Half', 'bf16': 'c10::BFloat16'}
AUTOCAST_OFF = ('{"enabled":false,"device":"cpu","dtype":"bf16",'
                '"cache_enabled":true,"depth":0,"scope":null}')


def op(op_id, ts, name, phase, inputs, outputs, tid=1, extra=''):
    """An amp.op X event; inputs and outputs as (id, dtype, extra keys)."""
    def tensors(ts_):
        return ','.join('{"tensor":%d,"dtype":"%s","shape":[2,2]%s}' % t
                        for t in ts_)
    return ('{"name":"%s","cat":"amp.op","ph":"X","ts":%.3f,"pid":%d,'
            '"tid":%d,"dur":1,"args":{"op_id":%d,"op":"%s","overload":"",'
            '"phase":"%s","policy":"none","device":"cpu","emulated":false,'
            '"autocast":%s,"inputs":[%s],"outputs":[%s]%s,"Input type":[%s],'
            '"Input Dims":[%s],"External id":%d}}'
            % (name, ts, PID, tid, op_id, name, phase, AUTOCAST_OFF,
               tensors(inputs), tensors(outputs), extra,
               ','.join('"%s"' % TORCH_TYPE[t[1]] for t in inputs),
               ','.join('[2,2]' for _ in inputs), op_id))


def failed_op_unit(k):
    """A bf16 tensor made, then a failed mm of it and the f32 parameter."""
    made, failed = 2 * k + 2, 2 * k + 3
    h = 2 * k + 10
    return [
        op(made, 10.0 * k + 1, 'ones', 'forward', [], [(h, 'bf16', '')]),
        op(failed, 10.0 * k + 3, 'mm', 'forward',
           [(h, 'bf16', ''),
            (1, 'f32', ',"name":"head.weight","leaf":true')], [],
           extra=',"status":-1,"error":"raised an exception"'),
    ]


def overflow_unit(k):
    """A backward mm and its fp16-overflow diag."""
    op_id, out = k + 2, k + 10
    return [
        op(op_id, 10.0 * k + 1, 'mm', 'backward', [(1, 'f16', '')],
           [(out, 'f16', '')]),
        '{"name":"fp16-overflow","cat":"amp.diag","ph":"i","ts":%.3f,'
        '"pid":%d,"tid":1,"s":"t","args":{"kind":"fp16-overflow",'
        '"message":"mm (op %d) produced inf/NaN in its f16 output",'
        '"op_id":%d,"tensor":%d}}' % (10.0 * k + 2.5, PID, op_id, op_id, out),
    ]


def jit_cast_unit(k):
    """A TorchScript cast inside op k, its result read by no later op."""
    op_id, result = k + 2, k + 10
    return [
        '{"name":"cast f32->bf16","cat":"amp.cast","ph":"X","ts":%.3f,'
        '"pid":%d,"tid":1,"dur":0.5,"args":{"op_id":%d,"op":'
        '"_autocast_to_reduced_precision","phase":"forward","arg":0,'
        '"tensor":1,"result":%d,"from":"f32","to":"bf16","cache":'
        '"uncacheable","reason":"TorchScript","bytes":16,"shape":[2,2]}}'
        % (10.0 * k + 1.2, PID, op_id, result),
        op(op_id, 10.0 * k + 1, '_autocast_to_reduced_precision', 'forward',
           [(1, 'f32', '')], [(result, 'bf16', '')]),
    ]


def site_unit(k):
    """An overflow unit whose output is a tensor named after its layer."""
    op_id, out = k + 2, k + 10
    name = ',"name":"layers.%d.out"' % k
    return [
        op(op_id, 10.0 * k + 1, 'mm', 'backward', [(1, 'f16', '')],
           [(out, 'f16', name)]),
    ] + overflow_unit(k)[1:]


CASES = {'failed-ops': failed_op_unit, 'overflows': overflow_unit,
         'jit-casts': jit_cast_unit, 'many-sites': site_unit}


def write_trace(path, unit, units):
    head = op(1, 0.5, 'ones', 'other', [],
              [(1, 'f32', ',"name":"head.weight","leaf":true,'
                '"requires_grad":true')])
    lines = [head] + [line for k in range(units) for line in unit(k)]
    scaling.write_trace(path, HEADER, PID, lines, units * 10 + 100)


def bench_case(name, builds, units, rounds, work):
    sizes = [units, 4 * units]
    traces = {}
    for n in sizes:
        traces[n] = os.path.join(work, '%s-%d.json' % (name, n))
        write_trace(traces[n], CASES[name], n)
    medians = scaling.interleaved(
        builds, sizes, rounds,
        lambda build, amptrace, n: scaling.timed_summary(amptrace, traces[n]))
    print('%s: amptrace summary, medians of %d interleaved rounds'
          % (name, rounds))
    for build in builds:
        for n in sizes:
            print('  %-10s %7d units: %7.3f s wall, %7.3f s CPU'
                  % ((build, n) + medians[build, n]))
        print('  %-10s 4x the units: %.1fx the CPU time (linear: ~4x, '
              'quadratic: ~16x)' % (build, scaling.ratio(medians, build,
                                                          sizes, 1)))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    scaling.add_build_arguments(parser)
    parser.add_argument('--units', type=int, default=5000)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--case', choices=sorted(CASES), action='append')
    args = parser.parse_args()
    builds = scaling.builds_of(args)
    with tempfile.TemporaryDirectory(prefix='bench-findings-') as work:
        for name in args.case or sorted(CASES):
            bench_case(name, builds, args.units, args.rounds, work)


if __name__ == '__main__':
    main()
