# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the model and layer classes: NumPy (imported on first use, so that
``import recur`` stays fast) and the conversions of user arrays into what the C ABI takes."""
from __future__ import annotations

from typing import Any, Optional, TypeVar

from . import _native

_np = None
_C = TypeVar("_C", bound="Closable")


def np() -> Any:
    """NumPy, imported on first use."""
    global _np
    if _np is None:
        import numpy

        _np = numpy
    return _np


def error(cls_name: str, message: str) -> Exception:
    """An exception of recur's class `cls_name` (e.g. "InvalidArgumentError") with `message`,
    as the library raises them (its `status` is the class's)."""
    cls: Any = getattr(_native, cls_name)
    return cls(message)


def describe(x: Any) -> str:
    """What a user passed, for messages: an array's dtype and shape, a scalar's value, else its type."""
    if type(x).__name__ == "ndarray":
        return "an array of dtype %s and shape %s" % (x.dtype, tuple(x.shape))
    return "%r" % (x,) if isinstance(x, (bool, int, float, str)) or x is None else "a %s" % type(x).__name__


def as_float32(x: Any, what: str):
    """x as a C-contiguous float32 array: the array itself when it already is one (no copy),
    else one converted copy. Anything NumPy cannot turn into real numbers is refused."""
    n = np()
    if type(x) is n.ndarray and x.dtype == n.float32 and x.flags.c_contiguous:
        return x
    try:
        a = n.asarray(x)
    except Exception as e:  # ragged lists and the like
        raise error("InvalidArgumentError", "%s: expected an array of numbers, got %s (%s)" % (what, describe(x), e)) from None
    if a.dtype.kind not in "fiub":
        raise error("InvalidArgumentError",
                    "%s: expected real numbers (float or integer), got %s; convert it with numpy.asarray(x, numpy.float32)"
                    % (what, describe(a)))
    return n.ascontiguousarray(a, dtype=n.float32)


def as_mask(mask: Any, what: str):
    """A Keras mask (bool or 0/1 values) as a C-contiguous uint8 array, or None."""
    if mask is None:
        return None
    n = np()
    if type(mask) is n.ndarray and mask.dtype in (n.uint8, n.bool_) and mask.flags.c_contiguous:
        return mask
    try:
        a = n.asarray(mask)
    except Exception as e:
        raise error("InvalidArgumentError", "%s: expected a (batch, timesteps) array of booleans, got %s (%s)" % (what, describe(mask), e)) from None
    if a.dtype.kind not in "biuf":
        raise error("InvalidArgumentError", "%s: expected a (batch, timesteps) array of booleans, got %s" % (what, describe(a)))
    return n.ascontiguousarray(a != 0, dtype=n.uint8)


def configure(obj: Any, device: Optional[str], num_threads: Optional[int], keras_backend: Optional[str],
              precision: Optional[str] = None) -> None:
    """The settings a model or layer takes at creation, each through its property setter (the
    precision before the device: a GPU refuses bf16 and int8, and says so)."""
    if precision is not None:
        obj.precision = precision
    if device is not None:
        obj.device = device
    if num_threads is not None:
        obj.num_threads = num_threads
    if keras_backend is not None:
        obj.keras_backend = keras_backend


class Closable:
    """close(), closed and with-statement use of an object over one native handle, kept in
    ``_native_obj`` (None once closed)."""

    _native_obj: Any

    def _closed_message(self) -> str:
        raise NotImplementedError

    def _h(self) -> Any:
        """The native object, or StateError (saying what to do) once closed."""
        if self._native_obj is None:
            raise error("StateError", self._closed_message())
        return self._native_obj

    def close(self) -> None:
        """Frees the native object now (garbage collection would do it later)."""
        self._native_obj = None

    @property
    def closed(self) -> bool:
        return self._native_obj is None

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
