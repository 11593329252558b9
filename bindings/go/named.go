// SPDX-License-Identifier: Apache-2.0

package recur

// Named runs (recur 0.6): inputs addressed by name with their own dims and element type (token
// ids as int32 or int64, with no float round trip), any subset of the outputs by name, each in
// its own slice, for Model runs and ModelState steps alike.

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"recur.dev/recur/internal/recurswig"
)

// Tensor is one model input of a named run or step: Name is the model input's name
// (TensorInfo.Name), Dims its dims with the batch first (a sequence input's Dims[1] is its
// timesteps), and exactly one of Float32, Int32, Int64 and Strings holds its row-major values.
// Int32 and Int64 values that feed an Embedding reach it as integers, exact at any size; elsewhere
// they are cast to float32 as Keras casts them. Strings (since 0.7) are the UTF-8 texts of a
// string input (TensorInfo.Strings), e.g. (batch, 1) for a TextVectorization; a text holding a NUL
// byte is refused. Mask is nil or the (batch, timesteps) mask of a sequence input (nonzero = valid
// step). Nothing is kept after the call (texts are copied for it).
type Tensor struct {
	Name    string
	Dims    []int64
	Float32 []float32
	Int32   []int32
	Int64   []int64
	Strings []string
	Mask    []byte
}

// NewStringTensor is a Tensor of texts for a string input.
func NewStringTensor(name string, texts []string, dims ...int64) Tensor {
	return Tensor{Name: name, Dims: dims, Strings: texts}
}

// NewFloat32Tensor is a Tensor of float32 values.
func NewFloat32Tensor(name string, values []float32, dims ...int64) Tensor {
	return Tensor{Name: name, Dims: dims, Float32: values}
}

// NewInt32Tensor is a Tensor of int32 values (token ids).
func NewInt32Tensor(name string, values []int32, dims ...int64) Tensor {
	return Tensor{Name: name, Dims: dims, Int32: values}
}

// NewInt64Tensor is a Tensor of int64 values (token ids).
func NewInt64Tensor(name string, values []int64, dims ...int64) Tensor {
	return Tensor{Name: name, Dims: dims, Int64: values}
}

// Output is one model output of a named run or step: Name selects it (Model.OutputNames; a
// Keras 3 layer's outputs that share a name are "name:0", "name:1", ...), Dims and Values are
// its dims and row-major values.
type Output struct {
	Name   string
	Dims   []int64
	Values []float32
}

// OutputNames are the names named runs accept for the model's outputs, in Keras's
// model.outputs order: TensorInfo.Name, or "name:k" for the k-th of the outputs that share one
// name (a Keras 3 layer with several outputs).
func (m *Model) OutputNames() ([]string, error) {
	outs, err := m.Outputs()
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, o := range outs {
		count[o.Name]++
	}
	seen := map[string]int{}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.Name
		if count[o.Name] > 1 {
			names[i] = o.Name + ":" + strconv.Itoa(seen[o.Name])
			seen[o.Name]++
		}
	}
	return names, nil
}

// RunNamed runs the model (Keras's model.predict on one batch) on inputs given by name, every
// model input once in any order, and returns the outputs named, in that order (every output, in
// model.outputs order, when outputs is empty). ctx cancels the run: a done ctx returns before
// running, and one done during the run stops it between layers and, on the CPU, between
// timesteps (a recurrent layer on a GPU finishes its sequence first); either way the error is an
// *Error of Status ErrCancelled whose Cause is ctx.Err() (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded holds). context.Background() costs nothing extra. A cancelled or
// failed run changes nothing (a stateful model keeps its states). Concurrent runs proceed in
// parallel unless the model is stateful: then the binding runs them one at a time.
func (m *Model) RunNamed(ctx context.Context, inputs []Tensor, outputs []string) ([]Output, error) {
	if err := contextDone(ctx); err != nil {
		return nil, err
	}
	outs, err := m.OutputShapesNamed(inputs, outputs)
	if err != nil {
		return nil, err
	}
	if err := m.RunNamedInto(ctx, inputs, outs); err != nil {
		return nil, err
	}
	return outs, nil
}

