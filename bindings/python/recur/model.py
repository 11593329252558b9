# SPDX-License-Identifier: Apache-2.0
"""Keras models: :func:`load_model`, :class:`Model` and its streams, :class:`Stream`."""
from __future__ import annotations

import io
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _native
from ._util import Closable, as_float32, as_mask, configure, describe, error, np

_DTYPES = {1: "float32", 2: "int32", 3: "int64", 4: "string"}
_DTYPE_STRING = 4


class TensorSpec(NamedTuple):
    """A model input or output: its name, shape (batch first; None where any size goes), dtype
    ("float32", "int32", "int64" or "string"), whether it has a timesteps axis (axis 1: masks
    address it, streams feed it a few steps at a time) and whether it takes token ids."""

    name: str
    shape: Tuple[Optional[int], ...]
    dtype: str
    sequence: bool = False
    token_ids: bool = False


class RunOptions:
    """Cancels calls from another thread: pass ``run_options=`` to :meth:`Model.predict` or
    :meth:`Stream.step`, then call :meth:`cancel` from any thread; the calls raise
    :class:`recur.CancelledError` (a stateful model's states and a stream stay as before the
    call). One object may serve any number of calls; :meth:`reset` makes it usable again."""

    def __init__(self) -> None:
        self._o = _native.RunOptions.create()

    def cancel(self) -> None:
        """Stops every call running with these options, and every later one until reset()."""
        self._o.cancel()

    def reset(self) -> None:
        """Clears a cancel (call it when no call is running with these options)."""
        self._o.reset()

    @property
    def cancelled(self) -> bool:
        """True after cancel(), until reset()."""
        return bool(self._o.is_cancelled())

    @property
    def timeout(self) -> float:
        """Seconds each call made with these options may run (0: no limit, the default). A call
        that runs longer stops at its next check (between layers and between timesteps) and raises
        :class:`recur.LimitError` ("deadline passed after ... ms"), leaving a stateful model's states
        and a stream as before the call. Since 0.8."""
        return float(self._o.get_timeout())

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._o.set_timeout(float(seconds))


ArrayLike = Any
Inputs = Any  # an array, a sequence of arrays (input order) or a mapping by input name


def _dims(rank: int, dims: Tuple[int, ...]) -> Tuple[Optional[int], ...]:
    return tuple(None if d < 0 else int(d) for d in dims[:rank])


