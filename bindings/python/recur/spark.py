# SPDX-License-Identifier: Apache-2.0
"""Batch scoring of a Spark DataFrame of sequences with a Keras model through recur.

    from recur.spark import SparkScorer
    scorer = SparkScorer("model.keras", sequence_col="seq", key_cols=["id"])
    scores = scorer.score(spark.read.parquet("sequences.parquet"))   # id, one column per output

Each Spark worker process opens the model once and keeps it (Spark reuses its Python workers);
rows go to the model ``batch_size`` at a time through ``mapInArrow``, padded with zeros and masked
(``padding="mask"``: each row scores as Keras scores it alone, for models whose layers honour
masks) or grouped by length (``padding="group"``: exact for any model). The sequence column is
``array<array<number>>`` (steps of the model's feature count) or ``array<number>`` (steps
flattened; one token id per step for a (batch, steps) input). Each output is an ``array<float>``
column named by the output (":" becomes "_"), the row's values flattened row-major; a sequence
output keeps the row's own steps only.

The model comes from a path every worker sees, from a file shipped with ``--files`` /
``SparkContext.addFile`` (``spark_file="model.keras"``), or from the file's bytes
(``data=...``, broadcast once). Needs pyspark, pyarrow and NumPy on the driver and the workers;
this module imports them only when used. docs/spark.md has the details and deployment.
"""
from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
import types
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple



def _cache() -> Any:
    """The process's open models. Kept in a module of its own in sys.modules, not in this module's
    globals: score() ships this module by value, and each unpickled copy would start a new cache."""
    mod = sys.modules.get("_recur_spark_models")
    if mod is None:
        fresh = types.ModuleType("_recur_spark_models")
        fresh.models = {}  # type: ignore[attr-defined]
        fresh.lock = threading.Lock()  # type: ignore[attr-defined]
        mod = sys.modules.setdefault("_recur_spark_models", fresh)  # atomic: one wins if threads race
    return mod


class BadRowError(ValueError):
    """A row that cannot be scored (null or empty sequence, wrong feature count); the message names its key."""


def _load_recur(where: str) -> Any:
    try:
        import recur
        return recur
    except Exception as e:  # ImportError, OSError: the extension or librecur.so.0 does not load
        raise RuntimeError(
            "recur.spark: the recur package cannot be loaded on %s (host %s, Python %s at %s): %s: %s. Ship it to "
            "the workers: pip install the recur wheel into the workers' Python, or a packed venv/conda env with "
            "spark-submit --archives env.tar.gz#env and spark.pyspark.python=./env/bin/python "
            "(docs/spark.md, 'Deploying')" % (where, socket.gethostname(), sys.version.split()[0], sys.executable,
                                              type(e).__name__, e)) from e


