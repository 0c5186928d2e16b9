#!/usr/bin/env python3
"""Reference group-sequential boundaries for tests/data/sequential_boundaries.json.

An independent computation of the two-sided Lan-DeMets boundaries perflab computes by
numerical integration (crates/stats/src/sequential.rs): here the probability of staying inside
the boundaries at looks 1..k is the multivariate normal probability of a rectangle
(Genz's algorithm, scipy.stats.multivariate_normal.cdf), with corr(Z_i, Z_j) =
sqrt(t_i / t_j), and each boundary c_k solves
    1 - P(|Z_1| < c_1, ..., |Z_k| < c_k) = alpha*(t_k)
by Brent's method. Generated once; the tests never run Python.

Usage: /usr/bin/python3 scripts/gen-sequential-boundaries.py > tests/data/sequential_boundaries.json
       (`--only log_power,planned` prints only those spendings' cases)
Needs: scipy >= 1.10 (Debian: apt install python3-scipy).
"""
import json
import math
import sys

import numpy as np
import scipy
from scipy import optimize, stats


def spending(kind, alpha, t, start=None, power=None, plan=None, early=None, at_plan=None):
    if kind == "log_power":  # alpha (ln(t / t0) / ln(1 / t0))^p from t0 on
        return 0.0 if t <= start else alpha * (math.log(t / start) / math.log(1 / start)) ** power
    if kind == "planned":  # early share per doubling to t1, at_plan at t1, the rest per doubling after
        if t <= start:
            return 0.0
        if t < plan:
            return alpha * early * math.log(t / start) / math.log(plan / start)
        if t >= 1:
            return alpha
        before = min(early + at_plan, 1.0)
        return alpha * (before + (1 - before) * math.log(t / plan) / math.log(1 / plan))
    if kind == "logarithmic":  # alpha ln(t / t0) / ln(1 / t0) from t0 on
        return 0.0 if t <= start else alpha * math.log(t / start) / math.log(1 / start)
    if kind == "obrien_fleming":  # alpha/2 per side, as R's ldbounds
        return 4 - 4 * stats.norm.cdf(stats.norm.isf(alpha / 4) / math.sqrt(t))
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    raise ValueError(kind)


def inside(bounds, times):
    k = len(bounds)
    cov = np.array([[math.sqrt(min(times[i], times[j]) / max(times[i], times[j])) for j in range(k)]
                    for i in range(k)])
    upper = np.array(bounds)
    if k == 1:
        return stats.norm.cdf(bounds[0]) - stats.norm.cdf(-bounds[0])
    mvn = stats.multivariate_normal(mean=np.zeros(k), cov=cov, allow_singular=False)
    mvn.abseps, mvn.releps, mvn.maxpts = 1e-8, 1e-8, 500_000 * k
    return mvn.cdf(upper, lower_limit=-upper)


def boundaries(kind, alpha, times, start, extra):
    out = []
    for k, t in enumerate(times):
        target = 1 - spending(kind, alpha, t, start, **extra)
        c = optimize.brentq(lambda c: inside(out + [c], times[: k + 1]) - target, 0.5, 12.0, xtol=1e-9)
        out.append(c)
    return out


def main():
    geometric = [n / 200 for n in (9, 14, 21, 32, 48, 72, 108, 162)] + [1.0]
    designs = [
        ("obrien_fleming", 0.05, [0.2, 0.4, 0.6, 0.8, 1.0], None),
        ("pocock", 0.05, [0.2, 0.4, 0.6, 0.8, 1.0], None),
        ("pocock", 0.05, [0.05, 0.1, 0.3, 0.65, 1.0], None),
        ("pocock", 0.025, geometric, None),
        ("obrien_fleming", 0.01, [0.25, 0.5, 0.75, 1.0], None),
        ("logarithmic", 0.05, [0.05, 0.1, 0.2, 0.4, 0.7, 1.0], 0.04),
        ("logarithmic", 0.025, geometric, 6 / 200),
        ("log_power", 0.05, [n / 660 for n in (8, 10, 12, 15, 18, 22, 27)], 5 / 660, {"power": 0.7}),
        ("planned", 0.05, [n / 660 for n in (8, 10, 12, 15, 18, 22, 27)], 5 / 660,
         {"plan": 12 / 660, "early": 0.1, "at_plan": 0.6}),
    ]
    designs = [d if len(d) == 5 else d + ({},) for d in designs]
    # `--only KIND,…` computes those spendings' cases alone (to add cases without waiting
    # for the others' slow high-dimensional rectangles).
    if "--only" in sys.argv:
        kinds = sys.argv[sys.argv.index("--only") + 1].split(",")
        designs = [d for d in designs if d[0] in kinds]
    cases = [{"spending": kind, "alpha": alpha, "information": times, **({"start": start} if start else {}), **extra,
              "boundaries": [round(c, 6) for c in boundaries(kind, alpha, times, start, extra)]}
             for kind, alpha, times, start, extra in designs]
    print(json.dumps({
        "about": "Two-sided Lan-DeMets group-sequential boundaries (z scale) at the given information "
                 "fractions; alpha is the two-sided family-wise error. Computed by "
                 "scripts/gen-sequential-boundaries.py with SciPy " + scipy.__version__ +
                 " (multivariate normal rectangle probabilities, Genz), independently of perflab's "
                 "numerical integration.",
        "cases": cases,
    }, indent=1))


if __name__ == "__main__":
    main()