class _Runner(Closable):
    """What Model and Stream share: turning Keras-style inputs into the C ABI's named tensors and
    the outputs back into arrays, one call path for both. Output shapes are cached per input
    signature (text inputs excepted: their output shapes can depend on the text)."""

    _inputs: List[TensorSpec]
    _outputs: List[TensorSpec]

    def _setup_io(self) -> None:
        self._in_names = [s.name.encode() for s in self._inputs]
        self._out_names = [s.name for s in self._outputs]
        # A Keras 3 layer with several outputs gives them one name; the C ABI selects the k-th as
        # "name:k" (the bare name is ambiguous there), and so do return_dict's keys.
        seen: Dict[str, int] = {}
        self._out_keys = []
        for n in self._out_names:
            k = "%s:%d" % (n, seen.get(n, 0)) if self._out_names.count(n) > 1 else n
            seen[n] = seen.get(n, 0) + 1
            self._out_keys.append((k.encode(), k))
        self._index = {s.name: i for i, s in enumerate(self._inputs)}
        self._shape_cache: Dict[Any, List[Tuple[int, ...]]] = {}
        N = np()
        self._ndarray, self._empty, self._f32 = N.ndarray, N.empty, N.float32
        self._plans: Dict[Any, Tuple[bytes, int, Any, List[Tuple[int, ...]]]] = {}

    def _values(self, x: Inputs, what: str) -> List[Any]:
        """x as one value per model input, in input order."""
        n = len(self._inputs)
        if isinstance(x, Mapping):
            unknown = [k for k in x if k not in self._index]
            missing = [s.name for s in self._inputs if s.name not in x]
            if unknown or missing:
                raise error("InvalidArgumentError",
                            "%s: %s%s; the model's inputs are %s" % (
                                what,
                                "unknown input name(s) %s" % ", ".join(repr(k) for k in unknown) if unknown else "",
                                ("; " if unknown and missing else "") + (
                                    "missing input(s) %s" % ", ".join(repr(k) for k in missing) if missing else ""),
                                ", ".join(repr(s.name) for s in self._inputs)))
            return [x[s.name] for s in self._inputs]
        if isinstance(x, (list, tuple)) and (n > 1 or (len(x) == 1 and hasattr(x[0], "shape"))):
            if len(x) != n:
                raise error("InvalidArgumentError",
                            "%s: expected %d arrays, one per model input (%s), got %d; pass a dict by name or a list in that order"
                            % (what, n, ", ".join(repr(s.name) for s in self._inputs), len(x)))
            return list(x)
        if n != 1:
            raise error("InvalidArgumentError",
                        "%s: the model has %d inputs (%s): pass a list in that order or a dict by name"
                        % (what, n, ", ".join(repr(s.name) for s in self._inputs)))
        return [x]

    def _masks(self, mask: Any) -> List[Any]:
        n = len(self._inputs)
        if mask is None:
            return [None] * n
        if isinstance(mask, Mapping):
            unknown = [k for k in mask if k not in self._index]
            if unknown:
                raise error("InvalidArgumentError", "mask: unknown input name(s) %s; the model's inputs are %s" % (
                    ", ".join(repr(k) for k in unknown), ", ".join(repr(s.name) for s in self._inputs)))
            return [as_mask(mask.get(s.name), "mask[%r]" % s.name) for s in self._inputs]
        if isinstance(mask, (list, tuple)) and n > 1:
            if len(mask) != n:
                raise error("InvalidArgumentError", "mask: expected %d masks (None for an input without one), got %d" % (n, len(mask)))
            return [as_mask(m, "mask[%d]" % i) for i, m in enumerate(mask)]
        seq = [i for i, s in enumerate(self._inputs) if s.sequence]
        if len(seq) != 1:
            raise error("InvalidArgumentError",
                        "mask: the model has %d sequence inputs: pass a dict of masks by input name" % len(seq))
        out: List[Any] = [None] * n
        out[seq[0]] = as_mask(mask, "mask")
        return out

    def _tensors(self, x: Inputs, mask: Any, step: bool) -> Tuple[list, Any]:
        """The named tensors of a call, and the key of its output shapes (None: not cacheable)."""
        N = np()
        values = self._values(x, "inputs")
        masks = self._masks(mask)
        tensors = []
        key: Optional[list] = []
        for i, spec in enumerate(self._inputs):
            v = values[i]
            what = "inputs[%r]" % spec.name
            if spec.dtype == "string":
                a = v if isinstance(v, N.ndarray) else N.asarray(v, dtype=object)
                if a.ndim == len(spec.shape) - 1 and spec.shape[-1] == 1:
                    a = a.reshape(a.shape + (1,))  # Keras takes a (B,) batch of texts for a (B, 1) input
                texts = []
                for t in a.reshape(-1).tolist():
                    if isinstance(t, str):
                        texts.append(t.encode("utf-8", "surrogatepass"))
                    elif isinstance(t, (bytes, bytearray)):
                        texts.append(bytes(t))
                    else:
                        raise error("InvalidArgumentError", "%s: expected text (str or bytes), got %s" % (what, type(t).__name__))
                if masks[i] is not None:
                    raise error("InvalidArgumentError", "mask[%r]: a text input takes no mask" % spec.name)
                tensors.append((self._in_names[i], _DTYPE_STRING, texts, a.shape, None))
                key = None
                continue
            if type(v) is N.ndarray and v.flags.c_contiguous and v.dtype in (N.float32, N.int32, N.int64):
                a = v
            else:
                try:
                    a = N.asarray(v)
                except ValueError:  # ragged lists: as_float32 says so in recur's words
                    a = as_float32(v, what)
                kind = a.dtype.kind
                if kind in "iu":
                    if a.dtype.itemsize == 8 and kind == "u" and a.size and int(a.max()) > 2**63 - 1:
                        raise error("InvalidArgumentError", "%s: integer %d does not fit int64" % (what, int(a.max())))
                    a = N.ascontiguousarray(a, dtype=N.int32 if a.dtype.itemsize < 4 or (kind == "i" and a.dtype.itemsize == 4) else N.int64)
                elif kind == "b":
                    a = N.ascontiguousarray(a, dtype=N.int32)
                else:
                    a = as_float32(a, what)
            if step and spec.sequence and a.ndim == len(spec.shape) - 1:
                a = a.reshape(a.shape[:1] + (1,) + a.shape[1:])  # one timestep given without its axis
            dt = 1 if a.dtype == N.float32 else (2 if a.dtype == N.int32 else 3)
            m = masks[i]
            tensors.append((self._in_names[i], dt, a, a.shape, m))
            if key is not None:
                key.append((a.shape, dt, None if m is None else m.shape))
        return tensors, (tuple(key) if key is not None else None)

    # The plans of plain calls (one C-contiguous numeric array for a one-input model, every
    # output, no mask) by the array's shape and dtype: a repeated call then goes straight to the
    # extension, its output shapes and the input's dtype code already known.
    def _remember(self, x: Any, tensors: list, key: Any, dims: List[Tuple[int, ...]]) -> None:
        if key is None or len(tensors) != 1 or type(x) is not self._ndarray or not x.flags.c_contiguous:
            return
        name, dt, a, shape, _ = tensors[0]
        if a.dtype != x.dtype:
            return  # converted: not a plain call
        if len(self._plans) > 64:
            self._plans.clear()
        self._plans[(x.shape, x.dtype)] = (name, dt, None if shape == x.shape else shape, dims)

    def _run_plan(self, h: Any, plan: Tuple[bytes, int, Any, List[Tuple[int, ...]]], x: Any, run: Any,
                  options: Any, return_dict: bool) -> Any:
        name, dt, shape, dims = plan
        if shape is not None:
            x = x.reshape(shape)  # one timestep given without its axis
        empty, f32 = self._empty, self._f32
        if len(dims) == 1 and not return_dict:
            out = empty(dims[0], f32)
            run(h, [(name, dt, x, x.shape, None)], [(self._out_keys[0][0], out)], options)
            return out
        arrays = [empty(d, f32) for d in dims]
        run(h, [(name, dt, x, x.shape, None)], [(k[0], a) for k, a in zip(self._out_keys, arrays)], options)
        return self._result(arrays, [k[1] for k in self._out_keys], return_dict)

    def _call(self, x: Inputs, mask: Any, return_dict: bool, outputs: Optional[Sequence[str]],
              run_options: Optional[RunOptions], step: bool) -> Any:
        """A model's predict or a stream's step: the same inputs, outputs and errors, through
        _native's named run or named step."""
        h = self._h()
        shapes, run = ((_native.recur_py_step_output_shapes, _native.recur_py_step_named) if step else
                       (_native.recur_py_output_shapes, _native.recur_py_run_named))
        options = None if run_options is None else run_options._o
        plain = mask is None and outputs is None
        if plain and type(x) is self._ndarray:
            plan = self._plans.get((x.shape, x.dtype))
            if plan is not None and x.flags.c_contiguous:
                return self._run_plan(h, plan, x, run, options, return_dict)
        tensors, key = self._tensors(x, mask, step)
        keys = self._out_keys if outputs is None else self._select(outputs)
        dims = self._shapes(h, tensors, key, keys, shapes)
        arrays = self._outputs_of(dims)
        run(h, tensors, [(k[0], a) for k, a in zip(keys, arrays)], options)
        if plain:
            self._remember(x, tensors, key, dims)
        return self._result(arrays, [k[1] for k in keys], return_dict)

    @staticmethod
    def _select(outputs: Sequence[str]) -> List[Tuple[bytes, str]]:
        if isinstance(outputs, str):
            outputs = [outputs]
        return [(o.encode(), o) for o in outputs]

    def _shapes(self, h: Any, tensors: list, key: Any, keys: list, fn: Any) -> List[Tuple[int, ...]]:
        if key is not None:
            full = (key, tuple(k[0] for k in keys))
            dims = self._shape_cache.get(full)
            if dims is None:
                dims = fn(h, tensors, [(k[0], None) for k in keys])
                if len(self._shape_cache) > 64:
                    self._shape_cache.clear()
                self._shape_cache[full] = dims
            return dims
        return fn(h, tensors, [(k[0], None) for k in keys])

    def _outputs_of(self, dims: List[Tuple[int, ...]]) -> list:
        N = np()
        return [N.empty(d, dtype=N.float32) for d in dims]

    @staticmethod
    def _result(arrays: list, names: List[str], return_dict: bool) -> Any:
        if return_dict:
            return dict(zip(names, arrays))
        return arrays[0] if len(arrays) == 1 else arrays


