// SPDX-License-Identifier: Apache-2.0

// Package recur runs Keras recurrent layers (GRU, LSTM, CuDNNGRU, CuDNNLSTM, SimpleRNN, GRUCell,
// LSTMCell, SimpleRNNCell) with Keras's exact numbers, through librecur's C ABI.
//
// Layers come from options (NewLayer), from the JSON Keras writes for a layer (LayerFromJSON) or
// from a Keras model file (OpenModel, then Model.Layer). Tensors are dense, row-major []float32
// slices that are handed to the library without a copy; outputs are written into slices the
// caller allocates (the *Len / OutputLength helpers give their sizes), so a steady-state loop
// allocates nothing.
//
// Every fallible method returns an error; recur's own errors are *Error values carrying the C
// ABI's status and the library's message (use errors.As). Layer, State and Model hold native
// resources: Close them (Close is idempotent; a finalizer is only a safety net). Using an object
// after Close returns an *Error with Status ErrState.
//
// Concurrency: every method is safe to call from any goroutine. ForwardState may run
// concurrently on one Layer with different States (the layer's weights are only read); methods
// that change a layer (Forward, CellCall, SetWeights, ...) are serialized on that layer by the
// binding. A State is used by one goroutine at a time (the binding serializes it too).
package recur

import (
	"math"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"

	"recur.dev/recur/internal/recurswig"
)

// Error is the error of a failed recur call: Status is one of the Err* constants and Msg is the
// library's message (it names the argument and what was expected).
type Error = recurswig.Error

// Status codes (the C ABI's recur_status).
const (
	OK                 = 0
	ErrInvalidArgument = -1 // NULL pointer, value out of range, unknown name
	ErrShape           = -2 // a length or dimension that does not agree
	ErrUnsupported     = -3 // valid Keras, but not in this dialect / not supported
	ErrParse           = -4 // malformed JSON
	ErrState           = -5 // closed object, or the object cannot do this
	ErrOutOfMemory     = -6
	ErrIO              = -7 // file access
	ErrLimit           = -8 // over a resource limit (see Limit); the message names the limit
	ErrCancelled       = -9 // a context cancelled the run or step (Error.Cause is ctx.Err())
	ErrInternal        = -100
)

// LayerType is the Keras class of a layer.
type LayerType int

const (
	GRU           LayerType = 1
	LSTM          LayerType = 2
	CuDNNGRU      LayerType = 3 // Keras 2 only
	CuDNNLSTM     LayerType = 4 // Keras 2 only
	GRUCell       LayerType = 5 // single-step cells: use CellCall
	LSTMCell      LayerType = 6
	SimpleRNN     LayerType = 7
	SimpleRNNCell LayerType = 8
)

// Dialect selects Keras 2 (tf.keras / tf-keras) or Keras 3 semantics.
type Dialect int

const (
	DialectAuto Dialect = 0 // JSON: detect from the fields; options: Keras 3
	Keras2      Dialect = 2
	Keras3      Dialect = 3
)

// OptBool is a flag whose zero value means "the layer's Keras default".
type OptBool int8

const (
	Unset OptBool = iota // the Keras default of the dialect
	True
	False
)

func (b OptBool) c() int {
	switch b {
	case True:
		return 1
	case False:
		return 0
	}
	return -1 // RECUR_DEFAULT
}

// StatusString names a status code, like the C ABI's recur_status_string ("invalid argument").
func StatusString(status int) string { return recurswig.StatusString(status) }

// Version is the loaded library's version, "MAJOR.MINOR.PATCH".
func Version() string { return recurswig.Recur_binding_version() }

// CPUKernels is the CPU kernel set this process runs: "avx512", "avx2" or "baseline", chosen when
// the library loads from the CPU's features (the environment variable RECUR_CPU_KERNELS, read at
// load, can ask for a lower set).
func CPUKernels() string { return recurswig.Recur_binding_cpu_kernels() }

// Limit is one of the process-wide resource limits. Every size that comes from a model file, a
// JSON config or an argument is checked against them before recur allocates for it; going over
// one fails with an *Error of Status ErrLimit whose message names the limit.
type Limit int

const (
	LimitUnits       Limit = 0 // units of one recurrent layer (default 65536)
	LimitBatch       Limit = 1 // batch of a stateful layer, a State or a ModelState (default 1048576)
	LimitStateBytes  Limit = 2 // bytes of the states one stateful layer or one state holds (default 256 MiB)
	LimitWeightBytes Limit = 3 // bytes of one layer's weights as held (gates padded to panels of 8-32 columns), and of all of one model's as stored (default 1 GiB)
	LimitFileBytes   Limit = 4 // bytes of a model file or image, or of one .keras member (default 4 GiB)
	LimitTensorBytes Limit = 5 // bytes of one tensor a model allocates as it is built, runs or streams (default 1 GiB)
	// Budgets over the whole (since 0.8):
	LimitTotalStateBytes Limit = 6 // bytes of the states of all of one model's stateful layers, or of one ModelState (default 256 MiB)
	LimitRunBytes        Limit = 7 // bytes of the tensors live at once in one run or step, planned before it starts (default 512 MiB)
	LimitTimesteps       Limit = 8 // timesteps one layer creates (RepeatVector n, UpSampling1D) (default 1048576)
	LimitInitWork        Limit = 9 // multiply-adds of one initializer that grows faster than its output (Orthogonal's QR) (default 2^31)
	// Since 0.9:
	LimitRunWork Limit = 10 // work of one run or step, planned before it starts, in units of about one multiply-add of a large matrix product (default 2^38)
)

var limitNames = [...]string{"units", "batch", "state_bytes", "weight_bytes", "file_bytes", "tensor_bytes",
	"total_state_bytes", "run_bytes", "timesteps", "init_work", "run_work"}

// String is the limit's name as recur's messages and the CLI's --limit spell it ("units",
// "weight_bytes", ...).
func (l Limit) String() string {
	if l >= 0 && int(l) < len(limitNames) {
		return limitNames[l]
	}
	return "Limit(" + strconv.Itoa(int(l)) + ")"
}

