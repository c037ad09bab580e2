"""`amptrace explain --torch VERSION` against the installed PyTorch of that
version (1.13 or 2.13: the table of the running torch's series).

For every CPU row of explain's table, the op runs under
torch.autocast("cpu", dtype) on representative inputs, with bf16 and,
where CPU autocast takes it (2.x), with f16; explain is asked about the
same call (--torch VERSION --device cpu --dtype DTYPE --json) and must
agree on
  - the casts: the aten._to_copy calls autocast makes on the inputs before
    the op runs (seen by a TorchDispatchMode, which sits below autocast),
  - the first output's dtype (and every listed output's),
  - the values: the autocast result equals the op run without autocast on
    the inputs cast as explain says (PyTorch's own conformance check,
    test_autocast.py; bit for bit but f32 LAPACK results, see same_values),
  - the error, when explain says autocast raises.
The table's CPU and CUDA op sets must equal the runtime's AutocastCPU and
AutocastCUDA registrations, the weight-cast cache scope explain reports
must be what a second thread sees, and every entry of the running torch's
own CPU conformance lists (torch.testing._internal.autocast_test_lists)
must get the dtype those lists expect.  Where CPU autocast refuses f16
(1.13), explain must say it raises, with torch's message.

Usage: test_torch_policy.py AMPTRACE.  Prints "ok - ..." / "not ok - ..."
lines; exits 77 (skip) when torch cannot be imported or its series has no
table of its own (explain would use the nearest), 1 on any failure.
"""
import json
import math
import subprocess
import sys
import threading
import types
import unittest

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as error:
    print(f"skip: torch is not importable ({error})")
    sys.exit(77)

from torch_policy_cases import cases, cuda_only_cases  # noqa: E402

AMPTRACE = sys.argv[1]
BF16 = torch.bfloat16
F16 = torch.float16
TABLE = None  # the table of the running torch's series: main() sets it
DTYPE_NAMES = {
    torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
    BF16: "bf16", torch.int64: "i64", torch.int32: "i32",
    torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
    torch.complex32: "c32", torch.int8: "i8", torch.uint8: "u8",
}
NAME_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}

failures = 0


def check(ok, what, detail=""):
    global failures
    if ok:
        print(f"ok - {what}")
    else:
        failures += 1
        print(f"not ok - {what}" + (f": {detail}" if detail else ""))


def explain(*args):
    result = subprocess.run([AMPTRACE, "explain", "--torch", TABLE] +
                            list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"explain {' '.join(args)}: {result.stderr}")
    return result.stdout


def flat_tensors(args, kwargs):
    """The call's tensors in order, list elements inline (explain's ARGs)."""
    out = []
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, torch.Tensor))
    return out


def replace_tensors(args, kwargs, new):
    """args/kwargs with their tensors replaced, in order, by `new`."""
    it = iter(new)

    def swap(value):
        if isinstance(value, torch.Tensor):
            return next(it)
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, tuple):
            return tuple(swap(v) for v in value)
        return value
    return [swap(a) for a in args], {k: swap(v) for k, v in kwargs.items()}


class CastRecorder(TorchDispatchMode):
    """Records the dtype conversions of `inputs` made before the first
    other op: the autocast wrapper's casts."""

    def __init__(self, inputs):
        super().__init__()
        self.inputs = inputs
        self.casts = []
        self.leading = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func is torch.ops.aten._to_copy.default and self.leading:
            source = args[0]
            for i, t in enumerate(self.inputs):
                if source is t:
                    self.casts.append((i, DTYPE_NAMES[out.dtype]))
                    break
        elif not str(func).startswith("prim."):  # a FakeTensor's device
            self.leading = False
        return out


def outputs_of(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)):
        return [r for r in result if isinstance(r, torch.Tensor)]
    return []


def same_values(a, b):
    """Bit for bit, except that f32/f64 results may differ in the last
    bits (threaded LAPACK/OpenBLAS calls are not reproducible run to run);
    a wrong cast (a bf16 computation) is off by about 1e-2."""
    if hasattr(a, "rename"):  # named tensors: gone in 2.13
        a, b = a.rename(None), b.rename(None)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_complex():
        return same_values(torch.view_as_real(a.resolve_conj()),
                           torch.view_as_real(b.resolve_conj()))
    if a.dtype in (torch.float32, torch.float64):
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    if a.is_floating_point():
        both_nan = torch.isnan(a) & torch.isnan(b)
        return bool(((a == b) | both_nan).all())
    return torch.equal(a, b)