class Model(_Runner):
    """A Keras model opened from a ``.keras`` or ``.h5`` file: Keras's ``model.predict`` with
    Keras's numbers, stateful models, and streams (:meth:`new_state`).

    Open one with :func:`recur.load_model`. Concurrent :meth:`predict` calls on one model are
    safe (and run in parallel: the GIL is released while recur computes) unless the model is
    stateful, when they run one at a time. A model can be pickled: it re-opens from the bytes of
    its file, with its device, thread count and backend (not a stateful model's states)."""

    def __init__(self, native: Any, source: bytes, name: str) -> None:
        self._native_obj = native
        self._bytes = source
        self._name = name
        self._device = "cpu"
        self._backend: Optional[str] = None
        self._inputs = []
        for i in range(native.num_inputs()):
            nm, rank, token_ids, dims = native.input(i)
            self._inputs.append(TensorSpec(nm, _dims(rank, dims), _DTYPES.get(native.input_dtype(i), "float32"),
                                           bool(native.input_sequence(i)), bool(token_ids)))
        self._outputs = []
        for i in range(native.num_outputs()):
            nm, rank, dims = native.output(i)
            self._outputs.append(TensorSpec(nm, _dims(rank, dims), "float32", False, False))
        self._setup_io()

    # ---- what it is ----------------------------------------------------------------------------
    def _closed_message(self) -> str:
        return "Model %r is closed: open it again with recur.load_model" % self._name

    @property
    def name(self) -> str:
        """The file name (or the name given for bytes) the model was opened from."""
        return self._name

    @property
    def inputs(self) -> List[TensorSpec]:
        """The model's inputs, in order."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[TensorSpec]:
        """The model's outputs, in order (shapes as declared: None where the run decides)."""
        return list(self._outputs)

    @property
    def input_names(self) -> List[str]:
        return [s.name for s in self._inputs]

    @property
    def output_names(self) -> List[str]:
        """The outputs' names as Keras's model.output_names (a Keras 3 layer's several outputs
        share one; predict's return_dict and outputs= call them "name:0", "name:1", ...)."""
        return list(self._out_names)

    @property
    def info(self) -> Dict[str, Any]:
        """The model's summary: Keras dialect and version, layer count, whether it runs (and if
        not, why), ... as recur_model_get_info gives it."""
        return self._h().get_info()

    @property
    def layers(self) -> List[Dict[str, Any]]:
        """Each layer of the model: name, class_name, config (its Keras JSON), input_size,
        output_size and whether it is recurrent."""
        h = self._h()
        out = []
        for i in range(h.get_info()["num_layers"]):
            name, cls, config, fin, fout, rec = h.layer(i)
            out.append({"name": name, "class_name": cls, "config": config, "input_size": fin,
                        "output_size": fout, "recurrent": bool(rec)})
        return out

    def get_layer(self, name: str) -> Any:
        """The recurrent layer `name` as a :mod:`recur.layers` object holding the model's weights
        (a copy: changing it leaves the model as it is)."""
        from .layers import _from_native

        return _from_native(self._h().get_layer(name), name)

    def summary(self, print_fn: Any = print) -> None:
        """Prints what the model takes and gives and its layers (as ``python -m recur info``)."""
        from .cli import describe

        print_fn(describe(self))

    @property
    def streamable(self) -> Optional[str]:
        """None when the model streams (:meth:`new_state`), else why not, naming the layer."""
        why = self._h().streamable()
        return why or None

    # ---- settings ----------------------------------------------------------------------------
    @property
    def device(self) -> str:
        """Where the model runs: "cpu", "cuda", "cuda:N" or "auto" (as asked; see device_info)."""
        return self._device

    @device.setter
    def device(self, device: str) -> None:
        self._h().set_device(device)
        self._device = device

    def device_info(self, layer: Optional[int] = None) -> Dict[str, Optional[str]]:
        """Where the model (or its layer number `layer`) really runs, and why: requested,
        backend, path (cpu, cudnn or kernel), reason and device_name."""
        r = self._h().get_device(-1 if layer is None else int(layer))
        return dict(zip(("requested", "backend", "path", "reason", "device_name"), r))

    @property
    def num_threads(self) -> int:
        """Threads one call may use on the CPU: 1 (the default) starts none, 0 = one per core."""
        return int(self._h().get_num_threads())

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        self._h().set_num_threads(int(n))

    @property
    def precision(self) -> str:
        """The precision of every recurrent layer's kernels on the CPU: "float32" (the default,
        Keras's numbers), "bf16" or "int8" (faster; the outputs differ from Keras's by what
        ``recur verify --precision`` reports, see docs/precision.md). The other layers stay
        float32. Setting an unknown name raises InvalidArgumentError; on a GPU, or bf16/int8 for
        a model without recurrent layers, UnsupportedError."""
        return str(self._h().get_precision())

    @precision.setter
    def precision(self, name: str) -> None:
        if not isinstance(name, str):
            raise error("InvalidArgumentError", "precision: expected \"float32\", \"bf16\" or \"int8\", got %s"
                        % describe(name))
        self._h().set_precision(name)

    @property
    def keras_backend(self) -> Optional[str]:
        """The Keras 3 backend whose numbers the model gives: "tensorflow" (the default, also
        torch's) or "jax" (also numpy's). They differ only at masked steps."""
        return self._backend or "tensorflow"

    @keras_backend.setter
    def keras_backend(self, backend: str) -> None:
        self._h().set_keras_backend(backend)
        self._backend = backend

    # ---- running -----------------------------------------------------------------------------
    def predict(self, x: Inputs, *, mask: Any = None, return_dict: bool = False,
                outputs: Optional[Sequence[str]] = None, run_options: Optional[RunOptions] = None,
                batch_size: Optional[int] = None, verbose: Any = None) -> Any:
        """Keras's ``model.predict``.

        x: one array (a model with one input), a list of arrays in input order, or a dict by
        input name. Any batch and sequence length the model allows. float32 C-contiguous
        arrays pass without a copy; other real dtypes are converted once; integer arrays stay
        integers (token ids reach an Embedding exactly). Text inputs take str or bytes.
        mask: for the sequence inputs, (batch, timesteps) booleans, as Keras's call(mask=...);
        one array when the model has one sequence input, else a list or dict.
        outputs: the names of the outputs to compute (default: all).
        batch_size: run the batch in slices of this many rows, as Keras's predict does (each
        row's numbers are those of a call on its slice: equal up to float rounding, ~1e-9, to
        one call on the whole batch). A stateful model runs its
        whole batch at once. verbose: accepted for Keras's signature; recur prints nothing.
        Returns the output array when the model has one output, else a list in output order
        (a dict by name with return_dict=True)."""
        if batch_size is not None:
            return self._predict_sliced(x, mask, return_dict, outputs, run_options, batch_size)
        return self._call(x, mask, return_dict, outputs, run_options, False)

    __call__ = predict

    def _predict_sliced(self, x: Inputs, mask: Any, return_dict: bool, outputs: Optional[Sequence[str]],
                        run_options: Optional[RunOptions], batch_size: int) -> Any:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise error("InvalidArgumentError", "batch_size: expected a positive integer or None, got %r" % (batch_size,))
        values = self._values(x, "inputs")
        masks = self._masks(mask)
        N = np()
        rows = {len(v) for v in values if hasattr(v, "__len__")}
        if len(rows) != 1 or self.stateful or batch_size >= next(iter(rows)):
            return self.predict(x, mask=mask, return_dict=return_dict, outputs=outputs, run_options=run_options)
        total = next(iter(rows))
        parts = []
        for start in range(0, total, batch_size):
            sl = slice(start, start + batch_size)
            parts.append(self.predict([v[sl] for v in values] if len(values) > 1 else values[0][sl],
                                      mask=[None if m is None else m[sl] for m in masks] if len(masks) > 1 else
                                      (None if masks[0] is None else masks[0][sl]),
                                      return_dict=True, outputs=outputs, run_options=run_options))
        names = list(parts[0])
        joined = [N.concatenate([p[n] for p in parts], axis=0) for n in names]
        return self._result(joined, names, return_dict)

    # ---- stateful models ----------------------------------------------------------------------
    @property
    def stateful(self) -> bool:
        """True when some layer is stateful: each predict starts from the states the last left."""
        return bool(self._h().is_stateful())

    @property
    def stateful_layers(self) -> Dict[str, Tuple[int, int, int]]:
        """The stateful layers by name, each with its states' shape (states, batch, units);
        a Bidirectional layer's halves are "<name>/forward" and "<name>/backward"."""
        h = self._h()
        out = {}
        for i in range(h.num_stateful_layers()):
            name, ns, b, u = h.stateful_layer(i)
            out[name] = (ns, b, u)
        return out

    def reset_states(self) -> None:
        """Zeroes the states of every stateful layer, as Keras's model.reset_states()."""
        self._h().reset_states()

    def get_states(self) -> Dict[str, List[Any]]:
        """Each stateful layer's states as Keras's ``layer.states``: a list of (batch, units)
        arrays (h, and c for an LSTM), by layer name."""
        h = self._h()
        N = np()
        out = {}
        for name, (ns, b, u) in self.stateful_layers.items():
            buf = N.empty(h.states_length(name), dtype=N.float32)
            h.get_states(name, buf)
            out[name] = list(buf.reshape(ns, b, u))
        return out

    def set_states(self, states: Mapping[str, Any]) -> None:
        """Sets stateful layers' states: a dict by layer name of what get_states returns (a
        list of (batch, units) arrays, or one (states, batch, units) array). Layers not named
        keep theirs."""
        h = self._h()
        N = np()
        layers = self.stateful_layers
        for name, value in states.items():
            if name not in layers:
                raise error("InvalidArgumentError", "states: %r is not a stateful layer of the model (they are %s)"
                            % (name, ", ".join(repr(k) for k in layers) or "none"))
            ns, b, u = layers[name]
            a = as_float32(N.stack(value) if isinstance(value, (list, tuple)) else value, "states[%r]" % name)
            if a.size != ns * b * u:
                raise error("ShapeError", "states[%r]: expected %d states of shape (%d, %d), got an array of shape %s"
                            % (name, ns, b, u, a.shape))
            h.set_states(name, a.reshape(-1))

    # ---- streams -----------------------------------------------------------------------------
    def new_state(self, batch: int = 1) -> "Stream":
        """A stream through the whole model for `batch` sequences at a time: feed it timesteps
        as they come (:meth:`Stream.step`). A model has any number of streams; each keeps its
        own recurrent states. Raises UnsupportedError (naming the layer) for a model that does
        not stream."""
        return Stream(self, _native.ModelState.create(self._h(), int(batch)), int(batch))

    def step_streams(self, streams: Sequence["Stream"], x: Inputs, *, mask: Any = None, return_dict: bool = False,
                     outputs: Optional[Sequence[str]] = None, run_options: Optional[RunOptions] = None) -> Any:
        """Steps many streams of this model in one call, as one batch (one matrix product per layer
        per timestep for all of them): the numbers of calling each stream's :meth:`Stream.step`
        with its own rows. x holds the rows of every stream one after another in the order of
        `streams` (batch = the sum of their batches), as Stream.step takes it; so do the outputs
        and the mask. Each stream appears once; all were made by :meth:`new_state` of this
        model. On any error every stream is left exactly as before the call. The streams must
        not be stepped by other threads meanwhile."""
        if isinstance(streams, Stream):
            streams = [streams]
        handles = []
        for i, st in enumerate(streams):
            if not isinstance(st, Stream):
                raise error("InvalidArgumentError", "streams[%d]: expected a recur.Stream (Model.new_state), got %s"
                            % (i, type(st).__name__))
            handles.append(st._h())
        options = None if run_options is None else run_options._o
        tensors, _ = self._tensors(x, mask, True)
        keys = self._out_keys if outputs is None else self._select(outputs)
        dims = _native.recur_py_states_output_shapes(handles, tensors, [(k[0], None) for k in keys])
        arrays = self._outputs_of(dims)
        _native.recur_py_states_step_named(handles, tensors, [(k[0], a) for k, a in zip(keys, arrays)], options)
        return self._result(arrays, [k[1] for k in keys], return_dict)

    # ---- lifetime (close(), closed, with: Closable; streams made from a model outlive it) ---------
    def __reduce__(self) -> Any:
        self._h()
        return (_reopen, (self._bytes, self._name, self._device, self.num_threads, self._backend, self.precision))

    def __repr__(self) -> str:
        if self._native_obj is None:
            return "<recur.Model %r (closed)>" % self._name
        return "<recur.Model %r inputs=%s outputs=%s>" % (
            self._name, [(s.name, s.shape, s.dtype) for s in self._inputs], [(s.name, s.shape) for s in self._outputs])


