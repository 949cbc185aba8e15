"""The smallest model of :func:`symbreak.engine.run_ensemble`, shared by the runner's tests and the
adversarial cases."""

import numpy as np


class Walk:
    """x ← x + scale·noise, one stream per replica; replica r's state blows up to inf at step
    ``blow[r]`` (if given)."""

    def __init__(self, reps, streams, blow=None, scale=1.0):
        self.reps, self.streams = np.asarray(reps), list(streams)
        self.x = np.zeros(len(reps))
        self.blow, self.scale = blow, scale

    def draw(self, m):
        return np.stack([s.standard_normal(m) for s in self.streams], axis=1)  # (m, n)

    def step(self, noise, t, step):
        self.x = self.x + self.scale * noise[t]
        if self.blow is not None:
            self.x[np.array([self.blow.get(int(r), 10**9) for r in self.reps]) <= step] = np.inf

    def magnitude(self):
        return np.abs(self.x)

    def record(self, mask):
        return (self.x[mask].copy(),)

    def final(self, mask):
        return (self.x[mask].copy(),)

    def keep(self, mask):
        self.x, self.reps = self.x[mask], self.reps[mask]
        self.streams = [s for s, k in zip(self.streams, mask) if k]
