// SPDX-License-Identifier: Apache-2.0

package recur

// Models as graphs (recur 0.4): several inputs and outputs, models opened from memory, stateful
// models, Keras backends, and ModelState, one stream through a whole model.

import (
	"io"
	"runtime"
	"strconv"

	"recur.dev/recur/internal/recurswig"
)

// maxRank is the C ABI's RECUR_MAX_RANK: the largest rank of a model input or output.
const maxRank = 8

// newModel wraps a freshly opened model handle (it takes ownership; on error it frees it).
func newModel(h recurswig.Model) (*Model, error) {
	m := &Model{native: native[recurswig.SwigcptrModel]{h: recurswig.SwigcptrModel(h.Swigcptr())}}
	ni := recurswig.NewModelInfo()
	if err := m.native.h.Get_info(ni); err != nil {
		recurswig.DeleteModelInfo(ni)
		recurswig.DeleteModel(m.native.h)
		return nil, err
	}
	m.info = ModelInfo{
		Dialect: Dialect(ni.GetDialect()), KerasVersion: ni.GetKeras_version(), NumLayers: ni.GetNum_layers(),
		Runnable: ni.GetRunnable() != 0, Unsupported: ni.GetUnsupported(), InputSize: ni.GetInput_size(),
		TakesTokenIDs: ni.GetTakes_token_ids() != 0, OutputSize: ni.GetOutput_size(),
		ReturnsSequences: ni.GetReturns_sequences() != 0, NumOutputs: ni.GetNum_outputs(),
	}
	recurswig.DeleteModelInfo(ni)
	var stateful int32
	if err := m.native.h.Is_stateful(&stateful); err != nil {
		recurswig.DeleteModel(m.native.h)
		return nil, err
	}
	m.stateful = stateful != 0
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// OpenModelBytes opens a model from the bytes of a .keras or legacy .h5 file (copied during the
// call). Bytes that are not a Keras file fail with ErrIO ("<memory>: ..."), no bytes with
// ErrInvalidArgument.
func OpenModelBytes(data []byte) (*Model, error) { return OpenModelBytesNamed("", data) }

// OpenModelBytesNamed is OpenModelBytes with name standing for the file in messages.
func OpenModelBytesNamed(name string, data []byte) (*Model, error) {
	var err error
	h := recurswig.ModelOpen_memory(data, len(data), name, &err)
	runtime.KeepAlive(data)
	if err != nil {
		return nil, err
	}
	return newModel(h)
}

// OpenModelReader reads a .keras or .h5 file image from r to its end and opens it. When r has a
// Name() string method (an *os.File), that name stands for the file in messages.
func OpenModelReader(r io.Reader) (*Model, error) {
	if r == nil {
		return nil, argError("OpenModelReader: r is nil")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	name := ""
	if n, ok := r.(interface{ Name() string }); ok {
		name = n.Name()
	}
	return OpenModelBytesNamed(name, data)
}

// TensorInfo describes a model input or output.
type TensorInfo struct {
	Index    int    // position in Keras's model.inputs / model.outputs
	Name     string // the InputLayer's name, or Keras's model.output_names entry
	Dims     []int  // batch axis first; -1 where given at run time (the batch unless a stateful model fixes it, an open timesteps axis)
	TokenIDs bool   // an input of integer ids (passed as floats); false for outputs
	// Sequence: an input with a timesteps axis (axis 1), as the C ABI says: its length comes from
	// the run's timesteps, masks address it and ModelState feeds it a few steps at a time; other
	// inputs are given whole. False for outputs.
	Sequence bool
}

// StatefulLayer is one stateful layer of a model: the name States and SetStates take
// ("name/forward" or "name/backward" for a Bidirectional half) and the shape of its states,
// NumStates x (Batch, Units).
type StatefulLayer struct {
	Index     int // position among the model's stateful layers (config order)
	Name      string
	NumStates int // 1 (GRU, SimpleRNN: h) or 2 (LSTM: h and c)
	Batch     int // the batch_size the layer fixes
	Units     int
}

// StatesLength is the number of floats of its states: NumStates * Batch * Units.
func (l StatefulLayer) StatesLength() int { return l.NumStates * l.Batch * l.Units }

func dimsOf(d []int64, rank int32) []int {
	out := make([]int, int(rank))
	for i := range out {
		out[i] = int(d[i])
	}
	return out
}

func steps32(m *Model, timesteps []int) ([]int32, error) {
	if timesteps == nil { // every input's length is fixed by the model
		n, err := m.NumInputs()
		if err != nil {
			return nil, err
		}
		return make([]int32, n), nil
	}
	out := make([]int32, len(timesteps))
	for i, t := range timesteps {
		out[i] = int32(clampInt32(t))
	}
	return out, nil
}

// NumInputs is the number of model inputs (Keras's model.inputs).
func (m *Model) NumInputs() (int, error) {
	var n int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Num_inputs(&n) })
	return int(n), err
}

