"""Survey: feed bad and extreme inputs to every public function of symbreak and classify what happens.

Each public function gets one valid baseline call; then every argument in turn is replaced by values
from a mutation table chosen by the argument's kind (float, int, array, matrix, str, object). Every
call runs in a forked child with a limit on its CPU time (not wall time, so that a loaded machine does
not turn a slow call into a "hang"; a generous wall-clock limit, 20x, still catches a child that
sleeps or waits), so a hang or a crash (segfault) is seen, not suffered. A call that exceeds the limit
is run once more before it is called a hang.

Outcomes
--------
hang           the call used more than the CPU-time limit, twice
crash          the child died (signal) or raised something other than ValueError/TypeError
               (DivergenceError is accepted for the trainers)
silent         returned a non-finite value, or accepted an input that is invalid (NaN, complex,
               bool, a non-integral float for an integer, a string), or an oracle says wrong
by design      returned a non-finite value where the function's docstring documents it as by design
               (adversarial_cases.NONFINITE_DOCUMENTED: the fields of a DivergenceError, the NaN of
               dln.naive_entropy at an exact tie)
clean error    ValueError / TypeError
correct        returned finite values on an input that may be valid

Usage: python tools/survey_bad_inputs.py [--timeout 5] [--only substring] [--verbose]
"""

from __future__ import annotations

import argparse
import collections
import os
import pickle
import signal
import sys
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from adversarial_cases import (  # noqa: E402
    ACCEPTS_ANY,
    AMBIG,
    BASE,
    INVALID,
    LAM,
    NONFINITE_DOCUMENTED,
    ORACLES,
    PU,
    PW,
    all_finite,
    mutants_for,
)

from symbreak import autoencoder as ae  # noqa: E402
from symbreak import engine  # noqa: E402


def run_child(fn, args, kwargs, conn_w):
    try:
        out = fn(*args, **kwargs)
        res = ("ok", all_finite(out), _summ(out))
    except (ValueError, TypeError) as exc:
        res = ("clean", type(exc).__name__, str(exc)[:200])
    except engine.DivergenceError as exc:
        res = ("clean", type(exc).__name__, str(exc)[:200])
    except BaseException as exc:  # noqa: BLE001
        res = ("other", type(exc).__name__, str(exc)[:200])
    os.write(conn_w, pickle.dumps(res))
    os._exit(0)


def _summ(x):
    if isinstance(x, (int, float, np.number)):
        return float(x)
    if isinstance(x, np.ndarray) and x.size and x.dtype.kind == "f":
        return float(x.ravel()[0])
    return None


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid):
    """User + system CPU time of a running child, from /proc (None where /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14, 15 of stat)
    except (OSError, IndexError, ValueError):
        return None


def call(fn, args, kwargs, timeout, retry=True):
    """Run ``fn(*args, **kwargs)`` in a forked child, limited to ``timeout`` s of CPU time."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        run_child(fn, args, kwargs, w)
    os.close(w)
    t0 = time.time()
    data = b""
    status = None
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        cpu = _cpu_seconds(pid)
        wall = time.time() - t0
        if (cpu if cpu is not None else wall) > timeout or wall > 20 * timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            if retry:  # once more before calling it a hang
                return call(fn, args, kwargs, timeout, retry=False)
            return ("hang", None, f"> {timeout} s of CPU time (or {20 * timeout} s wall), twice")
        time.sleep(0.002)
    os.set_blocking(r, False)
    try:
        while chunk := os.read(r, 1 << 16):
            data += chunk
    except BlockingIOError:
        pass
    os.close(r)
    if not data:
        return ("crash", None, f"child died, status {status}")
    return pickle.loads(data)


def classify(res, kind, documented=False):
    tag = res[0]
    if tag in ("hang",):
        return "hang"
    if tag in ("crash", "other"):
        return "crash"
    if tag == "clean":
        return "clean error"
    # returned normally
    if not res[1]:
        return "by design" if documented else "silent"
    if kind == INVALID:
        return "silent"
    return "correct"


def main():
    # warm up torch in the parent (its first use initialises for seconds; a forked child would
    # spend its whole time limit on it)
    import torch

    torch.set_num_threads(1)
    ae.autograd_hessian(LAM, PW, PU)
    ae.neuron_balance_autograd(PW, PU, np.ones(4))
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--verbose", action="store_true")
    opt = ap.parse_args()
    counts = collections.Counter()
    per_fn_bad = collections.defaultdict(list)
    n_inputs = 0
    names = [n for n in BASE if opt.only in n]
    for name in names:
        fn, args, kwargs = BASE[name]
        base = call(fn, args, kwargs, opt.timeout)
        if base[0] != "ok" or not base[1]:
            print(f"BASELINE FAILS {name}: {base}", flush=True)
        slots = [("pos", i, v) for i, v in enumerate(args)] + [("kw", k, v) for k, v in kwargs.items()]
        for where, key, val in slots:
            for mut, kind in mutants_for(val):
                a, kw = list(args), dict(kwargs)
                if where == "pos":
                    a[key] = mut
                else:
                    kw[key] = mut
                res = call(fn, a, kw, opt.timeout)
                out = classify(res, AMBIG if (name, key) in ACCEPTS_ANY else kind, (name, key) in NONFINITE_DOCUMENTED)
                counts[out] += 1
                n_inputs += 1
                if out in ("hang", "crash", "silent", "by design"):
                    per_fn_bad[name].append((key, _short(mut), out, res[1], str(res[2])[:90]))
    n_oracles = 0
    for label, thunk, expected in ORACLES:
        if opt.only and opt.only not in label:
            continue
        res = call(thunk, [], {}, opt.timeout)
        n_inputs += 1
        n_oracles += 1
        if res[0] in ("hang", "crash", "other"):
            out = "hang" if res[0] == "hang" else "crash"
        elif expected is None:
            out = "clean error" if res[0] == "clean" else "silent"
        elif res[0] == "clean":
            out = "clean error"
            if expected == "clean-named" and "eta" not in str(res[2]):
                out = "silent"
        elif expected == "clean-named":
            out = "silent"
        elif not res[1]:
            out = "silent"
        elif isinstance(expected, float):
            out = "correct" if res[2] is not None and abs(res[2] - expected) <= 1e-9 * abs(expected) else "silent"
        else:
            out = "correct"
        counts[out] += 1
        if out in ("hang", "crash", "silent") or (out == "clean error" and expected not in (None, "clean-named")):
            per_fn_bad["oracle"].append((label, "", out, res[1], str(res[2])[:90]))
    print(
        f"\n{len(names)} public functions and methods x {n_inputs} inputs in all "
        f"({n_inputs - n_oracles} mutated calls + {n_oracles} targeted cases)"
    )
    for k in ("hang", "crash", "silent", "by design", "clean error", "correct"):
        label = "non-finite by design, documented" if k == "by design" else k
        print(f"  {label:33s} {counts[k]}")
    if opt.verbose:
        for name, rows in per_fn_bad.items():
            for row in rows:
                print(f"  {name}: {row}")
    else:
        print("functions with hang/crash/silent/by-design outcomes:", len(per_fn_bad))
        for name, rows in per_fn_bad.items():
            print(f"  {name}: {len(rows)} ({collections.Counter(r[2] for r in rows)})")


def _short(v):
    if isinstance(v, np.ndarray):
        return f"array{v.shape}:{v.dtype}:{v.ravel()[:1]}"
    if isinstance(v, list):
        return f"list[{len(v)}]"
    return repr(v)[:30]


if __name__ == "__main__":
    main()
