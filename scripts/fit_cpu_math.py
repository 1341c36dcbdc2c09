#!/usr/bin/env python3
"""Fits the f32 erf and exp approximations of codegen/cpu/CpuMath.cpp.

Prints the coefficients (rounded to f32, as CpuMath.cpp holds them) and the
errors of an f32 evaluation that mirrors the generated code (Horner steps as
fused multiply-adds: each computed in f64 and rounded once to f32).

  erf(x) = x N(x^2) / D(x^2) on |x| <= XMAX (clamped outside), D(0) = 1,
           the quotient clamped to [-1, 1];
  gelu:    the erf GELU 0.5 x (1 + erf(x / sqrt 2)) as h + h q with h = x / 2
           and q = x N(x^2) / D(x^2) ~ erf(x / sqrt 2) on |x| <= XMAX
           (clamped outside; the same fit in the scaled variable, so the
           multiply by 1/sqrt 2 and the add of 1 disappear), q unclamped;
  exp(r) = P(r) on |r| <= ln(2)/2 with P(0) = 1 (so that exp(0) = 1
           exactly), after the Cody-Waite reduction of CpuMath.cpp (the
           fitted P'(0) rounds to 1 in f32 as well).

Method (numpy only): Sanathanan-Koerner iteration (linearised weighted least
squares, N - g D = 0 weighted by 1 / (g D_previous), for the relative error)
on Chebyshev-spaced points, then Lawson reweighting (weights multiplied by
|error|^(1/2) each round) towards the minimax solution.

  python3 scripts/fit_cpu_math.py            # both, with CpuMath.cpp's degrees
  python3 scripts/fit_cpu_math.py erf 5 5 3.925
  python3 scripts/fit_cpu_math.py gelu 5 5 5.55
  python3 scripts/fit_cpu_math.py exp 6
"""
import math
import sys

import numpy as np


def f32_horner(coefs, t):
    """coefs[0] + t (coefs[1] + t (...)), every step one f32 FMA."""
    r = np.full_like(t, np.float32(coefs[-1]), dtype=np.float32)
    for c in coefs[-2::-1]:
        r = (r.astype(np.float64) * t.astype(np.float64) + np.float64(c)).astype(np.float32)
    return r


def fit_erf(nn=5, nd=5, xmax=3.925, rounds=60, xscale=1.0):
    """x N(x^2) / D(x^2) ~ erf(xscale x) on |x| <= xmax."""
    x = xmax * (0.5 - 0.5 * np.cos(np.linspace(0, np.pi, 6000)))[1:]
    s = x * x
    g = np.array([math.erf(xscale * v) for v in x]) / x
    d = np.ones_like(s)
    w = np.ones_like(s)
    for it in range(rounds):
        a = np.concatenate([np.vander(s, nn + 1, increasing=True),
                            -g[:, None] * np.vander(s, nd + 1, increasing=True)[:, 1:]], 1)
        scale = w / (g * d)
        c, *_ = np.linalg.lstsq(a * scale[:, None], g * scale, rcond=None)
        num, den = c[:nn + 1], np.concatenate([[1.0], c[nn + 1:]])
        d = np.polyval(den[::-1], s)
        err = (np.polyval(num[::-1], s) / d - g) / g
        if it >= 10:
            w = w * (np.abs(err) / np.abs(err).max() + 1e-3) ** 0.5
            w /= w.max()
    num32, den32 = num.astype(np.float32), den.astype(np.float32)
    if xscale != 1.0:
        return num32, den32, np.abs(err).max()
    xt = np.linspace(-4.5, 4.5, 2000001).astype(np.float32)
    xc = np.clip(xt, np.float32(-xmax), np.float32(xmax))
    st = (xc * xc).astype(np.float32)
    q = (xc * f32_horner(num32, st)).astype(np.float32) / f32_horner(den32, st)
    got = np.clip(q.astype(np.float32), -1, 1).astype(np.float64)
    ref = np.array([math.erf(float(v)) for v in xt])
    abs_err = np.abs(got - ref)
    rel = abs_err[ref != 0] / np.abs(ref[ref != 0])
    print(f"erf: N degree {nn}, D degree {nd}, |x| <= {xmax}")
    print(f"  relative error in f64: {np.abs(err).max():.3g}")
    print(f"  f32 evaluation on [-4.5, 4.5]: max abs error {abs_err.max():.3g}, max rel error {rel.max():.3g}")
    print("  N =", ", ".join(repr(float(v)) for v in num32))
    print("  D =", ", ".join(repr(float(v)) for v in den32))