// NumOutputs is the number of model outputs (Keras's model.outputs).
func (m *Model) NumOutputs() (int, error) {
	var n int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Num_outputs(&n) })
	return int(n), err
}

// Input describes input index (ErrInvalidArgument out of range).
func (m *Model) Input(index int) (TensorInfo, error) {
	t := TensorInfo{Index: index}
	var rank, ids int32
	d := make([]int64, maxRank)
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Input(clampInt32(index), &t.Name, &rank, &ids, d, len(d))
	})
	if err != nil {
		return TensorInfo{}, err
	}
	t.Dims, t.TokenIDs = dimsOf(d, rank), ids != 0
	if t.Sequence, err = m.IsSequence(index); err != nil {
		return TensorInfo{}, err
	}
	return t, nil
}

// TakesStrings reports whether input index holds texts (Keras dtype "string", read by
// StringLookup or TextVectorization): pass it as NewStringTensor (since 0.7). ErrInvalidArgument
// for an index out of range.
func (m *Model) TakesStrings(index int) (bool, error) {
	var dtype int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Input_dtype(clampInt32(index), &dtype) })
	return dtype == dtypeString, err
}

// IsSequence reports whether input index has a timesteps axis (axis 1): its length comes from the
// run's timesteps, masks address it, and ModelState.Step feeds it a few steps at a time (the others
// are given whole on every step). ErrInvalidArgument for an index out of range.
func (m *Model) IsSequence(index int) (bool, error) {
	var s int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Input_sequence(clampInt32(index), &s) })
	return s != 0, err
}

// NumStatefulLayers is the number of stateful layers (Bidirectional halves count one each).
func (m *Model) NumStatefulLayers() (int, error) {
	var n int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Num_stateful_layers(&n) })
	return int(n), err
}

// StatefulLayer describes stateful layer index, in config order (ErrInvalidArgument out of range).
func (m *Model) StatefulLayer(index int) (StatefulLayer, error) {
	l := StatefulLayer{Index: index}
	var ns, batch, units int32
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Stateful_layer(clampInt32(index), &l.Name, &ns, &batch, &units)
	})
	if err != nil {
		return StatefulLayer{}, err
	}
	l.NumStates, l.Batch, l.Units = int(ns), int(batch), int(units)
	return l, nil
}

// StatefulLayers describes every stateful layer, in config order (empty for a model that is not
// stateful).
func (m *Model) StatefulLayers() ([]StatefulLayer, error) {
	n, err := m.NumStatefulLayers()
	return each(n, err, m.StatefulLayer)
}

// Output describes output index (ErrInvalidArgument out of range).
func (m *Model) Output(index int) (TensorInfo, error) {
	t := TensorInfo{Index: index}
	var rank int32
	d := make([]int64, maxRank)
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Output(clampInt32(index), &t.Name, &rank, d, len(d))
	})
	if err != nil {
		return TensorInfo{}, err
	}
	t.Dims = dimsOf(d, rank)
	return t, nil
}

// Inputs describes every input, in Keras's model.inputs order.
func (m *Model) Inputs() ([]TensorInfo, error) {
	n, err := m.NumInputs()
	return each(n, err, m.Input)
}

// Outputs describes every output, in Keras's model.outputs order.
func (m *Model) Outputs() ([]TensorInfo, error) {
	n, err := m.NumOutputs()
	return each(n, err, m.Output)
}

// OutputDims is the shape of output index for batch rows and timesteps[i] steps of input i (nil
// when every input's length is fixed). ErrShape when the timesteps do not fit the graph.
func (m *Model) OutputDims(index, batch int, timesteps []int) ([]int, error) {
	ts, err := steps32(m, timesteps)
	if err != nil {
		return nil, err
	}
	var rank int32
	d := make([]int64, maxRank)
	err = m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Output_dims(clampInt32(index), clampInt32(batch), ts, len(ts), &rank, d, len(d))
	})
	if err != nil {
		return nil, err
	}
	return dimsOf(d, rank), nil
}

