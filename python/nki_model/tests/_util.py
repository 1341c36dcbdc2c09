"""Helpers for the model's unit tests: on-chip tiles holding given values, inside nki.model.invocation()."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import nki.language as nl  # noqa: E402
from nki.model import values  # noqa: E402,F401


def tile(vals, dtype=nl.float32, buffer=nl.sbuf):
    """A new on-chip tensor holding `vals` (rounded to dtype)."""
    vals = np.asarray(vals)
    t = nl.ndarray(vals.shape, dtype, buffer=buffer)
    t._write(vals)
    return t


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def bf16(x):
    return nl.bfloat16.convert(np.asarray(x, dtype=np.float32))
