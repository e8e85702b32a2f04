"""Chebyshev series of a function at 40 digits (mpmath), and their C arrays: what gen_bessel_series.py and
gen_ndtri_series.py share."""

import mpmath as mp

mp.mp.dps = 40


def chebyshev(f, a, b, nodes):
    """Coefficients c_j of f on [a, b] in T_j(t), t = (2 u - a - b) / (b - a), by interpolation at `nodes` points,
    cut where the terms fall below 1e-18 of the largest."""
    theta = [mp.pi * (k + mp.mpf(1) / 2) / nodes for k in range(nodes)]
    values = [f((b - a) / 2 * mp.cos(t) + (b + a) / 2) for t in theta]
    c = [2 * mp.fsum(v * mp.cos(j * t) for v, t in zip(values, theta)) / nodes for j in range(nodes)]
    c[0] /= 2
    top = max(abs(v) for v in c)
    while abs(c[-1]) < 1e-18 * top:
        c.pop()
    return c


def emit(name, c):
    """Prints c as a static const double array."""
    print(f"static const double {name}[{len(c)}] = {{")
    for i in range(0, len(c), 3):
        print("    " + ", ".join(mp.nstr(v, 17, strip_zeros=False, min_fixed=0, max_fixed=0) for v in c[i:i + 3])
              + ",")
    print("};")