// OutputShapes is OutputDims of every output.
func (m *Model) OutputShapes(batch int, timesteps []int) ([][]int, error) {
	n, err := m.NumOutputs()
	return each(n, err, func(i int) ([]int, error) { return m.OutputDims(i, batch, timesteps) })
}

// InputsLength is the number of floats RunFlat reads: every input for those shapes, concatenated.
func (m *Model) InputsLength(batch int, timesteps []int) (int, error) {
	return m.length(batch, timesteps, true)
}

// OutputsLength is the number of floats RunFlat writes: every output, concatenated.
func (m *Model) OutputsLength(batch int, timesteps []int) (int, error) {
	return m.length(batch, timesteps, false)
}

func (m *Model) length(batch int, timesteps []int, inputs bool) (int, error) {
	ts, err := steps32(m, timesteps)
	if err != nil {
		return 0, err
	}
	var n uint64
	err = m.reading(func(h recurswig.SwigcptrModel) error {
		if inputs {
			return h.Inputs_length(clampInt32(batch), ts, len(ts), &n)
		}
		return h.Outputs_length(clampInt32(batch), ts, len(ts), &n)
	})
	return int(n), err
}

func concatInputs(inputs [][]float32, count int) ([]float32, error) {
	if len(inputs) != count {
		return nil, argError("inputs: expected " + strconv.Itoa(count) + " slices (one per model input), got " + strconv.Itoa(len(inputs)))
	}
	n := 0
	for _, x := range inputs {
		n += len(x)
	}
	out := make([]float32, 0, n)
	for _, x := range inputs {
		out = append(out, x...)
	}
	return out, nil
}

func concatMasks(masks [][]byte, count int) ([]byte, error) {
	if masks == nil {
		return nil, nil
	}
	if len(masks) != count {
		return nil, argError("masks: expected " + strconv.Itoa(count) + " entries (one per model input, nil where none), got " +
			strconv.Itoa(len(masks)))
	}
	var out []byte
	for _, m := range masks {
		out = append(out, m...)
	}
	return out, nil
}

func product(d []int) int {
	n := 1
	for _, v := range d {
		n *= v
	}
	return n
}

func splitOutputs(flat []float32, dims [][]int) ([][]float32, error) {
	out := make([][]float32, len(dims))
	o := 0
	for i, d := range dims {
		n := product(d)
		if o+n > len(flat) {
			return nil, &Error{Status: ErrInternal, Msg: "the outputs' dims exceed their length"}
		}
		out[i] = flat[o : o+n : o+n]
		o += n
	}
	if o != len(flat) {
		return nil, &Error{Status: ErrInternal, Msg: "the outputs' dims do not cover their length"}
	}
	return out, nil
}

// runSplit is RunInputs and Step around their flat forms: it checks and concatenates the inputs
// and masks (one entry per model input), runs into one buffer of the output shapes dims gives,
// and splits that into one slice per output.
func runSplit(inputs [][]float32, masks [][]byte, numInputs int, dims func() ([][]int, error),
	run func(x []float32, mk []byte, y []float32) error) ([][]float32, error) {
	x, err := concatInputs(inputs, numInputs)
	if err != nil {
		return nil, err
	}
	mk, err := concatMasks(masks, numInputs)
	if err != nil {
		return nil, err
	}
	shapes, err := dims()
	if err != nil {
		return nil, err
	}
	total := 0
	for _, d := range shapes {
		total += product(d)
	}
	y := make([]float32, total)
	if err := run(x, mk, y); err != nil {
		return nil, err
	}
	return splitOutputs(y, shapes)
}

// RunInputs runs the graph (Keras's model.predict on one batch): one row-major slice per model
// input (token ids as floats), timesteps[i] the steps of input i (ignored for inputs of a fixed
// length; nil when every length is fixed), masks nil or one entry per input: the (B, T_i) mask of
// a sequence input (nonzero = valid) or nil (give masks for every sequence input or none). It
// returns one slice per model output, shaped as OutputShapes. ErrUnsupported names a layer recur
// cannot run; ErrShape a length that does not fit.
func (m *Model) RunInputs(inputs [][]float32, batch int, timesteps []int, masks [][]byte) ([][]float32, error) {
	n, err := m.NumInputs()
	if err != nil {
		return nil, err
	}
	return runSplit(inputs, masks, n, func() ([][]int, error) { return m.OutputShapes(batch, timesteps) },
		func(x []float32, mk []byte, y []float32) error { return m.RunFlat(x, batch, timesteps, mk, y) })
}