def run(fn, args, kwargs, inputs, autocast, observe=True, lp=BF16):
    torch.manual_seed(0)  # fractional_max_pool & co. draw samples
    recorder = CastRecorder(inputs)
    try:
        with torch.autocast("cpu", lp, enabled=autocast):
            if observe:
                with recorder:
                    result = fn(*args, **kwargs)
            else:
                result = fn(*args, **kwargs)
    except RuntimeError as error:
        return None, str(error), recorder.casts
    return result, None, recorder.casts


def arg_text(inputs, case):
    if case.get("explain_args") is not None:
        return case["explain_args"]
    return [DTYPE_NAMES[t.dtype] for t in inputs]


def check_case(label, case, lp=BF16):
    fn, args, kwargs = case["fn"], case["args"], case.get("kwargs", {})
    inputs = flat_tensors(args, kwargs)
    what = (f"{DTYPE_NAMES[lp]} {label}"
            f"({', '.join(arg_text(inputs, case))})")
    try:
        answer = json.loads(explain("--device", "cpu", "--dtype",
                                    DTYPE_NAMES[lp], "--json", label,
                                    *arg_text(inputs, case)))
    except RuntimeError as error:
        check(False, f"{what}: explain answers", str(error))
        return

    observe = not case.get("named", False)
    result, error, observed = run(fn, args, kwargs, inputs, True, observe,
                                  lp)
    if answer.get("error"):
        check(error is not None and answer["error"] in error,
              f"{what}: raises as explain says",
              f"torch: {error!r}, explain: {answer['error']!r}")
        return
    # A kernel without this dtype on the CPU (oneDNN's f16 LSTM here)
    # raises after autocast's casts: the control below must raise the
    # same, and the casts are still compared; explain knows no kernels.

    # the control: explain's casts applied by hand, no autocast
    planned = {c["arg"]: c["to"] for c in answer["casts"]}
    control_inputs = [t.to(NAME_DTYPES[planned[i]]) if i in planned else t
                      for i, t in enumerate(inputs)]
    cargs, ckwargs = replace_tensors(args, kwargs, control_inputs)
    control, cerror, internal = run(fn, cargs, ckwargs, control_inputs,
                                    False, observe)
    if cerror != error:
        check(False, f"{what}: runs, and the control as autocast did",
              f"autocast: {error}; control: {cerror}")
        return

    # autocast's casts, plus the op's own leading conversions of inputs
    # autocast left alone (they show in both runs)
    expected = sorted([(i, to) for i, to in planned.items()] +
                      [(i, to) for i, to in internal if i not in planned])
    if observe:
        check(sorted(observed) == expected, f"{what}: casts",
              f"torch {sorted(observed)}, explain {expected}")
    else:
        print(f"# {what}: named tensors hide the casts from the dispatch "
              "mode; the bitwise check below covers them")

    if error is not None:
        print(f"# {what}: the kernel raises after the casts ({error})")
        return
    outs = outputs_of(result)
    names = [DTYPE_NAMES.get(o.dtype, str(o.dtype)) for o in outs]
    want = answer["outputs"]
    check(len(names) >= len(want) and names[:len(want)] == want,
          f"{what}: output dtypes", f"torch {names}, explain {want}")
    compared = case.get("compare", len(outs))
    check(len(outs) == len(outputs_of(control)) and
          all(same_values(a, b) for a, b in
              zip(outs[:compared], outputs_of(control)[:compared])),
          f"{what}: equals the op run on explain's casts")


def table(device):
    rows = json.loads(explain("--device", device, "--list", "--json"))
    return {"aten::" + r["op"] + ("." + r["overload"] if r["overload"]
                                  else ""): r for r in rows}


# Registered by ATen's cuDNN code only where torch is built with cuDNN
# (a CUDA wheel; not 2.13.0+cpu nor Debian's 1.13), in every version:
# its wrapper casts to f16 whatever autocast's dtype and flattens the
# weights into a new buffer, which no policy of the table says, so it is
# not a row (lib/policy_table.c).
CUDNN_ONLY = {"aten::_cudnn_rnn"}