// RunNamedInto is RunNamed into the caller's slices, allocating nothing when ctx is
// context.Background() (or never done) and each Dims has room for the output's rank: each
// outputs[i].Name selects an output, its Values (len = the floats it can take) receives the
// values, and on success Values is resliced to the floats written and Dims set to the output's
// dims. On error nothing is written. OutputShapesNamed makes slices of the right sizes.
func (m *Model) RunNamedInto(ctx context.Context, inputs []Tensor, outputs []Output) error {
	return withContext(ctx, func(options int64) error {
		return m.running(func(h recurswig.SwigcptrModel) error {
			return namedCall(recurswig.GO_RUN, int64(h), inputs, outputs, options, false)
		})
	})
}

// OutputShapesNamed sizes the outputs named (every output when outputs is empty) for these
// inputs without running anything: each Output has its Name, Dims and a zeroed Values of its
// length, ready for RunNamedInto. The inputs' values are not read (their lengths must still fit
// their dims).
func (m *Model) OutputShapesNamed(inputs []Tensor, outputs []string) ([]Output, error) {
	if len(outputs) == 0 {
		var err error
		if outputs, err = m.OutputNames(); err != nil {
			return nil, err
		}
	}
	outs := requested(outputs)
	err := m.reading(func(h recurswig.SwigcptrModel) error {
		return namedCall(recurswig.GO_RUN_SHAPES, int64(h), inputs, outs, 0, true)
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// StepNamed feeds the next steps of the stream: every sequence input holds the same number of
// steps (its Dims[1]) for the state's batch, inputs without a timesteps axis are given whole. It
// returns the outputs named (all when outputs is empty): sequence outputs hold the steps fed, the
// others their value after them. ctx cancels the step as it does Model.RunNamed; a cancelled or
// failed step leaves the stream exactly as it was.
func (s *ModelState) StepNamed(ctx context.Context, inputs []Tensor, outputs []string) ([]Output, error) {
	if err := contextDone(ctx); err != nil {
		return nil, err
	}
	outs, err := s.OutputShapesNamed(inputs, outputs)
	if err != nil {
		return nil, err
	}
	if err := s.StepNamedInto(ctx, inputs, outs); err != nil {
		return nil, err
	}
	return outs, nil
}

// StepNamedInto is StepNamed into the caller's slices, as Model.RunNamedInto (no allocation with
// context.Background()).
func (s *ModelState) StepNamedInto(ctx context.Context, inputs []Tensor, outputs []Output) error {
	return withContext(ctx, func(options int64) error {
		return s.locked(func(h recurswig.SwigcptrModelState) error {
			return namedCall(recurswig.GO_STEP, int64(h), inputs, outputs, options, false)
		})
	})
}

// OutputShapesNamed sizes the outputs of a step on these inputs, as Model.OutputShapesNamed.
func (s *ModelState) OutputShapesNamed(inputs []Tensor, outputs []string) ([]Output, error) {
	if len(outputs) == 0 {
		if _, err := s.lock(); err != nil {
			return nil, err
		}
		outputs = s.outputNames
		s.unlock()
	}
	outs := requested(outputs)
	err := s.locked(func(h recurswig.SwigcptrModelState) error {
		return namedCall(recurswig.GO_STEP_SHAPES, int64(h), inputs, outs, 0, true)
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

func requested(names []string) []Output {
	outs := make([]Output, len(names))
	for i, n := range names {
		outs[i].Name = n
	}
	return outs
}

// Element types (the C ABI's recur_dtype).
const (
	dtypeFloat32 = 1
	dtypeInt32   = 2
	dtypeInt64   = 3
	dtypeString  = 4
)

// values is the tensor's data as a pointer, element count and dtype, or an error naming the
// input when not exactly one of Float32, Int32 and Int64 is set.
func (t *Tensor) values(i int) (unsafe.Pointer, int, int64, error) {
	set := 0
	var p unsafe.Pointer
	var n int
	var dtype int64
	if t.Float32 != nil {
		set, n, dtype = set+1, len(t.Float32), dtypeFloat32
		if n > 0 {
			p = unsafe.Pointer(&t.Float32[0])
		}
	}
	if t.Int32 != nil {
		set, n, dtype = set+1, len(t.Int32), dtypeInt32
		if n > 0 {
			p = unsafe.Pointer(&t.Int32[0])
		}
	}
	if t.Int64 != nil {
		set, n, dtype = set+1, len(t.Int64), dtypeInt64
		if n > 0 {
			p = unsafe.Pointer(&t.Int64[0])
		}
	}
	if t.Strings != nil {
		set, n, dtype = set+1, len(t.Strings), dtypeString
	}
	if set != 1 {
		return nil, 0, 0, argError("inputs[" + strconv.Itoa(i) + "] ('" + t.Name + "'): set exactly one of Float32, Int32, " +
			"Int64 and Strings, got " + strconv.Itoa(set))
	}
	return p, n, dtype, nil
}

// textBlob is the texts one after another, each NUL-terminated, as the C glue splits them
// (recur_go.i), or an error naming the text that holds a NUL byte.
func (t *Tensor) textBlob(i int) ([]byte, error) {
	size := 0
	for _, s := range t.Strings {
		size += len(s) + 1
	}
	b := make([]byte, 0, size)
	for k, s := range t.Strings {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, argError("inputs[" + strconv.Itoa(i) + "] ('" + t.Name + "').Strings[" + strconv.Itoa(k) +
				"]: holds a NUL byte, which a text input cannot carry")
		}
		b = append(b, s...)
		b = append(b, 0)
	}
	return b, nil
}

// namedScratch is what one named call passes to the C glue (recur_go.i): the records, the
// names and the slices, reused through namedScratches so that a call allocates nothing.
type namedScratch struct {
	records []int64
	names   []byte
	slots   [recurSlots]unsafe.Pointer
	used    int
	staged  []uintptr // C copies of the buffers past the slots
}

const recurSlots = 16 // RECUR_GO_SLOTS

var namedScratches = sync.Pool{New: func() any { return new(namedScratch) }}

// directSlots is how many slots a call uses: recurSlots, lowered by the tests to send every
// buffer through C memory.
var directSlots = recurSlots

// ref is the record's reference to n bytes at p: -1 for none, a slot while slots are free, else
// the address of C memory that holds a copy of an input or receives an output.
func (sc *namedScratch) ref(p unsafe.Pointer, n int, input bool) (int64, error) {
	if p == nil {
		return -1, nil
	}
	if sc.used < directSlots {
		sc.slots[sc.used] = p
		sc.used++
		return int64(sc.used - 1), nil
	}
	c := recurswig.Swig_malloc(n)
	if c == 0 {
		return 0, &Error{Status: ErrOutOfMemory, Msg: "out of memory staging a buffer of " + strconv.Itoa(n) + " bytes"}
	}
	sc.staged = append(sc.staged, c)
	if input {
		copy(cBytes(c, n), unsafe.Slice((*byte)(p), n))
	}
	return int64(c), nil
}

// cPointer is the C memory at address c (read through a pointer to the integer, the form vet
// accepts for an address that is not Go's).
func cPointer(c *uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(c)) }

// cBytes is n bytes of C memory at c.
func cBytes(c uintptr, n int) []byte { return unsafe.Slice((*byte)(cPointer(&c)), n) }

func (sc *namedScratch) release() {
	for _, c := range sc.staged {
		recurswig.Swig_free(c)
	}
	sc.staged = sc.staged[:0]
	sc.slots = [recurSlots]unsafe.Pointer{}
	sc.used = 0
	namedScratches.Put(sc)
}

func (sc *namedScratch) name(what string, i int, name string) (int64, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return 0, argError(what + "[" + strconv.Itoa(i) + "].Name: " + strconv.Quote(name) + " holds a NUL byte")
	}
	off := int64(len(sc.names))
	sc.names = append(sc.names, name...)
	sc.names = append(sc.names, 0)
	return off, nil
}

// namedCall describes inputs and outputs to the C glue and runs op on handle. shapes: size the
// outputs (Values made of their length) instead of writing into their Values.
func namedCall(op int, handle int64, inputs []Tensor, outputs []Output, options int64, shapes bool) error {
	const inWords, outWords = 15, 13 // RECUR_GO_IN_WORDS, RECUR_GO_OUT_WORDS
	if len(inputs) > 1<<20 || len(outputs) > 1<<20 {
		return argError("inputs, outputs: at most 1048576 of each, got " + strconv.Itoa(len(inputs)) + " and " +
			strconv.Itoa(len(outputs)))
	}
	sc := namedScratches.Get().(*namedScratch)
	defer sc.release()
	n := len(inputs)*inWords + len(outputs)*outWords
	if cap(sc.records) < n {
		sc.records = make([]int64, n)
	}
	rec := sc.records[:n]
	sc.names = sc.names[:0]
	var err error
	for i := range inputs {
		t := &inputs[i]
		r := rec[i*inWords : (i+1)*inWords]
		if r[0], err = sc.name("inputs", i, t.Name); err != nil {
			return err
		}
		p, count, dtype, err := t.values(i)
		if err != nil {
			return err
		}
		if len(t.Dims) > maxRank {
			return &Error{Status: ErrShape, Msg: "inputs[" + strconv.Itoa(i) + "] ('" + t.Name + "').Dims: rank " +
				strconv.Itoa(len(t.Dims)) + " is above " + strconv.Itoa(maxRank)}
		}
		size := 4
		if dtype == dtypeInt64 {
			size = 8
		}
		if dtype == dtypeString {
			// The texts go as one block of NUL-terminated strings; length stays their count.
			blob, err := t.textBlob(i)
			if err != nil {
				return err
			}
			p, size, count = nil, 1, len(blob)
			if count > 0 {
				p = unsafe.Pointer(&blob[0]) // the slot (or the staged copy) holds it for the call
			}
		}
		r[1], r[2], r[3] = dtype, int64(count), int64(len(t.Dims))
		if dtype == dtypeString {
			r[2] = int64(len(t.Strings))
		}
		for k := 0; k < maxRank; k++ {
			r[4+k] = 0
			if k < len(t.Dims) {
				r[4+k] = t.Dims[k]
			}
		}
		if r[12], err = sc.ref(p, count*size, true); err != nil {
			return err
		}
		var mp unsafe.Pointer
		if len(t.Mask) > 0 {
			mp = unsafe.Pointer(&t.Mask[0])
		}
		if r[13], err = sc.ref(mp, len(t.Mask), true); err != nil {
			return err
		}
		r[14] = int64(len(t.Mask))
	}
	for i := range outputs {
		o := &outputs[i]
		r := rec[len(inputs)*inWords+i*outWords : len(inputs)*inWords+(i+1)*outWords]
		if r[0], err = sc.name("outputs", i, o.Name); err != nil {
			return err
		}
		r[1], r[2] = -1, 0
		if !shapes {
			var p unsafe.Pointer
			if len(o.Values) > 0 {
				p = unsafe.Pointer(&o.Values[0])
			}
			if r[1], err = sc.ref(p, 4*len(o.Values), false); err != nil {
				return err
			}
			r[2] = int64(len(o.Values))
		}
	}
	s := &sc.slots
	err = recurswig.Recur_go_named(op, handle, rec, len(inputs), len(outputs), sc.names, options,
		s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15])
	if err != nil {
		return err
	}
	for i := range outputs {
		o := &outputs[i]
		r := rec[len(inputs)*inWords+i*outWords : len(inputs)*inWords+(i+1)*outWords]
		rank, length := int(r[3]), int(r[12])
		o.Dims = append(o.Dims[:0], r[4:4+rank]...)
		switch {
		case shapes:
			o.Values = make([]float32, length)
		case r[1] >= recurSlots: // staged: copy back from C memory
			o.Values = o.Values[:length]
			c := uintptr(r[1])
			copy(o.Values, unsafe.Slice((*float32)(cPointer(&c)), length))
		default:
			o.Values = o.Values[:length]
		}
	}
	return nil
}