// RunFlat is the C ABI's form of RunInputs: every input concatenated, masks nil or concatenated,
// every output concatenated into outputs (OutputsLength floats). It allocates one small slice per
// call (the timesteps as int32); RunNamedInto allocates nothing. Concurrent runs proceed in
// parallel unless the model is stateful: then the binding runs them one at a time.
func (m *Model) RunFlat(inputs []float32, batch int, timesteps []int, masks []byte, outputs []float32) error {
	ts, err := steps32(m, timesteps)
	if err != nil {
		return err
	}
	return m.running(func(h recurswig.SwigcptrModel) error {
		return h.Run_inputs(clampInt32(batch), ts, len(ts), inputs, len(inputs), masks, len(masks), outputs, len(outputs))
	})
}

// IsStateful reports whether some layer is stateful: runs then carry its states from call to
// call, as in Keras.
func (m *Model) IsStateful() (bool, error) {
	if _, err := m.read(); err != nil {
		return false, err
	}
	s := m.stateful
	m.readDone()
	return s, nil
}

// ResetStates zeroes the states of every stateful layer (Keras's model.reset_states()). It waits
// for runs in progress.
func (m *Model) ResetStates() error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Reset_states() })
}

// StatesLength is the number of floats of the states of stateful layer layer ("name/forward" or
// "name/backward" for a Bidirectional half). ErrInvalidArgument when there is no such layer or it
// is not stateful.
func (m *Model) StatesLength(layer string) (int, error) {
	var n uint64
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.States_length(layer, &n) })
	return int(n), err
}

// GetStates copies the states of stateful layer layer (NumStates x (batch_size, units), h then c)
// into out (StatesLength floats).
func (m *Model) GetStates(layer string, out []float32) error {
	return m.reading(func(h recurswig.SwigcptrModel) error { return h.Get_states(layer, out, len(out)) })
}

// States returns the states of stateful layer layer in a new slice.
func (m *Model) States(layer string) ([]float32, error) {
	n, err := m.StatesLength(layer)
	return filled(n, err, func(out []float32) error { return m.GetStates(layer, out) })
}

// SetStates sets all the states of stateful layer layer (StatesLength floats; ErrShape
// otherwise). It waits for runs in progress.
func (m *Model) SetStates(layer string, values []float32) error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Set_states(layer, values, len(values)) })
}

// SetKerasBackend sets Keras 3 backend semantics on every layer: "tensorflow" (the default, also
// torch's) or "jax" (also numpy's); they differ at masked steps before the first valid one.
// ErrInvalidArgument for another name, ErrUnsupported for "jax" on a Keras 2 model. It waits for
// runs in progress.
func (m *Model) SetKerasBackend(backend string) error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Set_keras_backend(backend) })
}

// Streamable is "" when the model streams (NewModelState), else why not, naming the layer.
func (m *Model) Streamable() (string, error) {
	var why string
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Streamable(&why) })
	return why, err
}

// SetKerasBackend sets Keras 3 backend semantics: "tensorflow" (the default, also torch's) or
// "jax" (also numpy's). They differ at masked steps before the first valid one (JAX outputs the
// initial state, TensorFlow zeros) and in that JAX's unroll=True ignores zero_output_for_mask.
// ErrInvalidArgument for another name, ErrUnsupported for "jax" on a Keras 2 layer.
func (l *Layer) SetKerasBackend(backend string) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Set_keras_backend(backend) })
}

// ---------------------------------------------------------------------------------------------
// ModelState
// ---------------------------------------------------------------------------------------------

// ModelState is one stream (a batch of rows) through a whole model, stepped some timesteps at a
// time: feeding a sequence in pieces gives the outputs of one run over all of it. Any number of
// states may step one model from any number of goroutines (the binding serializes each state). A
// state stays valid after its model is closed. Close it when done.
type ModelState struct {
	native      native[recurswig.SwigcptrModelState]
	batch       int
	numInputs   int // copied at creation (the state outlives its model)
	numOutputs  int
	outputNames []string // Model.OutputNames, for StepNamed of every output
}

