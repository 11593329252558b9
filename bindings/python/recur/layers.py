# SPDX-License-Identifier: Apache-2.0
"""Keras's recurrent layers and cells, computed by recur with Keras's numbers.

Sequence layers: :class:`GRU`, :class:`LSTM`, :class:`SimpleRNN`, :class:`CuDNNGRU` and
:class:`CuDNNLSTM` (Keras 2 only). Cells: :class:`GRUCell`, :class:`LSTMCell` and
:class:`SimpleRNNCell`. They take Keras's constructor arguments (or a Keras config, with
``from_config``), Keras's weights in Keras's layouts (``get_weights``/``set_weights``) and are
called as Keras calls them::

    import numpy as np, recur.layers as rl
    gru = rl.GRU(4, input_size=3, return_sequences=True, dialect="keras3")
    gru.set_weights(keras_gru.get_weights())
    y = gru(x, mask=mask)                       # x: (batch, timesteps, 3) -> (batch, timesteps, 4)
    with gru.new_state(batch=2) as s:           # streaming: a few timesteps at a time
        y0 = s.step(x[:, :5]); y1 = s.step(x[:, 5:])

``dialect`` picks Keras 2 (tf.keras / tf-keras) or Keras 3 semantics. Arrays of any real dtype are
converted to float32 once; outputs are new float32 arrays. Every error is one of recur's exception
classes (recur.InvalidArgumentError, recur.ShapeError, recur.StateError, ...) with a message that
names the argument.

Threads: every method may be called from any thread, and recur runs without the GIL. Calls that
change a layer (``__call__``, cell calls, ``set_weights``, ``reset_states``, device moves, ...)
run one at a time on that layer; streaming steps (``LayerState.step``) of different states run
concurrently on one layer. A ``LayerState`` is used by one thread at a time (the binding
serializes calls on it).
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import numbers
import threading
from typing import (TYPE_CHECKING, Any, Callable, ClassVar, Dict, Iterator, List, NamedTuple, Optional, Sequence,
                    Tuple, Type, TypeVar, Union)

from . import _native as _N
from ._util import as_float32, as_mask, configure, describe, error, np

if TYPE_CHECKING:  # NumPy is imported on first use at run time
    import numpy

__all__ = [
    "RecurrentLayer", "SequenceLayer", "Cell", "LayerState", "DeviceInfo", "WeightInfo",
    "GRU", "LSTM", "SimpleRNN", "CuDNNGRU", "CuDNNLSTM", "GRUCell", "LSTMCell", "SimpleRNNCell",
    "deserialize", "from_keras_json",
]

#: Anything NumPy turns into an array of real numbers.
ArrayLike = Any
#: A Keras initializer, regularizer or constraint: a name ("glorot_uniform", "l2", "max_norm"),
#: Keras JSON as a dict ({"class_name": "Orthogonal", "config": {"gain": 2.0}}) or as a string.
KerasObject = Union[str, Dict[str, Any], None]

_L = TypeVar("_L", bound="RecurrentLayer")

_DIALECTS = {"keras2": _N.DIALECT_KERAS2, "keras3": _N.DIALECT_KERAS3}
_DIALECT_NAMES = {v: k for k, v in _DIALECTS.items()}
_STATE_NAMES = ("h", "c")
_INT32_MAX = 2**31 - 1


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

class DeviceInfo(NamedTuple):
    """Where a layer or state runs and why (recur_device_info)."""

    requested: str
    """"cpu", "cuda:N" or "auto", as last set ("cpu" by default)."""
    backend: str
    """Where calls run now: "cpu" or "cuda:N"."""
    path: str
    """"cpu", "cudnn" or "kernel" for a layer; "cpu" or "device-resident" for a state."""
    reason: str
    """Why this backend and path, e.g. why "auto" stayed on the CPU."""
    device_name: str
    """The GPU's name and cuDNN version; "" on the CPU."""


class WeightInfo(NamedTuple):
    """One weight of a layer, in Keras's get_weights order."""

    name: str
    """"kernel", "recurrent_kernel" or "bias"."""
    shape: Tuple[int, ...]
    """Keras's shape of the weight (CuDNN layers: their own CuDNN layout)."""