// GetLimit is the current value of a limit: a count for LimitUnits and LimitBatch, bytes for the
// others. An unknown limit is an ErrInvalidArgument.
func GetLimit(l Limit) (uint64, error) {
	var v uint64
	if err := recurswig.Recur_binding_get_limit(clampInt32(int(l)), &v); err != nil {
		return 0, err
	}
	return v, nil
}

// DefaultLimit is the built-in default of a limit.
func DefaultLimit(l Limit) (uint64, error) {
	var v uint64
	if err := recurswig.Recur_binding_default_limit(clampInt32(int(l)), &v); err != nil {
		return 0, err
	}
	return v, nil
}

// SetLimit sets a limit for the whole process; 0 restores its default. Objects that exist keep
// what they hold; every check after the call sees the new value. Safe from any goroutine.
func SetLimit(l Limit, value uint64) error {
	return recurswig.Recur_binding_set_limit(clampInt32(int(l)), value)
}

// HandleCounts is how many native handles of each kind were alive at one moment (LiveHandles).
type HandleCounts struct {
	Layers      uint64 // layers and cells (a Layer from Model.Layer included)
	States      uint64
	Models      uint64
	ModelStates uint64
	RunOptions  uint64 // the run options of calls with a cancellable context, in flight
}

// Total is all the counts together: 0 when nothing is alive.
func (h HandleCounts) Total() uint64 {
	return h.Layers + h.States + h.Models + h.ModelStates + h.RunOptions
}

// String is "layers 1, states 0, models 2, model states 0, run options 0".
func (h HandleCounts) String() string {
	return "layers " + strconv.FormatUint(h.Layers, 10) + ", states " + strconv.FormatUint(h.States, 10) +
		", models " + strconv.FormatUint(h.Models, 10) + ", model states " + strconv.FormatUint(h.ModelStates, 10) +
		", run options " + strconv.FormatUint(h.RunOptions, 10)
}

// LiveHandles is how many native handles of each kind are alive in this process now
// (recur_live_handles, recur_live_run_options): layers, states, models, model states and run
// options created and not yet freed. For
// leak checks: a program that has closed everything it made reads zeros. Objects that were never
// closed count until their finalizer has run (after a runtime.GC). Safe from any goroutine.
func LiveHandles() HandleCounts {
	var h HandleCounts
	// The C ABI's recur_live_handles never fails.
	_ = recurswig.Recur_binding_live_handles(&h.Layers, &h.States, &h.Models, &h.ModelStates)
	_ = recurswig.Recur_go_live_run_options(&h.RunOptions) // fails only for a NULL count
	return h
}

func closedError(what string) error {
	return &Error{Status: ErrState, Msg: what + " is closed"}
}

func argError(msg string) error { return &Error{Status: ErrInvalidArgument, Msg: msg} }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------------------------
// Layer options
// ---------------------------------------------------------------------------------------------

// LayerOptions are the constructor arguments of a Keras recurrent layer. The zero value of every
// field means the Keras default (Type, Units and InputSize are required).
type LayerOptions struct {
	Type         LayerType
	Dialect      Dialect // DialectAuto = Keras 3
	KerasVersion string  // e.g. "2.15.0"; "" = newest of the dialect
	Name         string  // used in messages

	Units     int
	InputSize int // size of the last input axis

	Activation          string // "" = "tanh"
	RecurrentActivation string // "" = "sigmoid"
	UseBias             OptBool
	ResetAfter          OptBool // GRU
	Implementation      int     // 1, 2, or 0 = default (2)
	UnitForgetBias      OptBool // LSTM
	Dropout             float32 // applies in training calls only
	RecurrentDropout    float32

	ReturnSequences   OptBool
	ReturnState       OptBool
	GoBackwards       OptBool
	Stateful          OptBool // needs BatchSize
	TimeMajor         OptBool // Keras 2 only
	Unroll            OptBool
	ZeroOutputForMask OptBool
	BatchSize         int // fixed batch of a stateful layer; 0 = none

	// A Keras name ("glorot_uniform", "l2", "max_norm") or Keras JSON
	// ({"class_name": "Orthogonal", "config": {"gain": 2.0}}); "" = default / none.
	KernelInitializer    string
	RecurrentInitializer string
	BiasInitializer      string
	KernelRegularizer    string
	RecurrentRegularizer string
	BiasRegularizer      string
	ActivityRegularizer  string
	KernelConstraint     string
	RecurrentConstraint  string
	BiasConstraint       string

	Seed      *int64  // seeds initializers and dropout masks; nil = random
	Trainable OptBool // Keras 3 omits frozen weights' penalties
}

// Int64 returns a pointer to v, for LayerOptions.Seed.
func Int64(v int64) *int64 { return &v }

func (o *LayerOptions) native() recurswig.LayerOptions {
	n := recurswig.NewLayerOptions()
	n.SetXtype(int(o.Type))
	n.SetDialect(int(o.Dialect))
	n.Set_keras_version(o.KerasVersion)
	n.Set_name(o.Name)
	n.SetUnits(clampInt32(o.Units))
	n.SetInput_size(clampInt32(o.InputSize))
	n.Set_activation(o.Activation)
	n.Set_recurrent_activation(o.RecurrentActivation)
	n.SetUse_bias(o.UseBias.c())
	n.SetReset_after(o.ResetAfter.c())
	if o.Implementation == 0 {
		n.SetImplementation(-1)
	} else {
		n.SetImplementation(clampInt32(o.Implementation))
	}
	n.SetUnit_forget_bias(o.UnitForgetBias.c())
	n.SetDropout(o.Dropout)
	n.SetRecurrent_dropout(o.RecurrentDropout)
	n.SetReturn_sequences(o.ReturnSequences.c())
	n.SetReturn_state(o.ReturnState.c())
	n.SetGo_backwards(o.GoBackwards.c())
	n.SetStateful(o.Stateful.c())
	n.SetTime_major(o.TimeMajor.c())
	n.SetUnroll(o.Unroll.c())
	n.SetZero_output_for_mask(o.ZeroOutputForMask.c())
	n.SetBatch_size(clampInt32(o.BatchSize))
	n.Set_kernel_initializer(o.KernelInitializer)
	n.Set_recurrent_initializer(o.RecurrentInitializer)
	n.Set_bias_initializer(o.BiasInitializer)
	n.Set_kernel_regularizer(o.KernelRegularizer)
	n.Set_recurrent_regularizer(o.RecurrentRegularizer)
	n.Set_bias_regularizer(o.BiasRegularizer)
	n.Set_activity_regularizer(o.ActivityRegularizer)
	n.Set_kernel_constraint(o.KernelConstraint)
	n.Set_recurrent_constraint(o.RecurrentConstraint)
	n.Set_bias_constraint(o.BiasConstraint)
	if o.Seed != nil {
		n.SetSeed(*o.Seed)
	} else {
		n.SetSeed(-1)
	}
	n.SetTrainable(o.Trainable.c())
	return n
}