def check_registrations():
    for device, key in (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA")):
        listed = set(table(device))
        registered = set(
            torch._C._dispatch_get_registrations_for_dispatch_key(key))
        if device == "cuda" and torch.backends.cudnn.is_available():
            check(CUDNN_ONLY <= registered, "cuda: a cuDNN build registers "
                  f"{sorted(CUDNN_ONLY)}, which the table leaves out",
                  f"registered: {sorted(registered & CUDNN_ONLY)}")
            registered -= CUDNN_ONLY
        check(listed == registered,
              f"{device}: the {TABLE} table's ops are {key}'s "
              f"registrations ({len(registered)})",
              f"only in the table: {sorted(listed - registered)}; "
              f"only registered: {sorted(registered - listed)}")


def check_cache_scope():
    """A weight cast cached by one thread's region: does a region in
    another thread cast it again?"""
    weight = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(4, 4)
    seen = {}

    def second_thread():
        with torch.autocast("cpu", BF16):
            with CastRecorder([weight]) as recorder:
                torch.mm(weight, x)
        seen["casts"] = len(recorder.casts)

    with torch.autocast("cpu", BF16):
        torch.mm(weight, x)  # caches weight's bf16 copy in this thread
        with CastRecorder([weight]) as recorder:
            torch.mm(weight, x)
        same_thread = len(recorder.casts)
        thread = threading.Thread(target=second_thread)
        thread.start()
        thread.join()
    torch_scope = "per-thread" if seen["casts"] == 1 else "per-process"
    text = explain("--device", "cpu", "mm", "f32:leaf", "f32")
    says = "per-thread" if "cache per-thread" in text else "per-process"
    check(same_thread == 0, "the same thread's region reuses the cast")
    check(torch_scope == says,
          f"weight-cast cache scope: torch {torch_scope}, explain {says}")


def check_conformance_lists():
    """This torch's AutocastCPUTestLists: each entry's output must have
    the dtype test_autocast.py expects (run_as_type, or the entry's own).
    1.13 names the lower-precision lists *_bf16, 2.x *_16 (and builds
    them for bf16 unless told otherwise)."""
    # The lists import TEST_WITH_ROCM (and 2.x TestCase) from
    # common_utils, which needs expecttest (not packaged in Debian 12, not
    # pinned in the 2.13 set): stand in for it.
    utils = types.ModuleType("torch.testing._internal.common_utils")
    utils.TEST_WITH_ROCM = False
    utils.TestCase = unittest.TestCase
    sys.modules.setdefault(utils.__name__, utils)
    from torch.testing._internal.autocast_test_lists import \
        AutocastCPUTestLists
    lists = AutocastCPUTestLists(torch.device("cpu"))
    lower = ("torch_bf16", "nn_bf16", "torch_16", "nn_16")
    fp32 = ("torch_fp32", "nn_fp32", "torch_need_autocast_promote")
    builtin = ("torch_expect_builtin_promote",
               "methods_expect_builtin_promote")
    count = bad = 0
    for attr in lower + fp32 + builtin:
        for entry in getattr(lists, attr, ()):
            for args, lp, dtype in list_variants(attr in lower,
                                                 attr in builtin, entry):
                names = [DTYPE_NAMES[t.dtype]
                         for t in flat_tensors(args, {})]
                answer = json.loads(explain(
                    "--device", "cpu", "--dtype", DTYPE_NAMES[lp], "--json",
                    entry[0], *names))
                count += 1
                if answer.get("output") != dtype:
                    bad += 1
                    print(f"# {attr} {DTYPE_NAMES[lp]} {entry[0]}"
                          f"({', '.join(names)}): explain "
                          f"{answer.get('output')}, the list expects {dtype}")
    check(count > 0 and bad == 0,
          f"{count} entries of torch {torch.__version__}'s "
          "AutocastCPUTestLists answer as the lists expect")


def list_variants(lower, builtin, entry):
    """(args, autocast dtype, expected output) of one list entry.  1.13:
    (op, args[, out_type]).  2.x: (op, args[, kwargs]); the promote lists
    (op, bf16 args, f16 args[, out_type]), one run per autocast dtype; its
    lower-precision and fp32 lists hold for f16 autocast as well."""
    cpu_f16 = torch.__version__.split(".")[0] != "1"
    if builtin:
        if isinstance(entry[2], torch.dtype):
            return [(entry[1], BF16, DTYPE_NAMES[entry[2]])]
        return [(entry[1], BF16, DTYPE_NAMES[entry[3]]),
                (entry[2], F16, DTYPE_NAMES[entry[3]])]
    variants = [(entry[1], BF16, "bf16" if lower else "f32")]
    if len(entry) > 2 and isinstance(entry[2], tuple):
        variants.append((entry[2], F16, "f32"))
    elif cpu_f16:
        variants.append((entry[1], F16, "f16" if lower else "f32"))
    return variants


def fake_cuda(value, mode):
    """`value` with its tensors as FakeTensors of device cuda: CUDA
    autocast's wrappers see CUDA tensors, meta kernels compute dtypes."""
    from torch._subclasses.fake_tensor import FakeTensor
    if isinstance(value, torch.Tensor):
        meta = torch.empty_strided(value.shape, value.stride(),
                                   dtype=value.dtype, device="meta")
        return FakeTensor(mode, meta, torch.device("cuda", 0))
    if isinstance(value, (list, tuple)):
        return type(value)(fake_cuda(v, mode) for v in value)
    return value


def run_cuda_autocast(fn, args, kwargs, inputs, lp, mode):
    """The call under CUDA autocast, set directly (torch.autocast("cuda")
    disables itself without a device); (outputs, error, casts)."""
    recorder = CastRecorder(inputs)
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", lp)
    torch.autocast_increment_nesting()
    try:
        # the fake mode innermost: the recorder sees the casts
        with recorder, mode:
            return outputs_of(fn(*args, **kwargs)), None, recorder.casts
    except RuntimeError as error:
        return [], str(error), recorder.casts
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", False)


def check_cuda_by_behaviour(rows):
    """CUDA's rows as far as a CPU build runs them: each case of a CUDA
    row (the CPU cases of ops both lists have, and CUDA-only ones) on
    FakeTensors of device cuda under CUDA autocast, f16 and bf16: the
    casts and the output dtypes must be explain's (--device cuda).  Values
    cannot be had; a case whose meta kernel fails is counted apart."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    checked, kernel_failed = set(), []
    for lp in (F16, BF16):
        seen = {}
        for label, case in list(cases(lp, rows)) + list(cuda_only_cases()):
            if "aten::" + label in rows and not case.get("named"):
                seen.setdefault(label, case)
        for label, case in seen.items():
            mode = FakeTensorMode()
            args = fake_cuda(case["args"], mode)
            kwargs = fake_cuda(case.get("kwargs", {}), mode)
            inputs = flat_tensors(args, kwargs)
            names = [DTYPE_NAMES[t.dtype] for t in inputs]
            what = f"cuda {DTYPE_NAMES[lp]} {label}({', '.join(names)})"
            answer = json.loads(explain("--device", "cuda", "--dtype",
                                        DTYPE_NAMES[lp], "--json", label,
                                        *names))
            outs, error, observed = run_cuda_autocast(
                case["fn"], args, kwargs, inputs, lp, mode)
            if answer.get("error"):
                check(error is not None and answer["error"] in error,
                      f"{what}: raises as explain says",
                      f"torch: {error!r}, explain: {answer['error']!r}")
                checked.add(label)
                continue
            if error is not None:
                kernel_failed.append(f"{what}: {error.splitlines()[0]}")
                continue
            planned = sorted((c["arg"], c["to"]) for c in answer["casts"])
            got = sorted(observed)
            dtypes = [DTYPE_NAMES.get(o.dtype, str(o.dtype)) for o in outs]
            want = answer["outputs"]
            check(got == planned and dtypes[:len(want)] == want,
                  f"{what}: casts and output dtypes",
                  f"torch {got} {dtypes}, explain {planned} {want}")
            checked.add(label)
    for line in kernel_failed:
        print(f"# no meta kernel on FakeTensors: {line}")
    check(len(checked) >= 60,
          f"{len(checked)} of the {len(rows)} CUDA rows checked by "
          f"behaviour on FakeTensors ({len(kernel_failed)} runs without a "
          "meta kernel)")


def check_cpu_f16_refused():
    """1.13's CPU autocast takes bf16 only: explain and torch agree that
    an f16 region raises, with the same message."""
    answer = json.loads(explain("--device", "cpu", "--dtype", "f16",
                                "--json", "mm", "f32", "f32"))
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast("cpu", F16):
                torch.mm(torch.ones(2, 2), torch.ones(2, 2))
        error = None
    except RuntimeError as e:
        error = str(e)
    check(error is not None and answer.get("error") and
          answer["error"] in error,
          "cpu f16 autocast raises, as explain says",
          f"torch: {error!r}, explain: {answer.get('error')!r}")


def table_for_running_torch():
    """The table explain picks for this torch, or None (with why) when
    its series has none of its own."""
    global TABLE
    TABLE = torch.__version__
    answer = json.loads(explain("--json", "mm", "f32", "f32"))
    if any("has no table of its own" in n for n in answer.get("notes", [])):
        return None, answer["notes"][0]
    return answer["torch"], None


def main():
    global TABLE
    TABLE, why = table_for_running_torch()
    if TABLE is None:
        print(f"skip: {why}")
        return 77
    print(f"# torch {torch.__version__}: the {TABLE} table")
    check_registrations()
    check_cache_scope()
    check_conformance_lists()
    rows = table("cpu")
    cpu_f16 = torch.__version__.split(".")[0] != "1"
    if not cpu_f16:
        check_cpu_f16_refused()
    else:  # FakeTensors and torch.set_autocast_enabled(device): 2.x
        check_cuda_by_behaviour(table("cuda"))
    for lp in (BF16, F16) if cpu_f16 else (BF16,):
        covered = set()
        for label, case in cases(lp, rows):
            covered.add("aten::" + label)
            check_case(label, case, lp)
        missing = sorted(set(rows) - covered)
        check(not missing, f"every CPU row of the {TABLE} table ran with "
              f"{DTYPE_NAMES[lp]} ({len(rows)})", f"no case for {missing}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