def _int(value: Any, what: str, low: int = -_INT32_MAX - 1) -> int:
    """value as a Python int that fits the C ABI's int32 (bools and floats refused)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise error("InvalidArgumentError", "%s: expected an integer, got %s" % (what, describe(value)))
    v = int(value.__index__())
    if not low <= v <= _INT32_MAX:
        raise error("InvalidArgumentError", "%s: expected an integer in [%d, %d], got %d" % (what, low, _INT32_MAX, v))
    return v


def _flag(value: Any, what: str) -> bool:
    """A Keras boolean argument: True/False (or NumPy's bools, or 0/1)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise error("InvalidArgumentError", "%s: expected True or False, got %s" % (what, describe(value)))


def _training(value: Any) -> int:
    """Keras's training argument: True, False or None (= False: inference) as the C ABI's 0/1."""
    return 0 if value is None else int(_flag(value, "training"))


def _json_default(o: Any) -> Any:
    # NumPy scalars and arrays in a config dict (e.g. batch_input_shape from a tf.TensorShape).
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError("%s is not JSON serializable" % type(o).__name__)


def _keras_object(value: KerasObject, what: str) -> Optional[str]:
    """An initializer/regularizer/constraint argument as the C ABI's string (None: unset)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, default=_json_default)
    raise error("InvalidArgumentError",
                "%s: expected a Keras name (str) or Keras JSON (dict), got %s" % (what, describe(value)))


def _dialect(value: Any, what: str = "dialect", allow_auto: bool = False) -> int:
    if value is None and allow_auto:
        return _N.DIALECT_AUTO
    if isinstance(value, str) and value.lower() in _DIALECTS:
        return _DIALECTS[value.lower()]
    raise error("InvalidArgumentError", "%s: expected \"keras2\" or \"keras3\"%s, got %s"
                % (what, " or None (detect it from the config)" if allow_auto else "", describe(value)))


def _device_string(device: Any, what: str = "device") -> str:
    if not isinstance(device, str):
        raise error("InvalidArgumentError",
                    "%s: expected \"cpu\", \"cuda\", \"cuda:N\" or \"auto\", got %s" % (what, describe(device)))
    return device


def _tuple(v: Sequence[int]) -> Tuple[int, ...]:
    return tuple(int(d) for d in v)


class _ExclusiveGuard:
    """A native handle and the lock that guards it, held alone by every call (a stream's state:
    one thread at a time) and by close; no handle = closed. The base of :class:`_Guard`."""

    __slots__ = ("handle", "what", "_mutex")

    def __init__(self, handle: Any, what: str) -> None:
        self.handle = handle
        self.what = what
        self._mutex = threading.Lock()

    def closed_error(self) -> Exception:
        return error("StateError", "%s is closed (close() was called); create a new one" % self.what)

    def acquire(self, write: bool) -> Any:
        self._mutex.acquire()
        if self.handle is None:
            self._mutex.release()
            raise self.closed_error()
        return self.handle

    def release(self, write: bool) -> None:
        self._mutex.release()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        h = self.acquire(False)
        try:
            yield h
        finally:
            self.release(False)

    @contextlib.contextmanager
    def writing(self) -> Iterator[Any]:
        h = self.acquire(True)
        try:
            yield h
        finally:
            self.release(True)

    def close(self) -> None:
        """Frees the handle once it is idle (the native object goes with its last reference)."""
        with self._mutex:
            self.handle = None


class _Guard(_ExclusiveGuard):
    """A native handle and the lock that guards it (as the Go binding's `native`): calls that only
    read the object share it, calls that change it (and close) hold it alone; no handle = closed.
    A waiting writer blocks new readers, so close() is not starved by a busy stream."""

    __slots__ = ("_cond", "_readers", "_writer", "_waiting", "_sleepers")

    def __init__(self, handle: Any, what: str) -> None:
        super().__init__(handle, what)
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._waiting = 0  # writers (and close) waiting: new readers wait behind them
        self._sleepers = 0  # threads in wait(): only then does a release notify

    def _wait_while(self, busy: Callable[[], bool], writer: bool) -> None:
        self._sleepers += 1
        self._waiting += writer
        try:
            while busy():
                self._cond.wait()
        finally:
            self._sleepers -= 1
            self._waiting -= writer

    def acquire(self, write: bool) -> Any:
        with self._mutex:
            if write:
                if self._writer or self._readers:
                    self._wait_while(lambda: self._writer or self._readers > 0, True)
            elif self._writer or self._waiting:
                self._wait_while(lambda: self._writer or self._waiting > 0, False)
            if self.handle is None:
                if self._sleepers:
                    self._cond.notify_all()
                raise self.closed_error()
            if write:
                self._writer = True
            else:
                self._readers += 1
            return self.handle

    def release(self, write: bool) -> None:
        with self._mutex:
            if write:
                self._writer = False
            else:
                self._readers -= 1
            if self._sleepers and not self._writer and not self._readers:
                self._cond.notify_all()

    def close(self) -> None:
        with self._mutex:
            if self._writer or self._readers:
                self._wait_while(lambda: self._writer or self._readers > 0, True)
            self.handle = None
            if self._sleepers:
                self._cond.notify_all()


def _device_info(get: Callable[[], Sequence[str]]) -> DeviceInfo:
    return DeviceInfo(*(s or "" for s in get()))


# ---------------------------------------------------------------------------------------------
# The base class
# ---------------------------------------------------------------------------------------------

class RecurrentLayer:
    """What Keras's recurrent layers and cells have in common: construction from Keras arguments
    or a Keras config, weights, losses and constraints, devices and threads, and close().

    Not instantiated itself: use :class:`GRU`, :class:`LSTM`, ... ``RecurrentLayer.from_config``
    (or :func:`deserialize`) returns the class the config names.
    """

    _type: ClassVar[int] = 0
    _keras_name: ClassVar[str] = "recurrent"  # Keras's default layer name
    _default_dialect: ClassVar[str] = "keras3"
    _info_keys: ClassVar[Tuple[str, ...]] = ("units", "input_size", "num_states", "num_weights", "implementation")

    _guard: _Guard
    _info: Dict[str, int]
    _name: str
    _keras_backend: str
    _recipe: Optional[Tuple[str, Any]]

    def __init__(
        self,
        units: int,
        *,
        input_size: int,
        activation: Optional[str] = "tanh",
        recurrent_activation: Optional[str] = "sigmoid",
        use_bias: bool = True,
        kernel_initializer: KerasObject = None,
        recurrent_initializer: KerasObject = None,
        bias_initializer: KerasObject = None,
        unit_forget_bias: bool = True,
        kernel_regularizer: KerasObject = None,
        recurrent_regularizer: KerasObject = None,
        bias_regularizer: KerasObject = None,
        activity_regularizer: KerasObject = None,
        kernel_constraint: KerasObject = None,
        recurrent_constraint: KerasObject = None,
        bias_constraint: KerasObject = None,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        reset_after: bool = True,
        time_major: bool = False,
        zero_output_for_mask: bool = False,
        implementation: Optional[int] = None,
        batch_size: Optional[int] = None,
        seed: Optional[int] = None,
        trainable: bool = True,
        name: Optional[str] = None,
        dialect: Optional[str] = None,
        keras_version: Optional[str] = None,
        device: Optional[str] = None,
        num_threads: Optional[int] = None,
        keras_backend: Optional[str] = None,
        precision: Optional[str] = None,
    ) -> None:
        """Creates the layer and initialises its weights with its initializers, as Keras's
        constructor and build do.

        Keras's arguments, with Keras's defaults and meaning (``activation=None`` is linear, as in
        Keras). An argument left at its default lets recur apply the class's own Keras default,
        so arguments a class does not take (``recurrent_activation`` of a SimpleRNN, ``dropout``
        of a CuDNNGRU, ``return_sequences`` of a cell, ...) only fail, naming the argument, when
        they are given another value.

        Args:
            units: the layer's units (> 0).
            input_size: the size of the inputs' last axis (Keras infers it at build).
            kernel_initializer ... bias_constraint: a Keras name ("glorot_uniform", "l2",
                "max_norm") or Keras JSON ({"class_name": "Orthogonal", "config": {"gain": 2.0}});
                None = the Keras default initializer, no regularizer or constraint.
            dropout, recurrent_dropout: rates in [0, 1]; they apply in calls with training=True.
            stateful: needs ``batch_size``, the fixed batch of the layer's states.
            time_major: Keras 2 only; inputs and outputs are (timesteps, batch, ...).
            implementation: 1 or 2 (None: Keras's default).
            seed: seeds the initializers and dropout masks (None: random).
            name: the layer's name (in messages and ``info``).
            dialect: "keras3" (the default; "keras2" for the CuDNN layers) or "keras2".
            keras_version: e.g. "2.15.0" or "3.3.3" for the formulas that changed within a
                dialect; None = the newest.
            device, num_threads, keras_backend, precision: set the properties of the same names.
        """
        # The arguments, to re-create the layer when it is unpickled (device and threads are read
        # back from the layer then).
        recipe = {k: v for k, v in locals().items() if k not in ("self", "device", "num_threads", "keras_backend", "precision")}
        if type(self)._type == 0:
            raise error("InvalidArgumentError", "RecurrentLayer is a base class: create a GRU, LSTM, SimpleRNN, "
                        "CuDNNGRU, CuDNNLSTM, GRUCell, LSTMCell or SimpleRNNCell")
        opts = _N.LayerOptions()
        opts.type = self._type
        opts.dialect = _dialect(self._default_dialect if dialect is None else dialect)
        opts.units = _int(units, "units")
        opts.input_size = _int(input_size, "input_size")
        # Activations: None is Keras's linear; the defaults stay unset (recur's own defaults are
        # Keras's, and classes without the argument refuse any value).
        for setter, act, default, what in ((opts.set_activation, activation, "tanh", "activation"),
                                           (opts.set_recurrent_activation, recurrent_activation, "sigmoid",
                                            "recurrent_activation")):
            if act is None:
                act = "linear"
            if not isinstance(act, str):
                raise error("InvalidArgumentError",
                            "%s: expected a Keras activation name (str) or None, got %s" % (what, describe(act)))
            if act != default:
                setter(act)
        for what, obj in (("kernel_initializer", kernel_initializer),
                          ("recurrent_initializer", recurrent_initializer),
                          ("bias_initializer", bias_initializer), ("kernel_regularizer", kernel_regularizer),
                          ("recurrent_regularizer", recurrent_regularizer),
                          ("bias_regularizer", bias_regularizer), ("activity_regularizer", activity_regularizer),
                          ("kernel_constraint", kernel_constraint), ("recurrent_constraint", recurrent_constraint),
                          ("bias_constraint", bias_constraint)):
            text = _keras_object(obj, what)
            if text is not None:
                getattr(opts, "set_" + what)(text)
        flags = (("use_bias", use_bias, True), ("unit_forget_bias", unit_forget_bias, True),
                 ("return_sequences", return_sequences, False), ("return_state", return_state, False),
                 ("go_backwards", go_backwards, False), ("stateful", stateful, False), ("unroll", unroll, False),
                 ("reset_after", reset_after, True), ("time_major", time_major, False),
                 ("zero_output_for_mask", zero_output_for_mask, False), ("trainable", trainable, True))
        for what, flag, keras_default in flags:
            if _flag(flag, what) != keras_default:
                setattr(opts, what, int(not keras_default))
        for what, rate_arg in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if isinstance(rate_arg, bool) or not isinstance(rate_arg, numbers.Real):
                raise error("InvalidArgumentError",
                            "%s: expected a rate in [0, 1], got %s" % (what, describe(rate_arg)))
            rate = float(rate_arg)
            if not 0.0 <= rate <= 1.0:  # NaN included
                raise error("InvalidArgumentError", "%s: expected a rate in [0, 1], got %r" % (what, rate))
            if rate != 0.0:
                setattr(opts, what, rate)
        if implementation is not None:
            opts.implementation = _int(implementation, "implementation")
        if batch_size is not None:
            opts.batch_size = _int(batch_size, "batch_size")
        if seed is not None:
            if isinstance(seed, bool) or not hasattr(seed, "__index__") or not -1 <= seed.__index__() < 2**63:
                raise error("InvalidArgumentError", "seed: expected an integer >= 0 (or None: random), got %s"
                            % describe(seed))
            opts.seed = seed.__index__()
        if name is not None:
            if not isinstance(name, str):
                raise error("InvalidArgumentError", "name: expected a str, got %s" % describe(name))
            opts.set_name(name)
        if keras_version is not None:
            if not isinstance(keras_version, str):
                raise error("InvalidArgumentError",
                            "keras_version: expected a version string such as \"3.3.3\", got %s"
                            % describe(keras_version))
            opts.set_keras_version(keras_version)
        self._adopt(_N.Layer.create(opts), name)
        self._recipe = ("kwargs", recipe)
        self._configure(device, num_threads, keras_backend, precision)

    # ---- construction from configs and native handles ----

    def _adopt(self, handle: Any, name: Optional[str]) -> None:
        self._recipe = None  # how to re-create it (None: it came from a model)
        info = handle.get_info()
        self._info = info
        self._name = name if name else self._keras_name
        self._keras_backend = "tensorflow"
        self._guard = _Guard(handle, "%s '%s'" % (type(self).__name__, self._name))

    def _configure(self, device: Optional[str], num_threads: Optional[int], keras_backend: Optional[str],
                   precision: Optional[str] = None) -> None:
        configure(self, device, num_threads, keras_backend, precision)

    @classmethod
    def _class_of(cls, layer_type: int) -> Type["RecurrentLayer"]:
        for c in _CLASSES:
            if c._type == layer_type:
                return c
        raise error("InternalError", "recur returned a layer of unknown type %d" % layer_type)

    @classmethod
    def _wrap(cls: Type[_L], handle: Any, name: Optional[str], source: str) -> _L:
        """A layer object of the class the native layer is; cls must be it or a base of it."""
        actual = cls._class_of(handle.get_info()["type"])
        if not issubclass(actual, cls):
            raise error("InvalidArgumentError",
                        "%s.%s: the config is a %s, not a %s; use recur.layers.%s.%s or recur.layers.deserialize"
                        % (cls.__name__, source, actual.__name__, cls.__name__, actual.__name__, source))
        layer = actual.__new__(actual)
        layer._adopt(handle, name)
        return layer

    @classmethod
    def from_keras_json(cls: Type[_L], json_str: Union[str, bytes], input_size: Optional[int] = None,
                        dialect: Optional[str] = None, keras_version: Optional[str] = None, *,
                        device: Optional[str] = None, num_threads: Optional[int] = None,
                        keras_backend: Optional[str] = None, precision: Optional[str] = None) -> _L:
        """The layer that Keras JSON describes: ``{"class_name": "GRU", "config": {...}}`` as
        Keras 2's ``layer.to_json()``/``serialize`` or Keras 3's ``serialize_keras_object`` write
        it.

        Args:
            json_str: the JSON text.
            input_size: the inputs' last axis; None takes it from the config's
                batch_input_shape / build_config.
            dialect: "keras2", "keras3", or None to detect it from the fields (Keras 3 when
                nothing tells).
            keras_version: as in the constructor.
            device, num_threads, keras_backend, precision: set the properties of the same names.

        Raises:
            recur.ParseError: malformed JSON.
            recur.InvalidArgumentError: an unknown field or value (named), or a config of another
                class than ``cls`` (``RecurrentLayer.from_keras_json`` takes any).
            recur.UnsupportedError: valid Keras that the dialect does not have.
        """
        if not isinstance(json_str, (str, bytes)):
            raise error("InvalidArgumentError", "json_str: expected a str of Keras JSON, got %s" % describe(json_str))
        text = json_str.decode("utf-8", "replace") if isinstance(json_str, bytes) else json_str
        return cls._from_text(text, input_size, dialect, keras_version, "from_keras_json",
                              (device, num_threads, keras_backend, precision))

    @classmethod
    def _from_text(cls: Type[_L], text: str, input_size: Optional[int], dialect: Optional[str],
                   keras_version: Optional[str], source: str, settings: Tuple[Any, ...]) -> _L:
        size = 0 if input_size is None else _int(input_size, "input_size")
        if keras_version is not None and not isinstance(keras_version, str):
            raise error("InvalidArgumentError", "keras_version: expected a str, got %s" % describe(keras_version))
        handle = _N.Layer.create_from_json(text, size, _dialect(dialect, allow_auto=True), keras_version)
        name = None
        try:  # valid JSON: recur parsed it
            cfg = json.loads(text).get("config")
            if isinstance(cfg, dict) and isinstance(cfg.get("name"), str):
                name = cfg["name"]
        except (ValueError, AttributeError):
            pass
        layer = cls._wrap(handle, name, source)
        layer._recipe = ("json", (text, input_size, dialect, keras_version))
        layer._configure(*settings)
        return layer

    @classmethod
    def from_config(cls: Type[_L], config: Dict[str, Any], input_size: Optional[int] = None,
                    dialect: Optional[str] = None, keras_version: Optional[str] = None, *,
                    device: Optional[str] = None, num_threads: Optional[int] = None,
                    keras_backend: Optional[str] = None, precision: Optional[str] = None) -> _L:
        """The layer of a Keras config dict: ``layer.get_config()`` (the class is then ``cls``)
        or the ``{"class_name": ..., "config": {...}}`` form of ``serialize``.
        Arguments and errors as :meth:`from_keras_json`."""
        if not isinstance(config, dict):
            raise error("InvalidArgumentError", "config: expected a dict (a Keras layer config), got %s"
                        % describe(config))
        if "class_name" not in config or "config" not in config:
            if cls._type == 0:
                raise error("InvalidArgumentError", "config: a bare get_config() dict does not name its class; "
                            "call GRU.from_config (etc.) or pass {\"class_name\": ..., \"config\": ...}")
            config = {"class_name": cls.__name__, "config": config}
        try:
            text = json.dumps(config, default=_json_default)
        except (TypeError, ValueError) as e:
            raise error("InvalidArgumentError", "config: cannot be written as JSON (%s)" % e) from None
        return cls._from_text(text, input_size, dialect, keras_version, "from_config",
                              (device, num_threads, keras_backend, precision))

    # ---- lifetime ----

    def close(self) -> None:
        """Frees the native layer (after calls in progress). Idempotent; states created for the
        layer stay valid objects, but stepping them needs a layer. Any later use raises
        recur.StateError."""
        self._guard.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._guard.handle is None

    def __enter__(self: _L) -> _L:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<recur.layers.%s '%s' (closed)>" % (type(self).__name__, self._name)
        return "<recur.layers.%s '%s' units=%d input_size=%d %s>" % (
            type(self).__name__, self._name, self._info["units"], self._info["input_size"], self.dialect)

    def __reduce__(self) -> Tuple[Any, ...]:
        """Pickling (and copy.deepcopy): the layer's arguments or config, its weights, device,
        num_threads, keras_backend and precision; not the states of a stateful layer, nor cached dropout
        masks. A layer taken from a model file cannot be pickled (pickle the model)."""
        if self._recipe is None:
            raise TypeError("%s came from a model file and cannot be pickled alone; pickle the model, or re-create "
                            "the layer with from_config and set_weights" % self._guard.what)
        settings = (self.device, self.num_threads, self.keras_backend, self.precision)
        return (_unpickle, (type(self).__name__, self._recipe, self.get_weights(), settings))

    def _reading(self) -> Any:
        return self._guard.reading()

    def _writing(self) -> Any:
        return self._guard.writing()

    def _checked_info(self) -> Dict[str, int]:
        with self._reading():
            return self._info

    # ---- what it is ----

    @property
    def name(self) -> str:
        """The layer's name (the config's, the constructor's, or Keras's default)."""
        return self._name

    @property
    def units(self) -> int:
        """The layer's units."""
        return self._checked_info()["units"]

    @property
    def input_size(self) -> int:
        """The size of the inputs' last axis."""
        return self._checked_info()["input_size"]

    @property
    def num_states(self) -> int:
        """1 (h: GRU, SimpleRNN) or 2 (h, c: LSTM)."""
        return self._checked_info()["num_states"]

    @property
    def dialect(self) -> str:
        """"keras2" or "keras3"."""
        return _DIALECT_NAMES.get(self._checked_info()["dialect"], "keras3")

    @property
    def info(self) -> Dict[str, Any]:
        """What the layer is, defaults resolved (like Keras's get_config, in recur's terms):
        class_name, name, dialect, units, input_size, num_states, num_weights, implementation, and
        for sequence layers return_sequences, return_state, go_backwards, stateful, time_major,
        batch_size (None unless stateful); for GRUs reset_after."""
        i = self._checked_info()
        out: Dict[str, Any] = {"class_name": type(self).__name__, "name": self._name, "dialect": self.dialect}
        for k in self._info_keys:
            v = i[k]
            out[k] = bool(v) if k in ("return_sequences", "return_state", "go_backwards", "stateful",
                                      "time_major", "reset_after") else v
        if "batch_size" in out and not out["batch_size"]:
            out["batch_size"] = None
        if self._type in (_N.LAYER_GRU, _N.LAYER_GRU_CELL, _N.LAYER_CUDNN_GRU):
            out["reset_after"] = bool(i["reset_after"])
        return out

    # ---- weights ----

    def _weight_infos(self, h: Any) -> List[WeightInfo]:
        out = []
        for i in range(h.num_weights()):
            d0, d1, nd = h.weight_shape(i)
            out.append(WeightInfo(h.weight_name(i), (d0,) if nd == 1 else (d0, d1)))
        return out

    @property
    def weights(self) -> List[WeightInfo]:
        """The weights' names and shapes in get_weights order: kernel, recurrent_kernel[, bias]."""
        with self._reading() as h:
            return self._weight_infos(h)

    @property
    def weight_names(self) -> List[str]:
        """["kernel", "recurrent_kernel", "bias"] (no "bias" without use_bias)."""
        return [w.name for w in self.weights]

    def get_weights(self) -> List["numpy.ndarray"]:
        """Keras's ``get_weights()``: new float32 arrays in Keras's order, layouts and shapes."""
        n = np()
        with self._reading() as h:
            out = []
            for i, w in enumerate(self._weight_infos(h)):
                a = n.empty(w.shape, n.float32)
                h.get_weight(i, a)
                out.append(a)
            return out

    def _weight_index(self, h: Any, key: Union[int, str]) -> int:
        names = [h.weight_name(i) for i in range(h.num_weights())]
        if isinstance(key, str):
            if key not in names:
                raise error("InvalidArgumentError", "weight: expected one of %s, got %r" % (", ".join(names), key))
            return names.index(key)
        i = _int(key, "weight")
        if not 0 <= i < len(names):
            raise error("InvalidArgumentError", "weight: expected an index in [0, %d) or a name (%s), got %d"
                        % (len(names), ", ".join(names), i))
        return i

    def get_weight(self, weight: Union[int, str]) -> "numpy.ndarray":
        """One weight by index or name ("kernel", "recurrent_kernel", "bias"), as a new array."""
        n = np()
        with self._reading() as h:
            i = self._weight_index(h, weight)
            a = n.empty(self._weight_infos(h)[i].shape, n.float32)
            h.get_weight(i, a)
            return a

    def _checked_weight(self, w: WeightInfo, value: ArrayLike, what: str) -> "numpy.ndarray":
        a = as_float32(value, what)
        if a.shape != w.shape:
            raise error("ShapeError", "%s (%s): expected shape %s, got %s" % (what, w.name, w.shape, tuple(a.shape)))
        return a

    def set_weight(self, weight: Union[int, str], value: ArrayLike) -> None:
        """Sets one weight (by index or name) from an array of its exact shape."""
        with self._writing() as h:
            i = self._weight_index(h, weight)
            w = self._weight_infos(h)[i]
            h.set_weight(i, self._checked_weight(w, value, "weights[%d]" % i))

    def set_weights(self, weights: Sequence[ArrayLike]) -> None:
        """Keras's ``set_weights(weights)``: arrays in get_weights order, each of its exact shape
        (CuDNN layers take their CuDNN layout). Checked before anything changes."""
        n = np()
        if isinstance(weights, (str, bytes, dict)) or not hasattr(weights, "__len__") or (
                type(weights).__name__ == "ndarray"):
            raise error("InvalidArgumentError", "weights: expected a list of arrays (as get_weights returns), got %s"
                        % describe(weights))
        with self._writing() as h:
            infos = self._weight_infos(h)
            if len(weights) != len(infos):
                raise error("InvalidArgumentError", "weights: expected %d arrays (%s), got %d"
                            % (len(infos), ", ".join(w.name for w in infos), len(weights)))
            arrays = [self._checked_weight(w, v, "weights[%d]" % i) for i, (w, v) in enumerate(zip(infos, weights))]
            h.set_weights(n.concatenate([a.reshape(-1) for a in arrays]))

    # ---- losses and constraints ----

    def _losses(self) -> List[Tuple[str, float]]:
        n = np()
        with self._reading() as h:
            count = h.get_losses(None)
            if count == 0:
                return []
            values = n.empty(count, n.float32)
            h.get_losses(values)
            return [(h.loss_name(i), float(values[i])) for i in range(count)]

    @property
    def losses(self) -> List[float]:
        """Keras's ``layer.losses``: the activity-regularizer penalties of the last call (one per
        output, states included with return_state), then the kernel, recurrent_kernel and bias
        penalties; names in :attr:`loss_names`."""
        return [v for _, v in self._losses()]

    @property
    def loss_names(self) -> List[str]:
        """The names of :attr:`losses`: "activity:output", "activity:state_h",
        "activity:state_c", "kernel", "recurrent_kernel", "bias"."""
        with self._reading() as h:
            return [h.loss_name(i) for i in range(h.get_losses(None))]

    def apply_constraints(self) -> None:
        """Applies the kernel/recurrent/bias constraints to the weights, as an optimizer does
        after an update (nothing without constraints)."""
        with self._writing() as h:
            h.apply_constraints()

    # ---- where and how it runs ----

    @property
    def device(self) -> str:
        """The device asked for: "cpu" (the default), "cuda:N" or "auto". Setting it moves the
        weights (and a stateful layer's states) there: "cpu", "cuda", "cuda:N" or "auto" (a GPU
        when one can run, else the CPU; device_info says why). A GPU that cannot run raises
        recur.UnsupportedError and leaves the layer where it was."""
        return self.device_info.requested

    @device.setter
    def device(self, device: str) -> None:
        with self._writing() as h:
            h.set_device(_device_string(device))

    @property
    def device_info(self) -> DeviceInfo:
        """Where the layer runs, by which route ("cpu", "cudnn" or "kernel") and why."""
        with self._reading() as h:
            return _device_info(h.get_device)

    @property
    def num_threads(self) -> int:
        """Threads one CPU call may use: 1 (the default) runs on the calling thread only, 0 one
        per core. Results are bitwise the same for every count."""
        with self._reading() as h:
            return int(h.get_num_threads())

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        with self._writing() as h:
            h.set_num_threads(_int(n, "num_threads"))

    @property
    def precision(self) -> str:
        """The precision of the kernel and recurrent kernel in the layer's matrix products on the
        CPU: "float32" (the default, Keras's numbers), "bf16" or "int8" (faster; the outputs then
        differ from Keras's, see docs/precision.md). The float32 weights are kept: get_weights is
        unchanged and "float32" again gives exactly the float32 numbers. Setting an unknown name
        raises InvalidArgumentError; on a GPU, UnsupportedError (the GPU runs float32 only)."""
        with self._reading() as h:
            return str(h.get_precision())

    @precision.setter
    def precision(self, name: str) -> None:
        if not isinstance(name, str):
            raise error("InvalidArgumentError", "precision: expected \"float32\", \"bf16\" or \"int8\", got %s"
                        % describe(name))
        with self._writing() as h:
            h.set_precision(name)

    @property
    def keras_backend(self) -> str:
        """Keras 3 backend semantics: "tensorflow" (the default) or "jax" (they differ in how
        masks are handled)."""
        with self._reading():
            return self._keras_backend

    @keras_backend.setter
    def keras_backend(self, backend: str) -> None:
        if not isinstance(backend, str):
            raise error("InvalidArgumentError", "keras_backend: expected \"tensorflow\" or \"jax\", got %s"
                        % describe(backend))
        with self._writing() as h:
            h.set_keras_backend(backend)
            self._keras_backend = backend

    # ---- shared by calls ----

    def _states_arg(self, value: Any, batch: int, what: str) -> Optional["numpy.ndarray"]:
        """A list of num_states (batch, units) arrays (a lone array for one state) as one
        contiguous float32 buffer; None stays None."""
        if value is None:
            return None
        ns, units = self._info["num_states"], self._info["units"]
        if not isinstance(value, (list, tuple)):
            if ns != 1:
                raise error("InvalidArgumentError", "%s: expected a list of %d arrays [h, c], got %s"
                            % (what, ns, describe(value)))
            value = [value]
        if len(value) != ns:
            raise error("InvalidArgumentError", "%s: expected %d array%s [%s], got %d"
                        % (what, ns, "s" if ns > 1 else "", ", ".join(_STATE_NAMES[:ns]), len(value)))
        arrays = []
        for i, v in enumerate(value):
            a = as_float32(v, "%s[%d]" % (what, i))
            if a.shape != (batch, units):
                raise error("ShapeError", "%s[%d] (%s): expected shape (%d, %d) (batch, units), got %s"
                            % (what, i, _STATE_NAMES[i], batch, units, tuple(a.shape)))
            arrays.append(a)
        return arrays[0] if ns == 1 else np().concatenate([a.reshape(-1) for a in arrays])

    def _new_states(self, batch: int) -> "numpy.ndarray":
        n = np()
        return n.empty((self._info["num_states"], batch, self._info["units"]), n.float32)

    def get_initial_state(self, batch_size: int) -> List["numpy.ndarray"]:
        """Keras's ``get_initial_state``: num_states zero arrays (batch_size, units)."""
        b = _int(batch_size, "batch_size", 1)
        return list(np().zeros((self.num_states, b, self._info["units"]), np().float32))


# ---------------------------------------------------------------------------------------------
# Sequence layers
# ---------------------------------------------------------------------------------------------

_state_ids = itertools.count()


class SequenceLayer(RecurrentLayer):
    """A Keras sequence layer (GRU, LSTM, SimpleRNN, CuDNNGRU, CuDNNLSTM): calls over whole
    sequences, stateful states, and streams (:meth:`new_state`)."""

    _info_keys = RecurrentLayer._info_keys + ("return_sequences", "return_state", "go_backwards", "stateful",
                                              "time_major", "batch_size")

    @property
    def return_sequences(self) -> bool:
        """The output holds every timestep (else the last one)."""
        return bool(self._checked_info()["return_sequences"])

    @property
    def return_state(self) -> bool:
        """Calls return [output, *final states]."""
        return bool(self._checked_info()["return_state"])

    @property
    def go_backwards(self) -> bool:
        """The sequence is read backwards (the output too, as Keras gives it)."""
        return bool(self._checked_info()["go_backwards"])

    @property
    def stateful(self) -> bool:
        """The layer keeps its final states for the next call (batch fixed at batch_size)."""
        return bool(self._checked_info()["stateful"])

    @property
    def time_major(self) -> bool:
        """Inputs and outputs are (timesteps, batch, ...) (Keras 2)."""
        return bool(self._checked_info()["time_major"])

    @property
    def batch_size(self) -> Optional[int]:
        """The fixed batch of a stateful layer; None otherwise."""
        return self._checked_info()["batch_size"] or None

    def _sequence(self, x: ArrayLike, what: str = "x") -> Tuple["numpy.ndarray", int, int]:
        """x as float32 (B, T, F) (or (T, B, F)) with its batch and timesteps."""
        a = as_float32(x, what)
        b, t = self._check_sequence(a, what)
        return a, b, t

    def _check_sequence(self, a: "numpy.ndarray", what: str) -> Tuple[int, int]:
        """The batch and timesteps of a float32 (B, T, F) (or (T, B, F)) array; a ShapeError for
        other shapes."""
        i = self._info
        axes = "(timesteps, batch, features)" if i["time_major"] else "(batch, timesteps, features)"
        if a.ndim != 3:
            raise error("ShapeError", "%s: expected a %s array, got shape %s" % (what, axes, tuple(a.shape)))
        if a.shape[2] != i["input_size"]:
            raise error("ShapeError", "%s: expected %d features (the last axis, input_size), got shape %s"
                        % (what, i["input_size"], tuple(a.shape)))
        return (a.shape[1], a.shape[0]) if i["time_major"] else (a.shape[0], a.shape[1])

    def _mask(self, mask: Any, x: "numpy.ndarray", what: str = "mask") -> Optional["numpy.ndarray"]:
        m = as_mask(mask, what)
        if m is not None and m.shape != x.shape[:2]:
            axes = "(timesteps, batch)" if self._info["time_major"] else "(batch, timesteps)"
            raise error("ShapeError", "%s: expected shape %s %s, as x's first two axes, got %s"
                        % (what, tuple(x.shape[:2]), axes, tuple(m.shape)))
        return m

    def _output(self, batch: int, timesteps: int) -> "numpy.ndarray":
        """A new output buffer of recur_layer_output_length(batch, timesteps) floats, shaped."""
        n = np()
        i = self._info
        if not i["return_sequences"]:
            return n.empty((batch, i["units"]), n.float32)
        if i["time_major"]:
            return n.empty((timesteps, batch, i["units"]), n.float32)
        return n.empty((batch, timesteps, i["units"]), n.float32)

    def compute_output_shape(self, input_shape: Sequence[Optional[int]]) -> Union[Tuple[Optional[int], ...],
                                                                                  List[Tuple[Optional[int], ...]]]:
        """Keras's ``compute_output_shape``: the output's shape for inputs of input_shape
        ((batch, timesteps, features); None for unknown sizes), and the states' with
        return_state."""
        i = self._checked_info()
        if len(input_shape) != 3:
            raise error("ShapeError", "input_shape: expected 3 axes (batch, timesteps, features), got %s"
                        % (tuple(input_shape),))
        b, t = (input_shape[1], input_shape[0]) if i["time_major"] else (input_shape[0], input_shape[1])
        if i["return_sequences"]:
            out: Tuple[Optional[int], ...] = (t, b, i["units"]) if i["time_major"] else (b, t, i["units"])
        else:
            out = (b, i["units"])
        if i["return_state"]:
            return [out] + [(b, i["units"])] * i["num_states"]
        return out

    def __call__(self, x: ArrayLike, mask: Optional[ArrayLike] = None, initial_state: Optional[Any] = None,
                 training: Optional[bool] = False) -> Union["numpy.ndarray", List["numpy.ndarray"]]:
        """Keras's layer call over a batch of sequences.

        Args:
            x: (batch, timesteps, input_size), or (timesteps, batch, input_size) with time_major;
                any real dtype (converted to float32 once).
            mask: None, or (batch, timesteps) booleans (x's first two axes), True = a valid step;
                any pattern. Masked steps carry the state and the previous output (zeros with
                zero_output_for_mask). CuDNN layers refuse masks, as Keras does.
            initial_state: None, or the states [h] (GRU, SimpleRNN; a lone array will do) or
                [h, c] (LSTM), each (batch, units).
            training: applies dropout and recurrent_dropout (None: inference, as False).

        Returns:
            The output ((batch, timesteps, units) with return_sequences, else (batch, units)), or
            with return_state the list [output, h] / [output, h, c], as Keras returns them.
        """
        a, b, t = self._sequence(x)
        m = self._mask(mask, a)
        init = self._states_arg(initial_state, b, "initial_state")
        ns = self._info["num_states"]
        train = _training(training)
        out = self._output(b, t)
        final = self._new_states(b) if self._info["return_state"] else None
        with self._writing() as h:
            h.forward(a, b, t, m, init, ns if init is not None else 0, train, out, final)
        if final is None:
            return out
        return [out] + list(final)

    # ---- stateful layers (Keras's layer.states / reset_states) ----

    def reset_states(self, states: Optional[Any] = None) -> None:
        """Keras's ``reset_states()``: zeros the states of a stateful layer; with ``states``
        (Keras 2's ``reset_states(states)``: [h] or [h, c], each (batch_size, units)) sets them.
        A layer that is not stateful raises recur.StateError."""
        if states is None:
            with self._writing() as h:
                h.reset_states()
        else:
            self.set_states(states)

    def reset_state(self) -> None:
        """Keras 3's ``reset_state()``: zeros the states of a stateful layer."""
        self.reset_states()

    def get_states(self) -> List["numpy.ndarray"]:
        """The current states of a stateful layer: [h] or [h, c], each (batch_size, units)."""
        with self._reading() as h:
            if not self._info["stateful"]:
                raise error("StateError", "get_states: %s is not stateful (Keras: \"Layer must be stateful.\")"
                            % self._guard.what)
            out = self._new_states(self._info["batch_size"])
            h.get_states(out)
            return list(out)

    def set_states(self, states: Any) -> None:
        """Sets the states of a stateful layer: [h] or [h, c], each (batch_size, units)."""
        with self._writing() as h:
            if not self._info["stateful"]:
                raise error("StateError", "set_states: %s is not stateful (Keras: \"Layer must be stateful.\")"
                            % self._guard.what)
            buf = self._states_arg(states, self._info["batch_size"], "states")
            h.set_states(buf, self._info["num_states"])

    @property
    def states(self) -> List["numpy.ndarray"]:
        """Keras's ``layer.states`` of a stateful layer (a copy); assigning sets them."""
        return self.get_states()

    @states.setter
    def states(self, states: Any) -> None:
        self.set_states(states)

    # ---- streams ----

    def new_state(self, batch: int = 1) -> "LayerState":
        """A stream of ``batch`` sequences starting from zero states, stepped a few timesteps at a
        time by :meth:`LayerState.step` (inference). Streams of one layer step concurrently;
        feeding a sequence in pieces gives the same outputs as one call."""
        b = _int(batch, "batch")
        with self._reading() as h:
            return LayerState(self, _N.State.create(h, b))

    def step_states(self, states: Sequence["LayerState"], x: ArrayLike,
                    mask: Optional[ArrayLike] = None) -> "numpy.ndarray":
        """One timestep of many independent streams as one batch (on the layer's device): x holds
        the rows of every state in order, (sum of their batches, input_size); mask None or one
        boolean per row. Returns (rows, units). Equals ``s.step`` of each state with one
        timestep. A state may appear once."""
        n = np()
        order = _state_order(states)
        rows = sum(s._shape[1] for s in states)
        a = as_float32(x, "x")
        if a.shape != (rows, self._info["input_size"]):
            raise error("ShapeError", "x: expected shape (%d, %d) (the states' rows, input_size), got %s"
                        % (rows, self._info["input_size"], tuple(a.shape)))
        m = as_mask(mask, "mask")
        if m is not None and m.shape != (rows,):
            raise error("ShapeError", "mask: expected shape (%d,) (one per row), got %s" % (rows, tuple(m.shape)))
        out = n.empty((rows, self._info["units"]), n.float32)
        with self._reading() as h, _locked_states(states, order) as handles:
            h.forward_states(handles, a, m, out)
        return out

    # ---- CUDA device memory ----

    def call_device(self, x: Any, output: Any, *, batch: Optional[int] = None, timesteps: Optional[int] = None,
                    mask: Optional[ArrayLike] = None, initial_state: Any = None, final_state: Any = None,
                    stream: int = 0) -> None:
        """The layer call on CUDA device memory of the layer's GPU (set ``device`` first), for
        callers that hold device buffers (CuPy, PyTorch, Numba, ...).

        x, output, initial_state and final_state are objects with ``__cuda_array_interface__``
        (C-contiguous float32) or raw device addresses (ints; then batch and timesteps are
        required). Shapes as in ``__call__``: initial_state/final_state hold the num_states
        (batch, units) states one after the other. mask stays a host array. stream is a
        cudaStream_t address (0: the default stream); the call returns once the outputs are
        written. A layer that is not on a GPU raises recur.StateError."""
        px, shape_x = _device_pointer(x, "x", False)
        if shape_x is not None:
            if len(shape_x) != 3:
                raise error("ShapeError", "x: expected 3 axes, got shape %s" % (shape_x,))
            b0, t0 = (shape_x[1], shape_x[0]) if self._info["time_major"] else (shape_x[0], shape_x[1])
            batch = b0 if batch is None else batch
            timesteps = t0 if timesteps is None else timesteps
        if batch is None or timesteps is None:
            raise error("InvalidArgumentError", "batch, timesteps: required when x is a device address (int)")
        b, t = _int(batch, "batch"), _int(timesteps, "timesteps")
        m = as_mask(mask, "mask")
        pout, _ = _device_pointer(output, "output", False)
        pinit, _ = _device_pointer(initial_state, "initial_state", True)
        pfinal, _ = _device_pointer(final_state, "final_state", True)
        with self._writing() as h:
            h.forward_device(_device_pointer(stream, "stream", True)[0], px, b, t, m, pinit,
                             self._info["num_states"] if pinit else 0, pout, pfinal)

    def step_states_device(self, states: Sequence["LayerState"], x: Any, output: Any, *,
                           mask: Optional[ArrayLike] = None, stream: Any = 0) -> None:
        """:meth:`step_states` on CUDA device memory of the layer's GPU (set ``device`` first, and
        make the states after), for callers that hold device buffers (CuPy, PyTorch, Numba, ...):
        the serving case of many streams per step, with no host copy of the inputs or outputs.

        x (rows, input_size) and output (rows, units), rows the sum of the states' batches, are
        objects with ``__cuda_array_interface__`` (C-contiguous float32) or raw device addresses
        (ints). mask stays a host array: None or one boolean per row. stream is a cudaStream_t
        address (0: recur's own stream for the calling thread); the call returns once output is
        written, with the same numbers as :meth:`step_states`. A state may appear once. A layer
        that is not on a GPU raises recur.StateError; a zero address, recur.InvalidArgumentError."""
        order = _state_order(states)
        rows = sum(s._shape[1] for s in states)
        px, shape_x = _device_pointer(x, "x", False)
        if shape_x is not None and shape_x != (rows, self._info["input_size"]):
            raise error("ShapeError", "x: expected shape (%d, %d) (the states' rows, input_size), got %s"
                        % (rows, self._info["input_size"], shape_x))
        pout, shape_out = _device_pointer(output, "output", False)
        if shape_out is not None and shape_out != (rows, self._info["units"]):
            raise error("ShapeError", "output: expected shape (%d, %d) (the states' rows, units), got %s"
                        % (rows, self._info["units"], shape_out))
        m = as_mask(mask, "mask")
        if m is not None and m.shape != (rows,):
            raise error("ShapeError", "mask: expected shape (%d,) (one per row), got %s" % (rows, tuple(m.shape)))
        pstream = _device_pointer(stream, "stream", True)[0]
        with self._reading() as h, _locked_states(states, order) as handles:
            h.forward_states_device(pstream, handles, px, m, pout)


def _state_order(states: Any) -> List[int]:
    """The order to lock the states of a call on many states in: creation order, so calls with
    overlapping states cannot deadlock (each a LayerState, none twice)."""
    if isinstance(states, LayerState) or not isinstance(states, (list, tuple)) or not states:
        raise error("InvalidArgumentError", "states: expected a non-empty list of LayerState, got %s"
                    % describe(states))
    for k, s in enumerate(states):
        if not isinstance(s, LayerState):
            raise error("InvalidArgumentError", "states[%d]: expected a LayerState, got %s" % (k, describe(s)))
    order = sorted(range(len(states)), key=lambda k: (states[k]._id, k))
    for p, q in zip(order, order[1:]):
        if states[p] is states[q]:
            raise error("InvalidArgumentError", "states[%d] and states[%d] are the same state (each stream may "
                        "appear once per call)" % (p, q))
    return order


@contextlib.contextmanager
def _locked_states(states: Sequence["LayerState"], order: List[int]) -> Iterator[List[int]]:
    """The states' native handles (in the caller's order), each state held for the call."""
    locked: List[int] = []
    try:
        handles = [0] * len(states)
        for k in order:
            handles[k] = int(states[k]._guard.acquire(True).this)
            locked.append(k)
        yield handles
    finally:
        for k in locked:
            states[k]._guard.release(True)


def _device_pointer(obj: Any, what: str, optional: bool) -> Tuple[int, Optional[Tuple[int, ...]]]:
    """The device address of a __cuda_array_interface__ object (checked float32, C-contiguous)
    or of a raw int address, with the object's shape."""
    if obj is None:
        if optional:
            return 0, None
        raise error("InvalidArgumentError", "%s: expected a CUDA array or a device address, got None" % what)
    if isinstance(obj, int) and not isinstance(obj, bool):
        if obj < 0 or obj >= 2**63:
            raise error("InvalidArgumentError", "%s: expected a device address, got %d" % (what, obj))
        return obj, None
    iface = getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(iface, dict):
        raise error("InvalidArgumentError", "%s: expected an object with __cuda_array_interface__ (CuPy, PyTorch "
                    "CUDA tensors, ...) or a device address (int), got %s" % (what, describe(obj)))
    shape = _tuple(iface.get("shape", ()))
    strides = iface.get("strides")
    if iface.get("typestr") not in ("<f4", "=f4", "|f4"):
        raise error("InvalidArgumentError", "%s: expected float32 device memory, got typestr %r"
                    % (what, iface.get("typestr")))
    if strides is not None:
        expect: List[int] = []
        acc = 4
        for d in reversed(shape):
            expect.insert(0, acc)
            acc *= d
        if _tuple(strides) != tuple(expect) and math.prod(shape) > 1:
            raise error("InvalidArgumentError", "%s: expected C-contiguous device memory, got strides %s"
                        % (what, _tuple(strides)))
    return int(iface["data"][0]), shape


# ---------------------------------------------------------------------------------------------
# Streams
# ---------------------------------------------------------------------------------------------

class LayerState:
    """The states (h, or h and c) of ``batch`` streams through one sequence layer, stepped a few
    timesteps at a time (``layer.new_state(batch)``). Streams are independent: many step one
    layer concurrently. A LayerState is used by one thread at a time (calls on it are
    serialized)."""

    def __init__(self, layer: SequenceLayer, handle: Any) -> None:
        """Use :meth:`SequenceLayer.new_state`."""
        self._layer = layer
        self._id = next(_state_ids)
        ns, b, u = handle.shape()
        self._shape = (int(ns), int(b), int(u))
        self._guard = _ExclusiveGuard(handle, "LayerState of %s" % layer._guard.what)

    @property
    def layer(self) -> SequenceLayer:
        """The layer the state steps through."""
        return self._layer

    @property
    def batch(self) -> int:
        """The number of streams."""
        return self._shape[1]

    @property
    def shape(self) -> Tuple[int, int, int]:
        """(num_states, batch, units)."""
        return self._shape

    def step(self, x: ArrayLike, mask: Optional[ArrayLike] = None) -> "numpy.ndarray":
        """Advances the streams through the timesteps of x (inference).

        Args:
            x: (batch, timesteps, input_size) ((timesteps, batch, input_size) with time_major),
                or (batch, input_size) for one timestep.
            mask: None, or booleans of x's leading axes ((batch, timesteps), or (batch,) for one
                timestep), True = a valid step; a masked step repeats the previous output.

        Returns:
            What the layer's call returns for these timesteps: (batch, timesteps, units) with
            return_sequences, else (batch, units) (the last step's); (batch, units) for a
            one-timestep x.
        """
        layer = self._layer
        a = as_float32(x, "x")
        single = a.ndim == 2
        if single:  # one timestep: (batch, input_size)
            a = a.reshape((1,) + a.shape if layer._info["time_major"] else (a.shape[0], 1, a.shape[1]))
            if mask is not None:
                m1 = as_mask(mask, "mask")
                if m1.shape != (a.shape[0] * a.shape[1],):
                    raise error("ShapeError", "mask: expected shape (%d,) (one per stream) for one timestep, got %s"
                                % (a.shape[0] * a.shape[1], tuple(m1.shape)))
                mask = m1.reshape(a.shape[:2])
        b, t = layer._check_sequence(a, "x")
        if b != self._shape[1]:
            raise error("ShapeError", "x: expected a batch of %d (the state's), got %d" % (self._shape[1], b))
        m = None if mask is None else layer._mask(mask, a)
        out = layer._output(b, t)
        # acquire/release rather than `with`: this is the streaming hot path.
        h = layer._guard.acquire(False)
        try:
            s = self._guard.acquire(True)
            try:
                h.forward_state(s, a, t, m, out)
            finally:
                self._guard.release(True)
        finally:
            layer._guard.release(False)
        if single and layer._info["return_sequences"]:
            return out.reshape(b, layer._info["units"])
        return out

    __call__ = step

    def reset(self) -> None:
        """Zeros the states: a new stream."""
        with self._guard.writing() as s:
            s.reset()

    def get(self) -> List["numpy.ndarray"]:
        """The states: [h] or [h, c], each (batch, units) (copies)."""
        n = np()
        with self._guard.writing() as s:
            out = n.empty(self._shape, n.float32)
            s.get(out)
            return list(out)

    def set(self, states: Any) -> None:
        """Sets the states ([h] or [h, c], each (batch, units)) and starts a new stream."""
        buf = self._layer._states_arg(states, self._shape[1], "states")
        with self._guard.writing() as s:
            s.set(buf, self._shape[0])

    @property
    def states(self) -> List["numpy.ndarray"]:
        """The states as :meth:`get` returns them; assigning calls :meth:`set`."""
        return self.get()

    @states.setter
    def states(self, states: Any) -> None:
        self.set(states)

    @property
    def device(self) -> str:
        """Where the states live ("cpu" or "cuda:N"); setting it moves them there now. They
        also move when a layer on another device steps them."""
        return self.device_info.backend

    @device.setter
    def device(self, device: str) -> None:
        with self._guard.writing() as s:
            s.set_device(_device_string(device))

    @property
    def device_info(self) -> DeviceInfo:
        """Where the states live: path "cpu", or "device-resident" on a GPU."""
        with self._guard.writing() as s:
            return _device_info(s.get_device)

    def close(self) -> None:
        """Frees the native state (idempotent); later use raises recur.StateError."""
        self._guard.close()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._guard.handle is None

    def __enter__(self) -> "LayerState":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Tuple[Any, ...]:
        raise TypeError("a LayerState cannot be pickled; keep its states (get()) and set() them on a new one")

    def __repr__(self) -> str:
        return "<recur.layers.LayerState of %s, batch %d%s>" % (
            self._layer._guard.what, self._shape[1], " (closed)" if self.closed else "")


# ---------------------------------------------------------------------------------------------
# Cells
# ---------------------------------------------------------------------------------------------

class Cell(RecurrentLayer):
    """A Keras cell (GRUCell, LSTMCell, SimpleRNNCell): one timestep per call, states passed in
    and returned, and dropout masks cached per cell as Keras caches them."""

    @property
    def state_size(self) -> Union[int, List[int]]:
        """Keras's ``state_size``: units, or [units, units] for an LSTMCell."""
        i = self._checked_info()
        return i["units"] if i["num_states"] == 1 else [i["units"]] * i["num_states"]

    @property
    def output_size(self) -> int:
        """Keras's ``output_size``: units."""
        return self.units

    def __call__(self, inputs: ArrayLike, states: Optional[Any] = None,
                 training: Optional[bool] = False) -> Tuple["numpy.ndarray", Any]:
        """Keras's cell call: one timestep.

        Args:
            inputs: (batch, input_size).
            states: [h] (GRUCell, SimpleRNNCell) or [h, c] (LSTMCell), each (batch, units); a
                lone array for one state; None = zeros (get_initial_state).
            training: applies dropout with the cell's cached masks (created on first use; see
                :meth:`get_dropout_mask`).

        Returns:
            (output, new_states): output (batch, units) and the new states, a list like the
            states given (a lone array when a lone array was given), as Keras returns them.
        """
        a = as_float32(inputs, "inputs")
        i = self._info
        if a.ndim != 2 or a.shape[1] != i["input_size"]:
            raise error("ShapeError", "inputs: expected a (batch, %d) array (batch, input_size), got shape %s"
                        % (i["input_size"], tuple(a.shape)))
        b = a.shape[0]
        lone = states is not None and not isinstance(states, (list, tuple))
        buf = self._states_arg(states, b, "states")
        if buf is None:
            buf = np().zeros((i["num_states"], b, i["units"]), np().float32)
        n = np()
        out = n.empty((b, i["units"]), n.float32)
        new = self._new_states(b)
        train = _training(training)
        with self._writing() as h:
            h.cell_call(a, b, buf, i["num_states"], train, out, new)
        return out, (new[0] if lone else list(new))

    def _dropout_mask(self, recurrent: bool, batch: int, training: Optional[bool]) -> List["numpy.ndarray"]:
        n = np()
        b = _int(batch, "batch")
        t = _training(training)
        width = self._info["units"] if recurrent else self._info["input_size"]
        with self._writing() as h:
            get = h.recurrent_dropout_mask if recurrent else h.dropout_mask
            count = get(b, t, None)
            if count == 0:
                return []
            out = n.empty((count, b, width), n.float32)
            get(b, t, out)
            return list(out)

    def get_dropout_mask(self, batch: int, training: Optional[bool] = False) -> List["numpy.ndarray"]:
        """The cell's cached input dropout masks for a batch (Keras's
        ``get_dropout_mask_for_cell``): a list of (batch, input_size) arrays (one per gate the
        dialect masks separately), values 0 or 1/(1-rate); [] when dropout is 0. Created on first
        use and kept until :meth:`reset_dropout_mask`."""
        return self._dropout_mask(False, batch, training)

    def get_recurrent_dropout_mask(self, batch: int, training: Optional[bool] = False) -> List["numpy.ndarray"]:
        """As :meth:`get_dropout_mask` for recurrent dropout: (batch, units) arrays."""
        return self._dropout_mask(True, batch, training)

    def reset_dropout_mask(self) -> None:
        """Drops the cached input dropout masks (Keras's ``reset_dropout_mask``)."""
        with self._writing() as h:
            h.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self) -> None:
        """Drops the cached recurrent dropout masks."""
        with self._writing() as h:
            h.reset_recurrent_dropout_mask()


# ---------------------------------------------------------------------------------------------
# The classes
# ---------------------------------------------------------------------------------------------

class GRU(SequenceLayer):
    """Keras's ``GRU``: gated recurrent unit (reset_after=True, Keras's default, is cuDNN's
    variant), kernel (F, 3u), recurrent_kernel (u, 3u), bias (2, 3u) with reset_after, else (3u,).
    Gate order z, r, h."""

    _type = _N.LAYER_GRU
    _keras_name = "gru"


class LSTM(SequenceLayer):
    """Keras's ``LSTM``: kernel (F, 4u), recurrent_kernel (u, 4u), bias (4u,); gate order i, f,
    c, o; states [h, c]."""

    _type = _N.LAYER_LSTM
    _keras_name = "lstm"


class SimpleRNN(SequenceLayer):
    """Keras's ``SimpleRNN``: h' = activation(x @ kernel + bias + h @ recurrent_kernel); kernel
    (F, u), recurrent_kernel (u, u), bias (u,)."""

    _type = _N.LAYER_SIMPLE_RNN
    _keras_name = "simple_rnn"


class CuDNNGRU(SequenceLayer):
    """Keras 2's ``CuDNNGRU`` (run on any device, with Keras's numbers): weights in the CuDNN
    layout (bias (6u,)). Keras 3 has no CuDNN layers, so the dialect defaults to "keras2"."""

    _type = _N.LAYER_CUDNN_GRU
    _keras_name = "cu_dnngru"
    _default_dialect = "keras2"


class CuDNNLSTM(SequenceLayer):
    """Keras 2's ``CuDNNLSTM`` (run on any device, with Keras's numbers): weights in the CuDNN
    layout (bias (8u,)). Keras 3 has no CuDNN layers, so the dialect defaults to "keras2"."""

    _type = _N.LAYER_CUDNN_LSTM
    _keras_name = "cu_dnnlstm"
    _default_dialect = "keras2"


class GRUCell(Cell):
    """Keras's ``GRUCell``: one GRU timestep; weights as :class:`GRU`'s."""

    _type = _N.LAYER_GRU_CELL
    _keras_name = "gru_cell"


class LSTMCell(Cell):
    """Keras's ``LSTMCell``: one LSTM timestep; weights as :class:`LSTM`'s; states [h, c]."""

    _type = _N.LAYER_LSTM_CELL
    _keras_name = "lstm_cell"


class SimpleRNNCell(Cell):
    """Keras's ``SimpleRNNCell``: one SimpleRNN timestep; weights as :class:`SimpleRNN`'s."""

    _type = _N.LAYER_SIMPLE_RNN_CELL
    _keras_name = "simple_rnn_cell"


_CLASSES: Tuple[Type[RecurrentLayer], ...] = (GRU, LSTM, SimpleRNN, CuDNNGRU, CuDNNLSTM, GRUCell, LSTMCell,
                                              SimpleRNNCell)


def deserialize(config: Dict[str, Any], input_size: Optional[int] = None, dialect: Optional[str] = None,
                keras_version: Optional[str] = None, **kwargs: Any) -> RecurrentLayer:
    """The layer of any class that a ``{"class_name": ..., "config": {...}}`` dict describes
    (Keras's ``keras.layers.deserialize``). Arguments as :meth:`RecurrentLayer.from_config`."""
    return RecurrentLayer.from_config(config, input_size, dialect, keras_version, **kwargs)


def from_keras_json(json_str: Union[str, bytes], input_size: Optional[int] = None, dialect: Optional[str] = None,
                    keras_version: Optional[str] = None, **kwargs: Any) -> RecurrentLayer:
    """The layer of any class that Keras JSON describes. Arguments as
    :meth:`RecurrentLayer.from_keras_json`."""
    return RecurrentLayer.from_keras_json(json_str, input_size, dialect, keras_version, **kwargs)


def _unpickle(class_name: str, recipe: Tuple[str, Any], weights: List[Any],
              settings: Tuple[Any, ...]) -> RecurrentLayer:
    cls = next(c for c in _CLASSES if c.__name__ == class_name)
    kind, data = recipe
    if kind == "kwargs":
        layer = cls(**data)
    else:
        layer = cls._from_text(data[0], data[1], data[2], data[3], "from_keras_json", (None, None, None))
    layer.set_weights(weights)
    layer._configure(*settings)
    return layer


def _from_native(handle: Any, name: Optional[str] = None) -> RecurrentLayer:
    """A layer object over a native ``recur._native.Layer`` the caller hands over (e.g. from
    ``Model.get_layer``): the class its type is, named ``name``."""
    return RecurrentLayer._wrap(handle, name, "from_native")