// clampInt32 keeps out-of-range Go ints from wrapping into valid-looking int32 values: they
// become -2 (never a valid size or flag), which the library rejects with a message.
func clampInt32(v int) int {
	if v > math.MaxInt32 || v < math.MinInt32 {
		return -2
	}
	return v
}

// ---------------------------------------------------------------------------------------------
// Layer
// ---------------------------------------------------------------------------------------------

// LayerInfo describes a layer after its defaults were resolved.
type LayerInfo struct {
	Type            LayerType
	Dialect         Dialect
	Units           int
	InputSize       int
	NumStates       int // 1 (h) or 2 (h, c)
	NumWeights      int
	ReturnSequences bool
	ReturnState     bool
	GoBackwards     bool
	Stateful        bool
	TimeMajor       bool
	BatchSize       int // stateful batch, or 0
	Implementation  int
	ResetAfter      bool
}

// Layer is a Keras sequence layer or cell.
type Layer struct {
	native[recurswig.SwigcptrLayer]
	info LayerInfo
}

func newLayer(h recurswig.Layer) (*Layer, error) {
	l := &Layer{native: native[recurswig.SwigcptrLayer]{h: recurswig.SwigcptrLayer(h.Swigcptr())}}
	ni := recurswig.NewLayerInfo()
	err := l.native.h.Get_info(ni)
	if err == nil {
		l.info = LayerInfo{
			Type: LayerType(ni.GetXtype()), Dialect: Dialect(ni.GetDialect()), Units: ni.GetUnits(),
			InputSize: ni.GetInput_size(), NumStates: ni.GetNum_states(), NumWeights: ni.GetNum_weights(),
			ReturnSequences: ni.GetReturn_sequences() != 0, ReturnState: ni.GetReturn_state() != 0,
			GoBackwards: ni.GetGo_backwards() != 0, Stateful: ni.GetStateful() != 0,
			TimeMajor: ni.GetTime_major() != 0, BatchSize: ni.GetBatch_size(),
			Implementation: ni.GetImplementation(), ResetAfter: ni.GetReset_after() != 0,
		}
	}
	recurswig.DeleteLayerInfo(ni)
	if err != nil {
		recurswig.DeleteLayer(l.native.h)
		return nil, err
	}
	runtime.SetFinalizer(l, (*Layer).Close)
	return l, nil
}

// NewLayer creates a layer or cell and initialises its weights with its initializers.
func NewLayer(opts LayerOptions) (*Layer, error) {
	n := opts.native()
	var err error
	h := recurswig.LayerCreate(n, &err)
	recurswig.DeleteLayerOptions(n)
	if err != nil {
		return nil, err
	}
	return newLayer(h)
}

// LayerFromJSON creates a layer or cell from the JSON Keras writes for it ({"class_name": "GRU",
// "config": {...}}, Keras 2 or Keras 3 style). inputSize <= 0 takes the input size from the
// JSON; dialect is DialectAuto, Keras2 or Keras3 (as an int); kerasVersion "" = newest.
func LayerFromJSON(json string, inputSize, dialect int, kerasVersion string) (*Layer, error) {
	var err error
	h := recurswig.LayerCreate_from_json(json, clampInt32(inputSize), clampInt32(dialect), kerasVersion, &err)
	if err != nil {
		return nil, err
	}
	return newLayer(h)
}

// Close frees the layer. It is idempotent; States created for the layer stay valid.
func (l *Layer) Close() error {
	return l.guard().free(l, func(h recurswig.SwigcptrLayer) { recurswig.DeleteLayer(h) })
}

// guard is the layer's handle and lock; nil for a nil *Layer, which reads as closed.
func (l *Layer) guard() *native[recurswig.SwigcptrLayer] {
	if l == nil {
		return nil
	}
	return &l.native
}

// read locks the layer for a call that only reads it, write for one that changes it; reading and
// writing run call on the handle under those locks.
func (l *Layer) read() (recurswig.SwigcptrLayer, error)  { return l.guard().lockRead("layer") }
func (l *Layer) write() (recurswig.SwigcptrLayer, error) { return l.guard().lockWrite("layer") }
func (l *Layer) readDone()                               { l.native.unlockRead() }
func (l *Layer) writeDone()                              { l.native.unlockWrite() }
func (l *Layer) reading(call func(recurswig.SwigcptrLayer) error) error {
	return l.guard().reading("layer", call)
}
func (l *Layer) writing(call func(recurswig.SwigcptrLayer) error) error {
	return l.guard().writing("layer", call)
}

// Info describes the layer.
func (l *Layer) Info() (LayerInfo, error) {
	if _, err := l.read(); err != nil {
		return LayerInfo{}, err
	}
	info := l.info
	l.readDone()
	return info, nil
}

// OutputLength is the number of floats Forward writes for batch sequences of timesteps steps:
// B*T*units with return_sequences, else B*units.
func (l *Layer) OutputLength(batch, timesteps int) (int, error) {
	var n uint64
	err := l.reading(func(h recurswig.SwigcptrLayer) error {
		return h.Output_length(clampInt32(batch), clampInt32(timesteps), &n)
	})
	return int(n), err
}

