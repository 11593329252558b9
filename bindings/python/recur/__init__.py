# SPDX-License-Identifier: Apache-2.0
"""recur: Keras recurrent models (GRU, LSTM, SimpleRNN and the models around them) with Keras's
own numbers, from NumPy, without TensorFlow.

    import recur
    model = recur.load_model("model.keras")   # or .h5, or the file's bytes
    y = model.predict(x)                       # as Keras's model.predict(x)

See :func:`load_model`, :class:`Model` (predict, stateful models, streams) and
:mod:`recur.layers` (single Keras layers and cells built from their config)."""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

from . import _native
from ._native import (
    CancelledError,
    InternalError,
    InvalidArgumentError,
    IOError,
    LimitError,
    OutOfMemoryError,
    ParseError,
    RecurError,
    ShapeError,
    StateError,
    UnsupportedError,
)
from .model import Model, RunOptions, Stream, TensorSpec, load_model

__version__: str = _native.recur_binding_version()

__all__ = [
    "load_model", "Model", "Stream", "TensorSpec", "RunOptions", "layers",
    "RecurError", "InvalidArgumentError", "ShapeError", "UnsupportedError", "ParseError", "StateError",
    "OutOfMemoryError", "IOError", "LimitError", "CancelledError", "InternalError",
    "cpu_kernels", "device_count", "device_available", "get_limit", "set_limit", "default_limit", "limits",
    "set_log_handler", "live_handles", "__version__",
]

_LIMITS = {
    "units": _native.LIMIT_UNITS,
    "batch": _native.LIMIT_BATCH,
    "state_bytes": _native.LIMIT_STATE_BYTES,
    "weight_bytes": _native.LIMIT_WEIGHT_BYTES,
    "file_bytes": _native.LIMIT_FILE_BYTES,
    "tensor_bytes": _native.LIMIT_TENSOR_BYTES,
    "total_state_bytes": _native.LIMIT_TOTAL_STATE_BYTES,
    "run_bytes": _native.LIMIT_RUN_BYTES,
    "timesteps": _native.LIMIT_TIMESTEPS,
    "init_work": _native.LIMIT_INIT_WORK,
    "run_work": _native.LIMIT_RUN_WORK,
}

_LOG_LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3}


def __getattr__(name: str):  # recur.layers on first use, so that `import recur` stays small
    if name == "layers":
        import importlib  # not `from . import layers`: that looks the attribute up here again

        return importlib.import_module(".layers", __name__)
    raise AttributeError("module 'recur' has no attribute %r" % name)


def cpu_kernels() -> str:
    """The CPU kernel set this process runs: "avx512", "avx2", "neon" or "baseline"."""
    return _native.recur_binding_cpu_kernels()


def device_count() -> int:
    """How many CUDA devices recur can use (0 without the GPU plugin or a GPU; not an error)."""
    return int(_native.recur_binding_device_count())


def device_available(device: str) -> bool:
    """True when `device` ("cpu", "cuda", "cuda:N", "auto") can run now. A string that is not a
    device raises InvalidArgumentError."""
    try:
        _native.recur_binding_device_check(device)
        return True
    except InvalidArgumentError:
        raise
    except RecurError:
        return False


def _limit_id(name: str) -> int:
    try:
        return _LIMITS[name]
    except KeyError:
        raise _error("InvalidArgumentError", "limit: unknown limit %r; the limits are %s" % (name, ", ".join(_LIMITS))) from None


def _error(cls: str, msg: str) -> Exception:
    from ._util import error

    return error(cls, msg)


def get_limit(name: str) -> int:
    """The current value of a process-wide resource limit: "units", "batch", "state_bytes",
    "weight_bytes", "file_bytes", "tensor_bytes", or one of the budgets over the whole (since 0.8):
    "total_state_bytes", "run_bytes", "timesteps", "init_work", "run_work"."""
    return int(_native.recur_binding_get_limit(_limit_id(name)))


def default_limit(name: str) -> int:
    """The built-in default of a limit."""
    return int(_native.recur_binding_default_limit(_limit_id(name)))


def set_limit(name: str, value: int) -> None:
    """Sets a process-wide limit (0 restores its default). Going over one raises LimitError,
    naming it. Models and layers opened after the call see the new value."""
    if not isinstance(value, int) or value < 0:
        raise _error("InvalidArgumentError", "value: expected a non-negative integer, got %r" % (value,))
    _native.recur_binding_set_limit(_limit_id(name), value)


def limits() -> Dict[str, int]:
    """Every limit's current value, by name."""
    return {k: get_limit(k) for k in _LIMITS}


def set_log_handler(handler: Optional[Callable[[int, str], None]], level: str = "info") -> None:
    """Installs a process-wide handler(level, message) that hears what recur decided and why
    (the CPU kernel set, each layer's device and route, fallbacks, a summary of each model
    opened). Messages below `level` ("debug", "info", "warning", "error") are not built. The
    handler may be called from any thread recur runs on; what it raises is reported as
    unraisable and never reaches the call that logged. None turns logging off."""
    global _log_atexit
    if level not in _LOG_LEVELS:
        raise _error("InvalidArgumentError", "level: expected one of %s, got %r" % (", ".join(_LOG_LEVELS), level))
    _native.recur_py_set_log_handler(handler, _LOG_LEVELS[level])
    if handler is not None and not _log_atexit:
        # recur's threads must not call into an interpreter that is shutting down.
        import atexit

        atexit.register(_native.recur_py_set_log_handler, None, 0)
        _log_atexit = True


_log_atexit = False


def live_handles() -> Tuple[int, int, int, int]:
    """(layers, states, models, model streams) alive in this process, for leak checks."""
    return tuple(int(v) for v in _native.recur_binding_live_handles())  # type: ignore[return-value]
