"""Fit the polynomials of ckernels/include/tf_math.h (float32 exp, log, tanh, erf) and print them as C.

    python scripts/fit_math_polynomials.py

Each function is reduced to a small interval where a polynomial of a few terms is
accurate to float32's last bit; the fit is a weighted least-squares fit in float64 on
Chebyshev nodes (close to minimax), minimising the *relative* error of the final
result; each degree is the smallest whose fit error is about a tenth of an ulp. The printed coefficients are what the header holds; tests/backends/test_math.py
measures the resulting accuracy in ulps against float64 over the whole float range.
"""
import math

import numpy as np


def chebyshev_nodes(lo, hi, count=4000):
    """Points on [lo, hi] crowded at the ends, where a least-squares fit would otherwise err most."""
    k = np.arange(count)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos((2 * k + 1) * np.pi / (2 * count))


def fit(target, x, degree, weight):
    """Coefficients (highest power first, for Horner) of the polynomial of `degree` closest to target(x)."""
    A = np.vander(x, degree + 1) * weight[:, None]
    coef, *_ = np.linalg.lstsq(A, target * weight, rcond=None)
    return coef


def show(name, coef, note):
    """Print the coefficients as the C array tf_math.h holds, rounded to float32."""
    print(f"/* {note} */")
    print(f"static const float TF_{name}[{len(coef)}] = {{" + ", ".join(f"{float(np.float32(c)):.9e}f" for c in coef) + "};")


def main():
    """Fit every polynomial of tf_math.h and print them."""
    erf = np.vectorize(math.erf)
    erfc = np.vectorize(math.erfc)
    # e^r = 1 + r + r^2 p(r) on |r| <= ln2/2: fit p, weighting by r^2 / e^r (the relative error of e^r)
    r = chebyshev_nodes(-math.log(2) / 2, math.log(2) / 2)
    show("EXP_P", fit((np.expm1(r) - r) / r**2, r, 4, r**2 / np.exp(r)), "e^r = 1 + r + r^2 p(r), |r| <= ln2/2")
    # log(1+z) = z - z^2/2 + z^3 q(z) on z in [sqrt(1/2)-1, sqrt(2)-1]
    z = chebyshev_nodes(math.sqrt(0.5) - 1, math.sqrt(2) - 1)
    show("LOG_Q", fit((np.log1p(z) - z + z**2 / 2) / z**3, z, 7, np.abs(z**3 / np.log1p(z))),
         "log(1+z) = z - z^2/2 + z^3 q(z), z in [sqrt(1/2)-1, sqrt(2)-1]")
    # tanh x = x + x^3 t(x^2) for |x| < 0.625
    x = chebyshev_nodes(1e-4, 0.625)
    show("TANH_T", fit((np.tanh(x) - x) / x**3, x * x, 5, x**3 / np.tanh(x)), "tanh x = x + x^3 t(x^2), |x| < 0.625")
    # erf x = x + x s(x^2) for |x| < 1
    x = chebyshev_nodes(1e-4, 1.0)
    show("ERF_SMALL", fit(erf(x) / x - 1, x * x, 6, np.ones_like(x)), "erf x = x + x s(x^2), |x| < 1")
    # erfc x = e^(-x^2) h(x) for 1 <= x < 4 (h smooth, from 0.43 to 0.14); fit h in u = x - 2.5
    x = chebyshev_nodes(1.0, 4.0)
    h = erfc(x) * np.exp(x * x)
    show("ERFC_H", fit(h, x - 2.5, 11, 1 / h), "erfc x = e^(-x^2) h(x), 1 <= x < 4, h in powers of (x - 2.5)")


if __name__ == "__main__":
    main()