// StateLength is the length of NumStates x (batch, units) concatenated: the size of initial
// and final state buffers, and of a State's values.
func (l *Layer) StateLength(batch int) (int, error) {
	info, err := l.Info()
	if err != nil {
		return 0, err
	}
	return info.NumStates * batch * info.Units, nil
}

// ForwardOptions are the optional arguments of Forward.
type ForwardOptions struct {
	// Mask is nil, or (B, T) ((T, B) for time_major) bytes, nonzero = valid step.
	Mask []byte
	// InitialState is nil, or the layer's NumStates tensors (B, units) concatenated ([h] for a
	// GRU, [h, c] for an LSTM).
	InitialState []float32
	// FinalState is nil, or a buffer of StateLength(B) floats that receives the final states
	// (what Keras returns with return_state). Stateful layers also keep them.
	FinalState []float32
	// Training applies dropout and recurrent_dropout.
	Training bool
}

// Forward runs the layer over a batch of sequences, as Keras's layer call. input is (B, T, F)
// ((T, B, F) for time_major) and output must hold OutputLength(B, T) floats. opts may be nil.
func (l *Layer) Forward(input []float32, batch, timesteps int, output []float32, opts *ForwardOptions) error {
	var o ForwardOptions
	if opts != nil {
		o = *opts
	}
	h, err := l.write()
	if err != nil {
		return err
	}
	numInitial := 0
	if len(o.InitialState) > 0 {
		numInitial = l.info.NumStates
	}
	err = h.Forward(input, len(input), clampInt32(batch), clampInt32(timesteps), o.Mask, len(o.Mask),
		o.InitialState, len(o.InitialState), numInitial, b2i(o.Training), output, len(output), o.FinalState,
		len(o.FinalState))
	l.writeDone()
	return err
}

// Call is Forward with an output slice it allocates.
func (l *Layer) Call(input []float32, batch, timesteps int, opts *ForwardOptions) ([]float32, error) {
	n, err := l.OutputLength(batch, timesteps)
	return filled(n, err, func(out []float32) error { return l.Forward(input, batch, timesteps, out, opts) })
}

// ForwardState advances state through timesteps steps of input (inference): input is (B, T, F)
// ((T, B, F) for time_major) with B = the state's batch, mask nil or (B, T), output
// OutputLength(B, T) floats. Feeding a sequence in pieces gives the same outputs as one call.
// Safe to call concurrently on one layer with different states; it does not allocate.
func (l *Layer) ForwardState(state *State, input []float32, timesteps int, mask []byte, output []float32) error {
	h, err := l.read()
	if err != nil {
		return err
	}
	sh, err := state.lock()
	if err != nil {
		l.readDone()
		return err
	}
	err = h.Forward_state(sh, input, len(input), clampInt32(timesteps), mask, len(mask), output, len(output))
	state.unlock()
	l.readDone()
	return err
}

// ForwardStates advances many independent streams by one timestep as one batch, on the layer's
// device: input holds the rows of every state in order (the sum of their batches x F), mask is
// nil or one byte per row, output (rows, units). It equals ForwardState on each state with
// timesteps = 1. A state may appear once; the states are locked for the call (each is used by
// one goroutine at a time, as with ForwardState).
func (l *Layer) ForwardStates(states []*State, input []float32, mask []byte, output []float32) error {
	return l.withStates("ForwardStates", states, func(h recurswig.SwigcptrLayer, handles []int64) error {
		return h.Forward_states(handles, len(handles), input, len(input), mask, len(mask), output, len(output))
	})
}

// withStates runs call with the layer read-held and the states, checked, locked in a safe order.
func (l *Layer) withStates(fn string, states []*State, call func(recurswig.SwigcptrLayer, []int64) error) error {
	order, err := stateOrder(fn, states)
	if err != nil {
		return err
	}
	h, err := l.read()
	if err != nil {
		return err
	}
	defer l.readDone()
	handles, err := lockStates(fn, states, order)
	if err != nil {
		return err
	}
	defer unlockStates(states, order)
	return call(h, handles)
}

// stateOrder checks the states of a call on many states (none nil, none twice) and returns the
// order to lock them in: creation order, so calls with overlapping states cannot deadlock; a
// state listed twice shows up as neighbours and is reported instead of being locked twice.
func stateOrder(fn string, states []*State) ([]int, error) {
	if len(states) == 0 {
		return nil, argError(fn + ": states is empty")
	}
	for i, s := range states {
		if s == nil {
			return nil, argError(fn + ": states[" + strconv.Itoa(i) + "] is nil")
		}
	}
	order := make([]int, len(states))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		if states[order[a]].id != states[order[b]].id {
			return states[order[a]].id < states[order[b]].id
		}
		return order[a] < order[b]
	})
	for k := 1; k < len(order); k++ {
		if states[order[k]] == states[order[k-1]] {
			return nil, argError(fn + ": states[" + strconv.Itoa(order[k-1]) + "] and states[" +
				strconv.Itoa(order[k]) + "] are the same state (each stream may appear once per call)")
		}
	}
	return order, nil
}

// lockStates locks states in order (from stateOrder) and returns their C handles in the
// caller's order; on a closed state it unlocks those it locked and fails with ErrState.
func lockStates(fn string, states []*State, order []int) ([]int64, error) {
	handles := make([]int64, len(states))
	for k, i := range order {
		sh, err := states[i].lock()
		if err != nil {
			unlockStates(states, order[:k])
			return nil, closedError(fn + ": states[" + strconv.Itoa(i) + "]")
		}
		handles[i] = int64(sh)
	}
	return handles, nil
}

func unlockStates(states []*State, order []int) {
	for _, i := range order {
		states[i].unlock()
	}
}