// NewModelState creates a zero stream state of batch rows for model. ErrUnsupported when the
// model does not stream (the message names the layer; see Model.Streamable), ErrInvalidArgument
// for batch <= 0 or not the batch_size of the model's stateful layers.
func NewModelState(model *Model, batch int) (*ModelState, error) {
	names, err := model.OutputNames()
	if err != nil {
		return nil, err
	}
	nout := len(names)
	n, err := model.NumInputs()
	if err != nil {
		return nil, err
	}
	mh, err := model.read()
	if err != nil {
		return nil, err
	}
	h := recurswig.ModelStateCreate(mh, clampInt32(batch), &err)
	model.readDone()
	if err != nil {
		return nil, err
	}
	s := &ModelState{native: native[recurswig.SwigcptrModelState]{h: recurswig.SwigcptrModelState(h.Swigcptr())}, batch: batch, numInputs: n, numOutputs: nout, outputNames: names}
	runtime.SetFinalizer(s, (*ModelState).Close)
	return s, nil
}

// Close frees the state. It is idempotent.
func (s *ModelState) Close() error {
	return s.guard().free(s, func(h recurswig.SwigcptrModelState) { recurswig.DeleteModelState(h) })
}

// guard is the model state's handle and lock; nil for a nil *ModelState, which reads as closed.
func (s *ModelState) guard() *native[recurswig.SwigcptrModelState] {
	if s == nil {
		return nil
	}
	return &s.native
}

// lock locks the model state for a call; locked runs call on its handle with it locked.
func (s *ModelState) lock() (recurswig.SwigcptrModelState, error) {
	return s.guard().lockWrite("model state")
}
func (s *ModelState) unlock() { s.native.unlockWrite() }
func (s *ModelState) locked(call func(recurswig.SwigcptrModelState) error) error {
	return s.guard().writing("model state", call)
}

// Batch is the number of rows of the stream (0 once closed).
func (s *ModelState) Batch() int {
	if _, err := s.lock(); err != nil {
		return 0
	}
	b := s.batch
	s.unlock()
	return b
}

// Lengths are the floats a step of timesteps steps reads (every input, concatenated) and writes
// (every output, concatenated).
func (s *ModelState) Lengths(timesteps int) (inputs, outputs int, err error) {
	var in, out uint64
	err = s.locked(func(h recurswig.SwigcptrModelState) error { return h.Lengths(clampInt32(timesteps), &in, &out) })
	return int(in), int(out), err
}

// StepOutputDims is the shape of output index of a step of timesteps steps: a sequence output
// holds those steps, the others are what the model outputs after them. ErrInvalidArgument for an
// index out of range or timesteps < 1.
func (s *ModelState) StepOutputDims(index, timesteps int) ([]int, error) {
	var rank int32
	d := make([]int64, maxRank)
	err := s.locked(func(h recurswig.SwigcptrModelState) error {
		return h.Output_dims(clampInt32(index), clampInt32(timesteps), &rank, d, len(d))
	})
	if err != nil {
		return nil, err
	}
	return dimsOf(d, rank), nil
}

// OutputDims is the shape of each output of a step of timesteps steps (StepOutputDims of every
// output).
func (s *ModelState) OutputDims(timesteps int) ([][]int, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	n := s.numOutputs
	s.unlock()
	return each(n, nil, func(i int) ([]int, error) { return s.StepOutputDims(i, timesteps) })
}

// Step feeds the next timesteps (>= 1) steps of every sequence input (inputs without a timesteps
// axis are given whole on every call) and returns what the model outputs for them, one slice per
// output (OutputDims). masks: nil, or one entry per input, a (batch, timesteps) mask for a
// sequence input or nil.
func (s *ModelState) Step(inputs [][]float32, timesteps int, masks [][]byte) ([][]float32, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	n := s.numInputs
	s.unlock()
	return runSplit(inputs, masks, n, func() ([][]int, error) { return s.OutputDims(timesteps) },
		func(x []float32, mk []byte, y []float32) error { return s.StepFlat(x, timesteps, mk, y) })
}

// StepFlat is the C ABI's form of Step: every input concatenated, masks nil or concatenated,
// every output concatenated into outputs (no allocation).
func (s *ModelState) StepFlat(inputs []float32, timesteps int, masks []byte, outputs []float32) error {
	return s.locked(func(h recurswig.SwigcptrModelState) error {
		return h.Step(clampInt32(timesteps), inputs, len(inputs), masks, len(masks), outputs, len(outputs))
	})
}

// Reset zeroes the state: the next step starts a new stream.
func (s *ModelState) Reset() error {
	return s.locked(func(h recurswig.SwigcptrModelState) error { return h.Reset() })
}
