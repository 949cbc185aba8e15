"""The compiled lane kernels under numba's bounds checks (``NUMBA_BOUNDSCHECK=1``), in a subprocess
with its own numba cache: every array index of the Platonic and autoencoder SGD steps stays inside
its array on shapes chosen to reach every edge of their index arithmetic (partial groups of lanes,
odd row and column counts, blocks of steps that are not multiples of the kernels' look-ahead, both
ways of forming the minibatch moments, both precisions). An index outside an array raises
``IndexError`` there instead of reading or writing past it. Slow (the kernels compile again with the
checks): ``make boundscheck``, which CI runs."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.boundscheck

_SANITY = """
import numba, numpy as np
@numba.njit
def past(a, i):
    return a[i]
try:
    past(np.zeros(3), 3)
except IndexError:
    pass
else:
    raise SystemExit("NUMBA_BOUNDSCHECK is not in force: an index past the end was read")
"""

_RUNS = {
    "platonic": """
import numpy as np
from symbreak import platonic as pl
task = pl.random_task(5, n=3, m=2, noise=0.5)
for widths in [(3, 7, 2), (5,)]:
    net = pl.random_edln(6, 3, 2, widths, cond=2.0)
    w0 = pl.init_weights(net, 7, replicas=9)
    for dtype in (np.float64, np.float32):
        for batch in (3, 6):  # the points drawn in the step (B < n + m), the moments (B >= n + m)
            for lanes in (True, False):  # the normals drawn in the step, or handed to it
                pl.training._LANE_DRAWS = lanes
                pl.train_sgd(net, task, w0, lr=0.01, batch_size=batch, steps=70, seed=1, record_every=35,
                             weight_decay=1e-3, lr_warmup=20, dtype=dtype)
""",
    "autoencoder": """
import numpy as np
from symbreak import autoencoder as ae
lam = ae.geometric_spectrum(5)
for dtype in (np.float64, np.float32):
    for seeds in (17, 9, 1):  # full lane groups, a group of 8 in float32, replicas one at a time
        ae.simulate_sgd(lam, 3, 0.02, 6, 9, seeds=seeds, record_every=4, dtype=dtype, seed=2)
""",
}


@pytest.mark.parametrize("kernel", sorted(_RUNS))
def test_lane_kernels_stay_inside_their_arrays(kernel, tmp_path):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"), OMP_NUM_THREADS="1")
    code = textwrap.dedent(_SANITY) + textwrap.dedent(_RUNS[kernel])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