// ForwardStatesDevice is ForwardStates on CUDA device memory of the layer's GPU, for callers that
// hold device buffers through a CUDA interop library (the serving case of many streams per
// step): the states (each on the layer's GPU) advance by one timestep as one batch; dInput
// (rows x F) and dOutput (rows x units) are device addresses, rows the sum of the states'
// batches; stream is a cudaStream_t (0: recur's own stream for the calling thread); mask stays a
// host slice (nil, or one byte per row). No host copy is made; it returns once dOutput is
// written, with the same numbers as ForwardStates. A state may appear once; the states are
// locked for the call as in ForwardStates. It fails with ErrState when the layer is not on a GPU
// and with ErrInvalidArgument for a zero address.
func (l *Layer) ForwardStatesDevice(stream uintptr, states []*State, dInput uintptr, mask []byte,
	dOutput uintptr) error {
	return l.withStates("ForwardStatesDevice", states, func(h recurswig.SwigcptrLayer, handles []int64) error {
		return h.Forward_states_device(int64(stream), handles, len(handles), int64(dInput), mask, len(mask),
			int64(dOutput))
	})
}

// ForwardDevice is Forward on CUDA device memory of the layer's GPU, for callers that hold device
// buffers through a CUDA interop library: dInput, dOutput, dInitialState and dFinalState are
// device addresses (the last two may be 0; numInitialStates goes with dInitialState), stream a
// cudaStream_t (0: the default stream); mask stays a host slice (or nil). It returns once the
// outputs are written, and fails with ErrState when the layer is not on a GPU.
func (l *Layer) ForwardDevice(stream, dInput uintptr, batch, timesteps int, mask []byte, dInitialState uintptr,
	numInitialStates int, dOutput, dFinalState uintptr) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error {
		return h.Forward_device(int64(stream), int64(dInput), clampInt32(batch), clampInt32(timesteps), mask, len(mask),
			int64(dInitialState), clampInt32(numInitialStates), int64(dOutput), int64(dFinalState))
	})
}

// SetDevice moves the layer (its weights, and a stateful layer's states) to device: "cpu",
// "cuda", "cuda:N" or "auto" (a GPU when one can run, else the CPU; Device says why). A GPU that
// cannot run fails with ErrUnsupported and leaves the layer where it was.
func (l *Layer) SetDevice(device string) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Set_device(device) })
}

// Device says where the layer runs, by which route, and why.
func (l *Layer) Device() (DeviceInfo, error) {
	var d DeviceInfo
	err := l.reading(func(h recurswig.SwigcptrLayer) error {
		return h.Get_device(&d.Requested, &d.Backend, &d.Path, &d.Reason, &d.DeviceName)
	})
	return d, err
}

// SetNumThreads sets the threads one call on the layer may use on the CPU (Forward,
// ForwardState, ForwardStates, CellCall): 1, the default, runs on the calling goroutine's thread
// only; 0 means one per core. Results are bitwise the same for every count; small calls stay on
// one thread whatever the count, and calls on a GPU ignore it. A negative n or one above 1024
// fails with ErrInvalidArgument. It waits for calls in progress on the layer.
func (l *Layer) SetNumThreads(n int) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Set_num_threads(clampInt32(n)) })
}

// NumThreads is the thread count as set with SetNumThreads (0 stays 0).
func (l *Layer) NumThreads() (int, error) {
	var n int32
	err := l.reading(func(h recurswig.SwigcptrLayer) error { return h.Get_num_threads(&n) })
	return int(n), err
}

// SetPrecision sets the precision of the kernel and recurrent kernel in the layer's matrix
// products on the CPU: "float32" (the default, Keras's numbers), "bf16" or "int8" (faster; the
// outputs then differ from Keras's, see docs/precision.md). The float32 weights are kept: Weights
// is unchanged and "float32" again gives exactly the float32 numbers. An unknown name fails with
// ErrInvalidArgument (the message lists the valid ones), a layer on a GPU with ErrUnsupported.
// It waits for calls in progress on the layer.
func (l *Layer) SetPrecision(precision string) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Set_precision(precision) })
}

// Precision is "float32", "bf16" or "int8".
func (l *Layer) Precision() (string, error) {
	var p string
	err := l.reading(func(h recurswig.SwigcptrLayer) error {
		p = h.Get_precision()
		return nil
	})
	return p, err
}

// ResetStates zero-fills a stateful layer's states (Keras reset_states()).
func (l *Layer) ResetStates() error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Reset_states() })
}

// SetStates sets a stateful layer's states (Keras 2 reset_states(states)): NumStates tensors
// (batch_size, units) concatenated.
func (l *Layer) SetStates(states []float32) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error {
		return h.Set_states(states, len(states), l.info.NumStates)
	})
}

// GetStates copies a stateful layer's current states (NumStates x (batch_size, units)) into out.
func (l *Layer) GetStates(out []float32) error {
	return l.reading(func(h recurswig.SwigcptrLayer) error { return h.Get_states(out, len(out)) })
}

// States returns a stateful layer's current states in a new slice.
func (l *Layer) States() ([]float32, error) {
	n, err := l.StateLength(l.info.BatchSize)
	return filled(n, err, l.GetStates)
}

// InitialState is Keras's get_initial_state: zeros, NumStates x (batch, units).
func (l *Layer) InitialState(batch int) ([]float32, error) {
	if batch <= 0 {
		return nil, argError("batch must be > 0")
	}
	n, err := l.StateLength(batch)
	if err != nil {
		return nil, err
	}
	return make([]float32, n), nil
}

// CellCall runs one step of a cell (GRUCell, LSTMCell, SimpleRNNCell): input (B, F); states
// NumStates x (B, units) concatenated; output (B, units); newStates nil or NumStates x (B, units).
// training applies dropout with the cell's cached masks.
func (l *Layer) CellCall(input []float32, batch int, states []float32, output, newStates []float32, training bool) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error {
		return h.Cell_call(input, len(input), clampInt32(batch), states, len(states), l.info.NumStates, b2i(training),
			output, len(output), newStates, len(newStates))
	})
}