class Stream(_Runner):
    """One stream through a whole model (recur_model_state): the model's recurrent states for a
    batch of sequences, stepped a few timesteps at a time. Steps of one stream run one at a time
    (one thread at a time); different streams of one model may step concurrently."""

    def __init__(self, model: Model, native: Any, batch: int) -> None:
        self._native_obj = native
        self._batch = batch
        self._inputs = model._inputs
        self._outputs = model._outputs
        self._model_name = model._name
        self._setup_io()

    def _closed_message(self) -> str:
        return "this stream of model %r is closed: make another with Model.new_state" % self._model_name

    @property
    def batch(self) -> int:
        """The number of sequences the stream steps together."""
        return self._batch

    def step(self, x: Inputs, *, mask: Any = None, return_dict: bool = False,
             outputs: Optional[Sequence[str]] = None, run_options: Optional[RunOptions] = None) -> Any:
        """Feeds the next timesteps: x as for Model.predict, each sequence input holding the same
        number of steps (batch, steps, ...), or one step without its time axis (batch, ...).
        Inputs without a timesteps axis are given whole. Returns the outputs as predict does:
        sequence outputs hold the steps fed, the others their value after them. On any error the
        stream is left exactly as before the call."""
        return self._call(x, mask, return_dict, outputs, run_options, True)

    __call__ = step

    def reset(self) -> None:
        """Back to the start of the sequences (zero states)."""
        self._h().reset()

    def save(self) -> bytes:
        """Everything the stream carries to its next step (recurrent states, causal layers' past
        inputs) as versioned little-endian bytes (recur_model_state_save): Stream.load of them
        into a new stream of the same model and batch goes on with bit-identical outputs."""
        h = self._h()
        buf = bytearray(h.save_size())
        h.save(buf)
        return bytes(buf)

    def load(self, data: Any) -> None:
        """Loads bytes from Stream.save (all or nothing: on an error the stream is unchanged).
        Raises ValueError (recur.InvalidArgumentError) for bytes that are not a snapshot or were
        saved at another batch, and recur.StateError for another model's (or model version's)."""
        if isinstance(data, str):
            raise TypeError("data: expected bytes from Stream.save, got str")
        self._h().load(data)

    def __repr__(self) -> str:
        return "<recur.Stream of %r batch=%d%s>" % (self._model_name, self._batch, " (closed)" if self._native_obj is None else "")


