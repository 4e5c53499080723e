"""Fits the polynomial coefficients used by src/compute/simd/simd_impl.h (log, tanh, erf) and
src/base/simd/vec_exp.h (exp).

    .venv/bin/python scripts/fit_simd_polynomials.py

Each fit is weighted least squares on Chebyshev-distributed points, iteratively reweighted by
the error (Lawson's algorithm), which converges towards the minimax (equal-ripple) polynomial for
the relative error. Targets come from libm in double, or from their Taylor series near 0 where
the remainder terms below would cancel catastrophically. Prints the coefficients (lowest degree
first) and the fit's maximum relative error in double; the float kernels' end-to-end error is
checked by tests/unit/compute/simd/float_kernels_test.cc.
"""
import math
from fractions import Fraction

import numpy as np


def fit(f, lo, hi, degree, var=lambda x: x, iters=60, points=4000):
    t = np.cos(np.linspace(0, math.pi, points))
    x = lo + (hi - lo) * (t + 1) / 2
    y = np.array([f(v) for v in x])
    basis = np.stack([var(x) ** k for k in range(degree + 1)], axis=1)
    w = np.ones_like(x) / points
    scale = np.abs(y)
    for _ in range(iters):
        sw = np.sqrt(w) / scale
        c, *_ = np.linalg.lstsq(basis * sw[:, None], y * sw, rcond=None)
        err = np.abs(basis @ c - y) / scale
        w = w * err
        w /= w.sum()
    return c, err.max()


def tanh_series(terms):
    # tanh x = sum a_k x^(2k+1); from tanh' = 1 - tanh^2.
    a = [Fraction(1)]
    for k in range(1, terms):
        a.append(-sum(a[i] * a[k - 1 - i] for i in range(k)) / (2 * k + 1))
    return [float(v) for v in a]


TANH = tanh_series(30)


def exp_remainder(r):  # (e^r - 1 - r) / r^2
    if abs(r) < 0.05:
        return sum(r ** (k - 2) / math.factorial(k) for k in range(2, 20))
    return (math.expm1(r) - r) / (r * r)


def tanh_remainder(x):  # (tanh(x) / x - 1) / x^2
    if x < 0.2:
        return sum(TANH[k] * x ** (2 * k - 2) for k in range(1, 30))
    return (math.tanh(x) / x - 1) / (x * x)


def log_remainder(f):  # (log1p(f) - f + f^2 / 2) / f^3
    if abs(f) < 0.1:
        return sum((-1) ** (k + 1) * f ** (k - 3) / k for k in range(3, 40))
    return (math.log1p(f) - f + f * f / 2) / f ** 3


FITS = [
    ("exp: exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2", exp_remainder, -0.3466, 0.3466, 4, lambda x: x),
    ("log: log(1+f) = f - f^2/2 + f^3 P(f), 1+f in [sqrt(1/2), sqrt(2)]", log_remainder,
     math.sqrt(0.5) - 1, math.sqrt(2) - 1, 7, lambda x: x),
    ("tanh: tanh(x) = x + x^3 P(x^2), |x| < 0.625", tanh_remainder, 0.0, 0.625, 4, lambda x: x * x),
    ("erf: erf(x) = x P(x^2), |x| < 0.921875",
     lambda x: math.erf(x) / x if x > 1e-6 else 2 / math.sqrt(math.pi), 1e-6, 0.921875, 6, lambda x: x * x),
    ("erf: erfc(x) exp(x^2) = P(x - 2.421875), x in [0.921875, 3.921875]",
     lambda x: math.erfc(x) * math.exp(x * x), 0.921875, 3.921875, 11, lambda x: x - 2.421875),
]

if __name__ == "__main__":
    for name, f, lo, hi, degree, var in FITS:
        c, e = fit(f, lo, hi, degree, var)
        print(f"{name}  (max relative error {e:.3g})")
        for k in c:
            print(f"    {k:.9e}f")