func (l *Layer) dropoutMask(recurrent bool, batch int, training bool) ([]float32, int, error) {
	h, err := l.write()
	if err != nil {
		return nil, 0, err
	}
	defer l.writeDone()
	get := h.Dropout_mask
	width := l.info.InputSize
	if recurrent {
		get = h.Recurrent_dropout_mask
		width = l.info.Units
	}
	var count int32
	if err := get(clampInt32(batch), b2i(training), nil, 0, &count); err != nil {
		return nil, 0, err
	}
	if count == 0 {
		return nil, 0, nil
	}
	out := make([]float32, int(count)*batch*width)
	if err := get(clampInt32(batch), b2i(training), out, len(out), &count); err != nil {
		return nil, 0, err
	}
	return out, int(count), nil
}

// DropoutMask returns the cell's cached input dropout masks for a batch (Keras
// get_dropout_mask_for_cell): count masks of (batch, input_size) concatenated, values 0 or
// 1/(1-rate). count is 0 (and the slice nil) when dropout is 0.
func (l *Layer) DropoutMask(batch int, training bool) (masks []float32, count int, err error) {
	return l.dropoutMask(false, batch, training)
}

// RecurrentDropoutMask is DropoutMask for recurrent dropout: masks of (batch, units).
func (l *Layer) RecurrentDropoutMask(batch int, training bool) (masks []float32, count int, err error) {
	return l.dropoutMask(true, batch, training)
}

// ResetDropoutMask drops the cell's cached input dropout masks.
func (l *Layer) ResetDropoutMask() error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Reset_dropout_mask() })
}

// ResetRecurrentDropoutMask drops the cell's cached recurrent dropout masks.
func (l *Layer) ResetRecurrentDropoutMask() error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Reset_recurrent_dropout_mask() })
}

// NumWeights is the number of weight tensors (2 without bias, else 3), in Keras get_weights
// order: kernel, recurrent_kernel[, bias].
func (l *Layer) NumWeights() (int, error) {
	var n int32
	err := l.reading(func(h recurswig.SwigcptrLayer) error { return h.Num_weights(&n) })
	return int(n), err
}

// WeightShape is the shape of weight index (1 or 2 dimensions).
func (l *Layer) WeightShape(index int) ([]int, error) {
	var d0, d1 int64
	var nd int32
	err := l.reading(func(h recurswig.SwigcptrLayer) error {
		return h.Weight_shape(clampInt32(index), &d0, &d1, &nd)
	})
	if err != nil {
		return nil, err
	}
	if nd == 1 {
		return []int{int(d0)}, nil
	}
	return []int{int(d0), int(d1)}, nil
}

// WeightName is the name of weight index: "kernel", "recurrent_kernel" or "bias".
func (l *Layer) WeightName(index int) (string, error) {
	var s string
	err := l.reading(func(h recurswig.SwigcptrLayer) error { return h.Weight_name(clampInt32(index), &s) })
	return s, err
}

// GetWeight copies weight index (row-major) into out, which must hold exactly its size.
func (l *Layer) GetWeight(index int, out []float32) error {
	return l.reading(func(h recurswig.SwigcptrLayer) error { return h.Get_weight(clampInt32(index), out, len(out)) })
}

// Weight returns a copy of weight index.
func (l *Layer) Weight(index int) ([]float32, error) {
	shape, err := l.WeightShape(index)
	return filled(product(shape), err, func(out []float32) error { return l.GetWeight(index, out) })
}

// SetWeight sets weight index (row-major; only the length is checked). CuDNN layers take their
// own CuDNN-layout weights.
func (l *Layer) SetWeight(index int, data []float32) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error {
		return h.Set_weight(clampInt32(index), data, len(data))
	})
}

// WeightsLength is the total number of floats of all weights.
func (l *Layer) WeightsLength() (int, error) {
	var n uint64
	err := l.reading(func(h recurswig.SwigcptrLayer) error { return h.Weights_length(&n) })
	return int(n), err
}

// GetWeights copies all weights, concatenated in get_weights order, into out.
func (l *Layer) GetWeights(out []float32) error {
	return l.reading(func(h recurswig.SwigcptrLayer) error { return h.Get_weights(out, len(out)) })
}

// Weights returns all weights concatenated in get_weights order.
func (l *Layer) Weights() ([]float32, error) {
	n, err := l.WeightsLength()
	return filled(n, err, l.GetWeights)
}

// SetWeights sets all weights from one slice in get_weights order (validated before anything
// changes).
func (l *Layer) SetWeights(data []float32) error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Set_weights(data, len(data)) })
}

// Loss is one entry of Keras's layer.losses.
type Loss struct {
	Name  string // "activity:output", "activity:state_h", "activity:state_c", "kernel", "recurrent_kernel", "bias"
	Value float32
}

// Losses is Keras's layer.losses: the activity-regularizer penalties of the last call, then the
// kernel, recurrent_kernel and bias penalties.
func (l *Layer) Losses() ([]Loss, error) {
	h, err := l.read()
	if err != nil {
		return nil, err
	}
	defer l.readDone()
	var count int32
	if err := h.Get_losses(nil, 0, &count); err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, nil
	}
	values := make([]float32, count)
	if err := h.Get_losses(values, len(values), &count); err != nil {
		return nil, err
	}
	out := make([]Loss, count)
	for i := range out {
		if err := h.Loss_name(i, &out[i].Name); err != nil {
			return nil, err
		}
		out[i].Value = values[i]
	}
	return out, nil
}