def _read_source(source: Any, name: Optional[str]) -> Tuple[bytes, str, Any]:
    """(bytes, name, native model) of a path, bytes or a binary file object."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        nm = name or "<bytes>"
        return data, nm, _native.Model.open_memory(data, nm)
    if hasattr(source, "read"):
        # A text-mode file would fail in the read, decoding the model's bytes.
        read: Any = "" if isinstance(source, io.TextIOBase) else source.read()
        if not isinstance(read, (bytes, bytearray)):
            raise error("InvalidArgumentError", "source: the file object must be opened in binary mode ('rb')")
        nm = name or str(getattr(source, "name", "<file>"))
        return bytes(read), nm, _native.Model.open_memory(bytes(read), nm)
    if not isinstance(source, (str, os.PathLike)):
        raise error("InvalidArgumentError", "source: expected a path, bytes or a binary file object, got %s" % type(source).__name__)
    path = os.fspath(source)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    try:
        too_big = os.path.getsize(path) > _native.recur_binding_get_limit(_native.LIMIT_FILE_BYTES)
        if not too_big:
            with open(path, "rb") as f:
                data = f.read()
            return data, name or path, _native.Model.open_memory(data, name or path)
    except OSError:
        pass
    # The library reports a missing, unreadable or oversized file in its own words.
    m = _native.Model.open(path)
    with open(path, "rb") as f:
        data = f.read()
    return data, name or path, m


def load_model(source: Any, *, device: Optional[str] = None, num_threads: Optional[int] = None,
               keras_backend: Optional[str] = None, name: Optional[str] = None,
               precision: Optional[str] = None) -> Model:
    """Opens a Keras model: a ``.keras`` or ``.h5`` file's path, its bytes, or a binary file
    object. Keras 2 (tf.keras, tf_keras) and Keras 3 files alike.

    device: "cpu" (the default), "cuda", "cuda:N" or "auto" (the GPU when the plugin and a GPU
    are there, else the CPU). num_threads: threads per call on the CPU (1 by default; 0 = one
    per core). keras_backend: "jax" for the numbers of a Keras 3 model run under JAX (they differ
    from TensorFlow's only at masked steps). name: stands for the file in messages. precision:
    "float32" (the default), "bf16" or "int8" weights for the recurrent layers (Model.precision).
    Errors: recur.IOError (missing, unreadable, corrupt file), recur.ParseError,
    recur.UnsupportedError (a layer recur does not run; the message names it), recur.LimitError."""
    data, nm, native = _read_source(source, name)
    m = Model(native, data, nm)
    configure(m, device, num_threads, keras_backend, precision)
    return m


def _reopen(data: bytes, name: str, device: str, num_threads: int, backend: Optional[str],
            precision: Optional[str] = None) -> Model:
    return load_model(data, name=name, device=None if device == "cpu" else device, num_threads=num_threads,
                      keras_backend=backend, precision=precision)