class SparkScorer:
    """Scores a DataFrame's sequences; see the module's doc. Picklable: it holds no model and no context."""

    def __init__(self, path: Optional[str] = None, *, spark_file: Optional[str] = None, data: Optional[bytes] = None,
                 name: Optional[str] = None, sequence_col: str = "seq", key_cols: Optional[Sequence[str]] = None,
                 batch_size: int = 256, padding: str = "mask", bad_rows: str = "fail", output_prefix: str = "",
                 num_threads: int = 1, device: str = "cpu") -> None:
        if sum(x is not None for x in (path, spark_file, data)) != 1:
            raise ValueError("recur.spark: give exactly one of path, spark_file or data")
        if padding not in ("mask", "group"):
            raise ValueError("recur.spark: padding must be 'mask' or 'group', got %r" % (padding,))
        if bad_rows not in ("fail", "skip"):
            raise ValueError("recur.spark: bad_rows must be 'fail' or 'skip', got %r" % (bad_rows,))
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("recur.spark: batch_size must be a positive integer, got %r" % (batch_size,))
        self.path, self.spark_file = path, spark_file
        self._data: Optional[bytes] = bytes(data) if data is not None else None
        self._broadcast: Any = None
        self._digest = hashlib.sha256(self._data).hexdigest() if self._data is not None else None
        self.name = name or path or spark_file or "<memory>"
        self.sequence_col, self.key_cols = sequence_col, list(key_cols) if key_cols is not None else None
        self.batch_size, self.padding, self.bad_rows = batch_size, padding, bad_rows
        self.output_prefix, self.num_threads, self.device = output_prefix, num_threads, device
        self.skipped: Any = None  # a Spark accumulator once score() has run: rows bad_rows="skip" left out
        self._plan: Optional[Dict[str, Any]] = None

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        if state["_broadcast"] is not None:
            state["_data"] = None  # the workers read the broadcast
        return state

    # ---- the model, once per process -----------------------------------------------------------
    def _device(self, where: str) -> str:
        """"cuda:task" is the GPU Spark assigned to the running task (the CPU on the driver, which only plans)."""
        if self.device != "cuda:task":
            return self.device
        if where == "the driver":
            return "cpu"
        from pyspark import TaskContext
        tc = TaskContext.get()
        gpu = tc.resources().get("gpu") if tc is not None else None
        if gpu is None or not gpu.addresses:
            raise RuntimeError('recur.spark: device "cuda:task" needs a GPU assigned to each task, and this task on host '
                               '%s has none: set spark.executor.resource.gpu.amount, spark.task.resource.gpu.amount and '
                               'spark.executor.resource.gpu.discoveryScript (docs/spark.md, GPUs)' % socket.gethostname())
        return "cuda:%s" % gpu.addresses[0]

    def _model(self, where: str) -> Any:
        device = self._device(where)
        key = (self.path, self.spark_file, self._digest, device, self.num_threads)
        cache = _cache()
        m = cache.models.get(key)
        if m is not None:
            return m
        with cache.lock:
            m = cache.models.get(key)
            if m is None:
                m = self._open(where, device)
                cache.models[key] = m
            return m

    def _open(self, where: str, device: str) -> Any:
        recur = _load_recur(where)
        if self.path is not None:
            if not os.path.isfile(self.path):
                raise FileNotFoundError(
                    "recur.spark: the model file %s does not exist on %s (host %s): put it where every worker sees "
                    "it, or ship it with spark-submit --files / SparkContext.addFile and use spark_file=%r"
                    % (self.path, where, socket.gethostname(), os.path.basename(self.path)))
            source: Any = self.path
        elif self.spark_file is not None:
            from pyspark import SparkFiles
            local = SparkFiles.get(self.spark_file)
            if not os.path.isfile(local):
                raise FileNotFoundError(
                    "recur.spark: the model %r was not shipped to %s (host %s; looked for %s): add it with "
                    "spark-submit --files /path/%s or spark.sparkContext.addFile('/path/%s') before scoring"
                    % (self.spark_file, where, socket.gethostname(), local, self.spark_file, self.spark_file))
            source = local
        else:
            source = self._data if self._data is not None else self._broadcast.value
        try:
            m = recur.load_model(source, num_threads=self.num_threads)
        except recur.RecurError as e:
            raise RuntimeError("recur.spark: cannot open the model %s on %s: %s" % (self.name, where, e)) from e
        if m.stateful:
            raise ValueError("recur.spark: the model %s is stateful: its rows would carry states into each other; "
                             "save it with stateful=False to score rows independently" % self.name)
        if device != "cpu":
            m.device = device
        return m

    # ---- on the driver -------------------------------------------------------------------------
    def _make_plan(self, schema: Any) -> Dict[str, Any]:
        from pyspark.sql import types as T
        m = self._model("the driver")
        names = schema.names
        if self.sequence_col not in names:
            raise ValueError("recur.spark: no sequence column %r among %s" % (self.sequence_col, names))
        keys = self.key_cols if self.key_cols is not None else [n for n in names if n != self.sequence_col]
        for k in keys:
            if k not in names:
                raise ValueError("recur.spark: no key column %r among %s" % (k, names))
        if len(m.inputs) != 1:
            raise ValueError("recur.spark: the model %s has %d inputs; SparkScorer scores models with one sequence "
                             "input" % (self.name, len(m.inputs)))
        spec = m.inputs[0]
        if not spec.sequence or spec.dtype == "string" or len(spec.shape) not in (2, 3) or \
                (len(spec.shape) == 3 and not spec.shape[2]):
            raise ValueError("recur.spark: the model %s's input %r is %s; SparkScorer takes (batch, steps, features) "
                             "with a known feature count, or (batch, steps) token ids" % (self.name, spec.name, spec))
        features = int(spec.shape[2]) if len(spec.shape) == 3 else 0
        t = schema[self.sequence_col].dataType
        numeric = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
        nested = isinstance(t, T.ArrayType) and isinstance(t.elementType, T.ArrayType) and \
            isinstance(t.elementType.elementType, numeric)
        flat = isinstance(t, T.ArrayType) and isinstance(t.elementType, numeric)
        if not nested and not flat:
            raise ValueError("recur.spark: column %r is %s; it must hold array<array<number>> (steps of %d features) "
                             "or array<number> (steps flattened)" % (self.sequence_col, t.simpleString(),
                                                                     max(features, 1)))
        if nested and features == 0:
            raise ValueError("recur.spark: the model %s takes token ids (batch, steps): column %r must be "
                             "array<number>, one id per step" % (self.name, self.sequence_col))
        outputs = [(n, len(s.shape) >= 3 and s.shape[1] is None) for n, s in zip(m.output_names, m.outputs)]
        fields = [schema[k] for k in keys]
        for n, _ in outputs:
            col = self.output_prefix + n.replace(":", "_")
            if col in keys:
                raise ValueError("recur.spark: output column %r clashes with a key column; set output_prefix" % col)
            fields.append(T.StructField(col, T.ArrayType(T.FloatType(), False), False))
        return {"keys": keys, "input": spec.name, "features": features, "nested": nested, "outputs": outputs,
                "schema": T.StructType(fields)}

    def output_schema(self, df: Any) -> Any:
        """The StructType that score(df) gives (opens the model on the driver)."""
        return self._make_plan(df.schema)["schema"]

    def score(self, df: Any) -> Any:
        """The scored DataFrame (lazy): the key columns and one array<float> column per model output."""
        from pyspark import cloudpickle
        # By value, so that a worker without a loadable recur gets this module's message, not an
        # ImportError from unpickling.
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        sc = df.sparkSession.sparkContext
        if self._data is not None and self._broadcast is None:
            self._broadcast = sc.broadcast(self._data)
        self._plan = self._make_plan(df.schema)
        self.skipped = sc.accumulator(0)
        return df.mapInArrow(self, self._plan["schema"])

    # ---- on the workers ------------------------------------------------------------------------
    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """The function mapInArrow runs: Arrow record batches in, scored record batches out."""
        import pyarrow as pa
        plan = self._plan
        assert plan is not None, "recur.spark: call score(df), which plans the output, before running the scorer"
        model = self._model("the Spark worker")
        for rb in batches:
            for start in range(0, rb.num_rows, self.batch_size):
                out = self._score(model, rb.slice(start, self.batch_size), plan, pa)
                if out is not None and out.num_rows:
                    yield out

    def _describe(self, rb: Any, row: int, keys: List[str]) -> str:
        if not keys:
            return "#%d of its batch" % row
        parts = []
        for k in keys:
            v = repr(rb.column(k)[row].as_py())
            parts.append("%s=%s" % (k, v if len(v) <= 64 else v[:64] + "..."))
        return ", ".join(parts)

    def _bad(self, rb: Any, row: int, why: str, keys: List[str]) -> None:
        if self.bad_rows == "skip":
            self.skipped.add(1)
            return
        raise BadRowError("recur.spark: cannot score row %s: %s (bad_rows='skip' leaves such rows out)"
                          % (self._describe(rb, row, keys), why))

    def _rows(self, col: Any, plan: Dict[str, Any], pa: Any) -> Tuple[Any, Any, List[Tuple[int, str]]]:
        """Each row's steps as one (total_steps, width) float32 array, the rows' lengths, the bad rows."""
        import numpy as np
        import pyarrow.compute as pc
        width = max(plan["features"], 1)
        n = len(col)
        bad: List[Tuple[int, str]] = []
        values: Any = None
        lens = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        if plan["nested"]:
            steps = col.flatten()  # the steps of non-null rows, in order
            step_len = pc.list_value_length(steps)
            ok = steps.null_count == 0 and pc.all(pc.equal(step_len, width)).as_py() is not False
            values = steps.flatten() if ok else None
        else:
            values = col.flatten()
            ok = bool((lens % width == 0).all())
        ok = ok and values is not None and values.null_count == 0 and col.null_count == 0 and bool((lens > 0).all())
        if not ok:  # find each bad row and why, row by row (the slow path, only when some row is bad)
            for i in range(n):
                why = self._why(col[i].as_py(), plan, width)
                if why is not None:
                    bad.append((i, why))
            good = np.ones(n, bool)
            good[[i for i, _ in bad]] = False
            col = col.filter(pa.array(good))
            lens = lens[good]
            values = col.flatten().flatten() if plan["nested"] else col.flatten()
        x = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, width)
        if not plan["nested"]:
            lens = lens // width
        return x, lens, bad

    @staticmethod
    def _why(v: Any, plan: Dict[str, Any], width: int) -> Optional[str]:
        if v is None:
            return "the sequence is null"
        if plan["nested"]:
            for s, step in enumerate(v):
                if step is None:
                    return "step %d is null" % s
                if len(step) != width:
                    return "step %d has %d features; the model's input %r takes %d" % (s, len(step), plan["input"],
                                                                                    width)
                for k, f in enumerate(step):
                    if f is None:
                        return "step %d, feature %d is null" % (s, k)
        else:
            if len(v) % width:
                return "the flattened sequence has %d values, not a multiple of the model's %d features (input %r)" \
                    % (len(v), width, plan["input"])
            for k, f in enumerate(v):
                if f is None:
                    return "step %d, feature %d is null" % (k // width, k % width)
        if len(v) == 0:
            return "the sequence is empty (a row needs at least one step)"
        return None

    def _score(self, model: Any, rb: Any, plan: Dict[str, Any], pa: Any) -> Any:
        import numpy as np
        keys = plan["keys"]
        x, lens, bad = self._rows(rb.column(self.sequence_col), plan, pa)
        for i, why in bad:
            self._bad(rb, i, why, keys)
        if bad:
            good = np.ones(rb.num_rows, bool)
            good[[i for i, _ in bad]] = False
            rb = rb.filter(pa.array(good))
        if rb.num_rows == 0:
            return None
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        if self.padding == "group":
            per_row: List[List[Any]] = [[None] * rb.num_rows for _ in plan["outputs"]]
            for t in np.unique(lens):
                idx = np.nonzero(lens == t)[0]
                sel = (starts[idx][:, None] + np.arange(t)[None, :]).reshape(-1)
                ys = self._predict(model, x[sel].reshape(len(idx), int(t), *self._feat(plan)), None, rb, idx, plan)
                for o, y in enumerate(ys):
                    flat = y.reshape(len(idx), -1)
                    for j, r in enumerate(idx):
                        per_row[o][r] = flat[j]
            arrays = [pa.array(rows, type=pa.list_(pa.float32())) for rows in per_row]
        else:
            b, t = rb.num_rows, int(lens.max())
            row_of = np.repeat(np.arange(b), lens)
            step_of = np.arange(len(x)) - np.repeat(starts, lens)
            xp = np.zeros((b, t, x.shape[1]), np.float32)
            xp[row_of, step_of] = x
            mask = np.zeros((b, t), bool)
            mask[row_of, step_of] = True
            if not plan["features"]:
                xp = xp[:, :, 0]
            ys = self._predict(model, xp, mask if (lens != t).any() else None, rb, np.arange(b), plan)
            arrays = []
            for (name, seq), y in zip(plan["outputs"], ys):
                if seq and y.shape[1] == t:  # a sequence output: the row's own steps
                    per_step = int(np.prod(y.shape[2:]))
                    values = y[mask].reshape(-1)
                    offsets = np.concatenate([[0], np.cumsum(lens * per_step)]).astype(np.int32)
                else:
                    values = y.reshape(b, -1).reshape(-1)
                    offsets = (np.arange(b + 1) * (values.size // b)).astype(np.int32)
                arrays.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.astype(np.float32))))
        cols = [rb.column(k) for k in keys] + arrays
        schema = pa.schema([pa.field(f.name, a.type, f.nullable)
                            for f, a in zip(plan["schema"].fields, cols)])
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    @staticmethod
    def _feat(plan: Dict[str, Any]) -> Tuple[int, ...]:
        return (plan["features"],) if plan["features"] else ()

    def _predict(self, model: Any, x: Any, mask: Any, rb: Any, rows: Any, plan: Dict[str, Any]) -> List[Any]:
        recur = _load_recur("the Spark worker")
        names = [n for n, _ in plan["outputs"]]
        try:
            out = model.predict(x, mask=mask, return_dict=True)
        except recur.RecurError as e:
            if len(rows) > 1:
                raise RuntimeError("recur.spark: scoring rows %s .. %s (%d rows) failed: %s"
                                   % (self._describe(rb, int(rows[0]), plan["keys"]),
                                      self._describe(rb, int(rows[-1]), plan["keys"]), len(rows), e)) from e
            raise BadRowError("recur.spark: cannot score row %s: %s"
                              % (self._describe(rb, int(rows[0]), plan["keys"]), e)) from e
        return [out[n] for n in names]