// ApplyConstraints applies the kernel/recurrent/bias constraints to the weights, as an
// optimizer does after an update.
func (l *Layer) ApplyConstraints() error {
	return l.writing(func(h recurswig.SwigcptrLayer) error { return h.Apply_constraints() })
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

// State is the h (and c) of a batch of streams, advanced by Layer.ForwardState. Many states can
// be stepped concurrently against one layer.
type State struct {
	native    native[recurswig.SwigcptrState]
	id        uint64 // creation order: the order ForwardStates locks states in
	numStates int
	batch     int
	units     int
}

var lastStateID uint64

// NewState creates a zero state of batch streams shaped for layer (the layer is only read; the
// state does not reference it afterwards).
func NewState(layer *Layer, batch int) (*State, error) {
	lh, err := layer.read()
	if err != nil {
		return nil, err
	}
	h := recurswig.StateCreate(lh, clampInt32(batch), &err)
	layer.readDone()
	if err != nil {
		return nil, err
	}
	s := &State{native: native[recurswig.SwigcptrState]{h: recurswig.SwigcptrState(h.Swigcptr())}, id: atomic.AddUint64(&lastStateID, 1)}
	var ns, b, u int32
	if err := s.native.h.Shape(&ns, &b, &u); err != nil {
		recurswig.DeleteState(s.native.h)
		return nil, err
	}
	s.numStates, s.batch, s.units = int(ns), int(b), int(u)
	runtime.SetFinalizer(s, (*State).Close)
	return s, nil
}

// Close frees the state. It is idempotent.
func (s *State) Close() error {
	return s.guard().free(s, func(h recurswig.SwigcptrState) { recurswig.DeleteState(h) })
}

// guard is the state's handle and lock; nil for a nil *State, which reads as closed.
func (s *State) guard() *native[recurswig.SwigcptrState] {
	if s == nil {
		return nil
	}
	return &s.native
}

// lock locks the state for a call; locked runs call on its handle with it locked.
func (s *State) lock() (recurswig.SwigcptrState, error) { return s.guard().lockWrite("state") }
func (s *State) unlock()                                { s.native.unlockWrite() }
func (s *State) locked(call func(recurswig.SwigcptrState) error) error {
	return s.guard().writing("state", call)
}

// Shape is the number of state tensors, the batch and the units.
func (s *State) Shape() (numStates, batch, units int, err error) {
	if _, err := s.lock(); err != nil {
		return 0, 0, 0, err
	}
	numStates, batch, units = s.numStates, s.batch, s.units
	s.unlock()
	return numStates, batch, units, nil
}

// Len is numStates*batch*units, the length of Get's and Set's slices (0 once closed).
func (s *State) Len() int {
	ns, b, u, _ := s.Shape()
	return ns * b * u
}

// Get copies the states out: numStates x (batch, units), concatenated.
func (s *State) Get(out []float32) error {
	return s.locked(func(h recurswig.SwigcptrState) error { return h.Get(out, len(out)) })
}

// Values returns the states in a new slice.
func (s *State) Values() ([]float32, error) {
	return filled(s.Len(), nil, s.Get)
}

// Set sets the states (numStates x (batch, units) concatenated) and starts a new stream.
func (s *State) Set(values []float32) error {
	return s.locked(func(h recurswig.SwigcptrState) error { return h.Set(values, len(values), s.numStates) })
}

// Reset zero-fills the states and starts a new stream.
func (s *State) Reset() error {
	return s.locked(func(h recurswig.SwigcptrState) error { return h.Reset() })
}

// SetDevice moves the states to device ("cpu", "cuda", "cuda:N" or "auto") now; they also move
// when a layer on another device steps them. A GPU that cannot run fails with ErrUnsupported and
// leaves the state where it was.
func (s *State) SetDevice(device string) error {
	return s.locked(func(h recurswig.SwigcptrState) error { return h.Set_device(device) })
}

// Device says where the states live: Path "cpu", or "device-resident" on the GPU of the layer
// that last stepped them.
func (s *State) Device() (DeviceInfo, error) {
	var d DeviceInfo
	err := s.locked(func(h recurswig.SwigcptrState) error {
		return h.Get_device(&d.Requested, &d.Backend, &d.Path, &d.Reason, &d.DeviceName)
	})
	return d, err
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

// ModelInfo describes a Keras model file.
type ModelInfo struct {
	Dialect          Dialect
	KerasVersion     string // as the file records it
	NumLayers        int    // entries of the model config, InputLayer included
	Runnable         bool   // Run can run the whole chain
	Unsupported      string // why not ("" if runnable)
	InputSize        int    // features per timestep (1: token ids for an Embedding)
	TakesTokenIDs    bool   // the first layer is an Embedding
	OutputSize       int    // last axis of each output
	ReturnsSequences bool   // outputs are (B, T, OutputSize), else (B, OutputSize)
	NumOutputs       int    // 2 for a final Bidirectional with merge_mode=None, else 1
}

// ModelLayer describes one layer of a model file.
type ModelLayer struct {
	Name       string
	ClassName  string
	ConfigJSON string // the layer's entry in the model config
	InputSize  int    // last input axis, 0 if unknown
	OutputSize int    // last output axis, 0 if unknown
	Recurrent  bool   // Model.Layer can return it
}

// Model is a Keras model file (.keras zip or legacy .h5).
type Model struct {
	native   native[recurswig.SwigcptrModel]
	info     ModelInfo
	stateful bool // Run changes the model (stateful layers): serialize it
}

// OpenModel opens a Keras model file as it is (.keras from Keras 3 / tf.keras >= 2.13, or a
// legacy .h5). Layers recur cannot run do not fail the open; Run reports them.
func OpenModel(path string) (*Model, error) {
	var err error
	h := recurswig.ModelOpen(path, &err)
	if err != nil {
		return nil, err
	}
	return newModel(h)
}

// Close frees the model. It is idempotent; layers taken from it stay valid.
func (m *Model) Close() error {
	return m.guard().free(m, func(h recurswig.SwigcptrModel) { recurswig.DeleteModel(h) })
}

// guard is the model's handle and lock; nil for a nil *Model, which reads as closed.
func (m *Model) guard() *native[recurswig.SwigcptrModel] {
	if m == nil {
		return nil
	}
	return &m.native
}

// read locks the model for a call that only reads it; reading and writing run call on the handle
// under the read or the write lock.
func (m *Model) read() (recurswig.SwigcptrModel, error) { return m.guard().lockRead("model") }
func (m *Model) readDone()                              { m.native.unlockRead() }
func (m *Model) reading(call func(recurswig.SwigcptrModel) error) error {
	return m.guard().reading("model", call)
}
func (m *Model) writing(call func(recurswig.SwigcptrModel) error) error {
	return m.guard().writing("model", call)
}

// Info describes the model.
func (m *Model) Info() (ModelInfo, error) {
	if _, err := m.read(); err != nil {
		return ModelInfo{}, err
	}
	info := m.info
	m.readDone()
	return info, nil
}

// LayerAt describes layer index (0 <= index < Info().NumLayers).
func (m *Model) LayerAt(index int) (ModelLayer, error) {
	var ml ModelLayer
	var in, out, rec int32
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Layer(clampInt32(index), &ml.Name, &ml.ClassName, &ml.ConfigJSON, &in, &out, &rec)
	})
	if err != nil {
		return ModelLayer{}, err
	}
	ml.InputSize, ml.OutputSize, ml.Recurrent = int(in), int(out), rec != 0
	return ml, nil
}