def fit_gelu(nn=5, nd=5, xmax=5.55):
    num32, den32, ferr = fit_erf(nn, nd, xmax, xscale=1 / math.sqrt(2))
    xt = np.linspace(-12, 12, 2400001).astype(np.float32)
    xc = np.clip(xt, np.float32(-xmax), np.float32(xmax))
    st = (xc * xc).astype(np.float32)
    q = ((xc * f32_horner(num32, st)).astype(np.float32) / f32_horner(den32, st)).astype(np.float32)
    h = (xt * np.float32(0.5)).astype(np.float64)
    got = (h * q.astype(np.float64) + h).astype(np.float32).astype(np.float64)
    x64 = xt.astype(np.float64)
    ref = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x64])
    err = np.abs(got - ref)
    print(f"gelu: erf(x / sqrt 2) with N degree {nn}, D degree {nd}, |x| <= {xmax}")
    print(f"  relative error of erf(x / sqrt 2) in f64: {ferr:.3g}")
    print(f"  f32 evaluation on [-12, 12]: max |error| / max(1, |x|) {(err / np.maximum(1, np.abs(x64))).max():.3g}, "
          f"max relative error for x >= 0 {(err / np.maximum(np.abs(ref), 1e-30))[x64 > 0].max():.3g}")
    print("  N =", ", ".join(repr(float(v)) for v in num32))
    print("  D =", ", ".join(repr(float(v)) for v in den32))


def fit_exp(deg=6, rounds=80):
    h = math.log(2) / 2 * 1.01
    r = h * np.cos(np.linspace(0, np.pi, 4000))
    r = r[np.abs(r) > 1e-12]
    f = np.exp(r)
    w = np.ones_like(r)
    for _ in range(rounds):  # unknowns c1..c_deg (c0 = 1)
        a = np.vander(r, deg + 1, increasing=True)[:, 1:]
        scale = w / f
        c, *_ = np.linalg.lstsq(a * scale[:, None], (f - 1) * scale, rcond=None)
        coef = np.concatenate([[1.0], c])
        err = (np.polyval(coef[::-1], r) - f) / f
        w = w * (np.abs(err) / np.abs(err).max() + 1e-3) ** 0.5
        w /= w.max()
    c32 = coef.astype(np.float32)
    x = np.linspace(-87, 88.7, 3000001).astype(np.float32)
    k = np.rint((x * np.float32(1.44269504088896341)).astype(np.float32))
    rr = (k.astype(np.float64) * np.float64(np.float32(-0.693359375)) + x).astype(np.float32)
    rr = (k.astype(np.float64) * np.float64(np.float32(2.12194440054690583e-4)) + rr).astype(np.float32)
    got = np.ldexp(f32_horner(c32, rr).astype(np.float64), k.astype(np.int64)).astype(np.float32)
    ref = np.exp(x.astype(np.float64))
    rel = np.abs(got.astype(np.float64) - ref) / ref
    print(f"exp: degree {deg}, c0 = 1, |r| <= ln(2)/2")
    print(f"  relative error in f64: {np.abs(err).max():.3g}")
    print(f"  f32 evaluation on [-87, 88.7]: max rel error {rel.max():.3g} ({rel.max() / 2**-24:.2f} half-ulps)")
    print("  P =", ", ".join(repr(float(v)) for v in c32))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] == "erf":
        fit_erf(*(int(a) for a in args[1:3]), *(float(a) for a in args[3:4]))
    if not args or args[0] == "gelu":
        fit_gelu(*(int(a) for a in args[1:3]), *(float(a) for a in args[3:4]))
    if not args or args[0] == "exp":
        fit_exp(*(int(a) for a in args[1:2]))