// Layer returns a new, independent layer with the config and weights of the recurrent layer
// name (for a Bidirectional, "<name>/forward" or "<name>/backward"). Close it when done.
func (m *Model) Layer(name string) (*Layer, error) {
	h, err := m.read()
	if err != nil {
		return nil, err
	}
	lh := h.Get_layer(name, &err)
	m.readDone()
	if err != nil {
		return nil, err
	}
	return newLayer(lh)
}

// OutputLength is the number of floats Run writes for batch sequences of timesteps steps.
func (m *Model) OutputLength(batch, timesteps int) (int, error) {
	var n uint64
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Output_length(clampInt32(batch), clampInt32(timesteps), &n)
	})
	return int(n), err
}

// Run runs the model's chain of layers: input (B, T, InputSize) floats (token ids as floats
// when the model starts with an Embedding), mask nil or (B, T), output OutputLength(B, T)
// floats. Concurrent Runs on one model proceed in parallel, unless the model holds stateful
// layers (whose states a run changes): then the binding runs them one at a time.
func (m *Model) Run(input []float32, batch, timesteps int, mask []byte, output []float32) error {
	return m.running(func(h recurswig.SwigcptrModel) error {
		return h.Run(input, len(input), clampInt32(batch), clampInt32(timesteps), mask, len(mask), output, len(output))
	})
}

// running runs call for a run of the model: under the write lock when the model is stateful (a run
// changes its states), else under the read lock, so that runs proceed in parallel.
func (m *Model) running(call func(recurswig.SwigcptrModel) error) error {
	if m != nil && m.stateful {
		return m.writing(call)
	}
	return m.reading(call)
}

// Predict is Run with an output slice it allocates.
func (m *Model) Predict(input []float32, batch, timesteps int, mask []byte) ([]float32, error) {
	n, err := m.OutputLength(batch, timesteps)
	return filled(n, err, func(out []float32) error { return m.Run(input, batch, timesteps, mask, out) })
}

// SetDevice moves every layer the model runs to device ("cpu", "cuda", "cuda:N" or "auto"); the
// whole chain then runs there. It waits for Runs in progress. A GPU that cannot run fails with
// ErrUnsupported and leaves the model where it was.
func (m *Model) SetDevice(device string) error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Set_device(device) })
}

// SetNumThreads sets Layer.SetNumThreads on every layer the model runs, and on the layers Layer
// returns afterwards (1 by default, 0 = one per core). It waits for Runs in progress. A negative
// n or one above 1024 fails with ErrInvalidArgument.
func (m *Model) SetNumThreads(n int) error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Set_num_threads(clampInt32(n)) })
}

// NumThreads is the thread count as set with SetNumThreads (0 stays 0).
func (m *Model) NumThreads() (int, error) {
	var n int32
	err := m.reading(func(h recurswig.SwigcptrModel) error { return h.Get_num_threads(&n) })
	return int(n), err
}

// SetPrecision sets Layer.SetPrecision on every recurrent layer the model runs, and on the layers
// Layer returns afterwards; the other layers stay float32. ErrUnsupported on a GPU or, for "bf16"
// and "int8", for a model without recurrent layers. It waits for Runs in progress.
func (m *Model) SetPrecision(precision string) error {
	return m.writing(func(h recurswig.SwigcptrModel) error { return h.Set_precision(precision) })
}

// Precision is the precision as last set with SetPrecision ("float32" by default).
func (m *Model) Precision() (string, error) {
	var p string
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		p = h.Get_precision()
		return nil
	})
	return p, err
}

// Device says where the model runs, and why.
func (m *Model) Device() (DeviceInfo, error) { return m.LayerDevice(-1) }

// LayerDevice says where entry index of the model config runs (-1: the model; layers without
// weights report the model's backend).
func (m *Model) LayerDevice(index int) (DeviceInfo, error) {
	var d DeviceInfo
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return h.Get_device(clampInt32(index), &d.Requested, &d.Backend, &d.Path, &d.Reason, &d.DeviceName)
	})
	return d, err
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

// DeviceInfo says where a layer, state or model runs, by which route, and why.
type DeviceInfo struct {
	Requested  string // "cpu", "cuda:N" or "auto", as last set ("cpu" by default)
	Backend    string // where calls run now: "cpu" or "cuda:N"
	Path       string // "cpu", "cudnn" or "kernel" (a State: "cpu" or "device-resident")
	Reason     string // why this backend and path, e.g. why "auto" stayed on the CPU
	DeviceName string // the GPU's name and cuDNN version, "" on the CPU
}

// DeviceCount is the number of usable CUDA devices: 0 when the GPU plugin, the driver or a GPU
// is missing (CheckDevice says which).
func DeviceCount() int {
	var n int32
	if recurswig.Recur_binding_device_count(&n) != nil {
		return 0
	}
	return int(n)
}

// CheckDevice returns nil when device ("cpu", "cuda", "cuda:N" or "auto") can run now:
// ErrInvalidArgument for anything else, ErrUnsupported for a GPU that cannot run, with a
// message that says what is missing (the plugin, the driver, the GPU or cuDNN).
func CheckDevice(device string) error { return recurswig.Recur_binding_device_check(device) }
