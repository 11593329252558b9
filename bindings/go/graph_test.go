// SPDX-License-Identifier: Apache-2.0

package recur

// Models as graphs (recur 0.4) through the Go binding: several inputs and outputs, models opened
// from memory, stateful models, Keras backends and ModelState streams, against the Keras graph
// fixtures (tests/keras/graphs: model files and Keras's predictions) and the CLI's model files.

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

type graphTensor struct {
	Shape []int     `json:"shape"`
	Data  []float32 `json:"data"`
}

type graphCall struct {
	ResetStatesBefore bool          `json:"reset_states_before"`
	Inputs            []graphTensor `json:"inputs"`
	Outputs           []graphTensor `json:"outputs"`
}

type graphCase struct {
	Name        string      `json:"name"`
	InputNames  []string    `json:"input_names"`
	OutputNames []string    `json:"output_names"`
	Stateful    bool        `json:"stateful"`
	Calls       []graphCall `json:"calls"`
}

var (
	graphDocsMu sync.Mutex
	graphDocs   = map[string]map[string]*graphCase{}
)

// Cases run through every file and dialect (the C++ parity suite runs them all).
var graphParityCases = []string{"multi_io", "return_state_outputs", "seq2seq_initial_state", "merges_mixed_masks",
	"masking_sequential", "embedding_masked_full_row", "bidirectional_return_state", "stateful_sequential_gru",
	"stateful_functional_lstm_gru", "simple_rnn"}

const graphTol = 1e-5

func graphFile(t testing.TB, dialect, name, ext string) string {
	return filepath.Join(sourceDir(t), "tests", "keras", "graphs", dialect, name+"."+ext)
}

func cliModel(t testing.TB, dialect, file string) string {
	return filepath.Join(sourceDir(t), "tests", "cli", "models", dialect, file)
}

func loadGraphCase(t testing.TB, dialect, name string) *graphCase {
	t.Helper()
	graphDocsMu.Lock()
	defer graphDocsMu.Unlock()
	cases, ok := graphDocs[dialect]
	if !ok {
		raw, err := os.ReadFile(filepath.Join(sourceDir(t), "tests", "keras", "graphs", dialect+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cases []*graphCase `json:"cases"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		cases = map[string]*graphCase{}
		for _, c := range doc.Cases {
			cases[c.Name] = c
		}
		graphDocs[dialect] = cases
	}
	c := cases[name]
	if c == nil {
		t.Fatalf("%s.json has no case %s", dialect, name)
	}
	return c
}

func mustOpen(t testing.TB, path string) *Model {
	t.Helper()
	m, err := OpenModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (c graphCall) inputs() [][]float32 {
	out := make([][]float32, len(c.Inputs))
	for i, x := range c.Inputs {
		out[i] = x.Data
	}
	return out
}

func (c graphCall) batch() int { return c.Inputs[0].Shape[0] }

// timesteps: axis 1 of each input (recur ignores it for inputs of a fixed length).
func (c graphCall) timesteps() []int {
	out := make([]int, len(c.Inputs))
	for i, x := range c.Inputs {
		if len(x.Shape) > 1 {
			out[i] = x.Shape[1]
		}
	}
	return out
}

func near(t *testing.T, what string, want, got []float32, tol float64) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(float64(want[i]-got[i])) <= tol*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s[%d]: want %v, got %v", what, i, want[i], got[i])
		}
	}
}

func TestGraphKerasParity(t *testing.T) {
	for _, dialect := range []string{"keras2", "keras3", "keras3_jax"} {
		for _, name := range graphParityCases {
			for _, ext := range []string{"keras", "h5"} {
				dialect, name, ext := dialect, name, ext
				t.Run(dialect+"/"+name+"."+ext, func(t *testing.T) {
					c := loadGraphCase(t, dialect, name)
					m := mustOpen(t, graphFile(t, dialect, name, ext))
					defer m.Close()
					if dialect == "keras3_jax" {
						if err := m.SetKerasBackend("jax"); err != nil {
							t.Fatal(err)
						}
					}
					ins, err := m.Inputs()
					if err != nil || len(ins) != len(c.InputNames) {
						t.Fatalf("inputs %v, %v; want %v", ins, err, c.InputNames)
					}
					for i, in := range ins {
						if in.Name != c.InputNames[i] {
							t.Errorf("input %d: %q, want %q", i, in.Name, c.InputNames[i])
						}
					}
					if s, _ := m.IsStateful(); s != c.Stateful {
						t.Errorf("IsStateful %v, want %v", s, c.Stateful)
					}
					for k, call := range c.Calls {
						if call.ResetStatesBefore {
							if err := m.ResetStates(); err != nil {
								t.Fatal(err)
							}
						}
						got, err := m.RunInputs(call.inputs(), call.batch(), call.timesteps(), nil)
						if err != nil {
							t.Fatalf("call %d: %v", k, err)
						}
						if len(got) != len(call.Outputs) {
							t.Fatalf("call %d: %d outputs, want %d", k, len(got), len(call.Outputs))
						}
						dims, _ := m.OutputShapes(call.batch(), call.timesteps())
						for i, want := range call.Outputs {
							if !reflect.DeepEqual(dims[i], want.Shape) {
								t.Errorf("call %d output %d: dims %v, want %v", k, i, dims[i], want.Shape)
							}
							near(t, "call "+strconv.Itoa(k)+" output "+strconv.Itoa(i), want.Data, got[i], graphTol)
						}
					}
				})
			}
		}
	}
}

func TestGraphOpenFromMemory(t *testing.T) {
	path := graphFile(t, "keras3", "multi_io", "keras")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	call := loadGraphCase(t, "keras3", "multi_io").Calls[0]
	m := mustOpen(t, path)
	want, err := m.RunInputs(call.inputs(), 3, call.timesteps(), nil)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var models []*Model
	for _, open := range []func() (*Model, error){
		func() (*Model, error) { return OpenModelBytes(data) },
		func() (*Model, error) { return OpenModelBytesNamed("multi_io.keras", data) },
		func() (*Model, error) { return OpenModelReader(bytes.NewReader(data)) },
		func() (*Model, error) { return OpenModelReader(f) },
	} {
		m, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		models = append(models, m)
	}
	for i := range data[:4] {
		data[i] = 0 // the bytes were copied
	}
	for k, m := range models {
		got, err := m.RunInputs(call.inputs(), 3, call.timesteps(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("model %d opened from memory: %v, want %v", k, got, want)
		}
	}
	h5, _ := os.ReadFile(graphFile(t, "keras3", "multi_io", "h5"))
	m, err = OpenModelBytes(h5)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := m.Output(0); o.Name != "probs" {
		t.Errorf("h5 image output 0: %v", o)
	}
	m.Close()
}

func TestGraphOpenFromBytesThatAreNotAModel(t *testing.T) {
	junk := []byte("this is not a Keras file")
	_, err := OpenModelBytes(junk)
	wantError(t, "junk bytes", err, ErrIO, "<memory>")
	_, err = OpenModelBytesNamed("junk.keras", junk)
	wantError(t, "named junk", err, ErrIO, "junk.keras")
	_, err = OpenModelBytes(nil)
	wantError(t, "no bytes", err, ErrInvalidArgument, "empty")
	_, err = OpenModelBytes([]byte{})
	wantError(t, "zero bytes", err, ErrInvalidArgument, "empty")
	_, err = OpenModelReader(nil)
	wantError(t, "nil reader", err, ErrInvalidArgument, "nil")
	whole, _ := os.ReadFile(graphFile(t, "keras3", "multi_io", "keras"))
	_, err = OpenModelBytesNamed("cut.keras", whole[:len(whole)/2])
	wantError(t, "truncated", err, ErrIO, "cut.keras")
	// A reader with a name: the name appears in the message.
	tmp := filepath.Join(t.TempDir(), "not_a_model.keras")
	if err := os.WriteFile(tmp, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(tmp)
	defer f.Close()
	_, err = OpenModelReader(f)
	wantError(t, "junk file reader", err, ErrIO, "not_a_model.keras")
}

func TestGraphDescriptors(t *testing.T) {
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	if n, _ := m.NumInputs(); n != 2 {
		t.Errorf("NumInputs %d", n)
	}
	if n, _ := m.NumOutputs(); n != 2 {
		t.Errorf("NumOutputs %d", n)
	}
	ins, _ := m.Inputs()
	outs, _ := m.Outputs()
	// Sequence from the C ABI: (B, 7, 4) has a timesteps axis, (B, 5) features do not.
	want := []TensorInfo{{0, "seq", []int{-1, 7, 4}, false, true}, {1, "static", []int{-1, 5}, false, false}}
	if !reflect.DeepEqual(ins, want) {
		t.Errorf("Inputs %v, want %v", ins, want)
	}
	wantOut := []TensorInfo{{0, "probs", []int{-1, 3}, false, false}, {1, "value", []int{-1, 2}, false, false}}
	if !reflect.DeepEqual(outs, wantOut) {
		t.Errorf("Outputs %v, want %v", outs, wantOut)
	}
	ts := []int{7, 0}
	if n, _ := m.InputsLength(3, ts); n != 3*7*4+3*5 {
		t.Errorf("InputsLength %d", n)
	}
	if n, _ := m.OutputsLength(3, ts); n != 3*3+3*2 {
		t.Errorf("OutputsLength %d", n)
	}
	if d, _ := m.OutputDims(0, 3, ts); !reflect.DeepEqual(d, []int{3, 3}) {
		t.Errorf("OutputDims %v", d)
	}
	if d, err := m.OutputDims(1, 3, nil); err != nil || !reflect.DeepEqual(d, []int{3, 2}) {
		t.Errorf("OutputDims without timesteps %v %v", d, err)
	}
	if d, _ := m.OutputShapes(4, ts); !reflect.DeepEqual(d, [][]int{{4, 3}, {4, 2}}) {
		t.Errorf("OutputShapes %v", d)
	}
	_, err := m.Input(2)
	wantError(t, "input 2", err, ErrInvalidArgument, "index 2 is out of range")
	_, err = m.Output(-1)
	wantError(t, "output -1", err, ErrInvalidArgument, "index -1 is out of range")
	_, err = m.OutputDims(5, 3, ts)
	wantError(t, "output dims 5", err, ErrInvalidArgument, "index 5")
	_, err = m.OutputsLength(3, []int{7})
	wantError(t, "one timestep for two inputs", err, ErrInvalidArgument, "num_timesteps")
	_, err = m.InputsLength(0, ts)
	wantError(t, "batch 0", err, ErrInvalidArgument, "batch")
	if s0, err0 := m.IsSequence(0); err0 != nil || !s0 {
		t.Errorf("IsSequence(0) %v %v", s0, err0)
	}
	if s1, err1 := m.IsSequence(1); err1 != nil || s1 {
		t.Errorf("IsSequence(1) %v %v", s1, err1)
	}
	_, err = m.IsSequence(2)
	wantError(t, "IsSequence(2)", err, ErrInvalidArgument, "index 2 is out of range")
	_, err = m.IsSequence(-1)
	wantError(t, "IsSequence(-1)", err, ErrInvalidArgument, "index -1")
	if ls, err := m.StatefulLayers(); err != nil || len(ls) != 0 {
		t.Errorf("StatefulLayers of a model that is not stateful: %v %v", ls, err)
	}

	e := mustOpen(t, graphFile(t, "keras3", "embedding_masked_full_row", "keras"))
	defer e.Close()
	if in, _ := e.Input(0); !in.TokenIDs || !in.Sequence || !reflect.DeepEqual(in.Dims, []int{-1, -1}) {
		t.Errorf("token ids input %v", in)
	}
	if n, _ := e.InputsLength(3, []int{9}); n != 27 {
		t.Errorf("3 x 9 ids: %d", n)
	}
	_, err = e.InputsLength(3, []int{0})
	wantError(t, "0 timesteps", err, ErrInvalidArgument, "timesteps")
}

func TestGraphRunErrors(t *testing.T) {
	call := loadGraphCase(t, "keras3", "multi_io").Calls[0]
	x, ts := call.inputs(), call.timesteps()
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	_, err := m.RunInputs([][]float32{x[0], make([]float32, 4)}, 3, ts, nil)
	wantError(t, "short static input", err, ErrShape, "'static'")
	_, err = m.RunInputs(x, 3, ts, [][]byte{make([]byte, 5), nil})
	wantError(t, "short mask", err, ErrShape, "masks")
	_, err = m.RunInputs(x[:1], 3, ts, nil)
	wantError(t, "one input of two", err, ErrInvalidArgument, "one per model input")
	_, err = m.RunInputs(x, 3, ts, make([][]byte, 1))
	wantError(t, "one mask entry of two", err, ErrInvalidArgument, "masks")
	_, err = m.RunInputs(x, 3, []int{7}, nil)
	wantError(t, "one timestep of two", err, ErrInvalidArgument, "num_timesteps")
	flat := append(append([]float32(nil), x[0]...), x[1]...)
	err = m.RunFlat(flat, 3, ts, nil, make([]float32, 14))
	wantError(t, "short outputs", err, ErrShape, "outputs")
	y := make([]float32, 15)
	if err := m.RunFlat(flat, 3, ts, nil, y); err != nil {
		t.Fatal(err)
	}
	split, _ := m.RunInputs(x, 3, ts, nil)
	if !reflect.DeepEqual(split[0], y[:9]) || !reflect.DeepEqual(split[1], y[9:]) {
		t.Errorf("RunFlat %v vs RunInputs %v", y, split)
	}
	tok := mustOpen(t, cliModel(t, "keras2", "tokens.keras"))
	defer tok.Close()
	ids := make([]float32, 18)
	ids[4] = 20 // Embedding(20, ...)
	_, err = tok.RunInputs([][]float32{ids}, 3, []int{6}, nil)
	wantError(t, "token id out of range", err, ErrInvalidArgument, "token id 20")
}

func TestGraphMasks(t *testing.T) {
	// binone: no Masking layer (one would replace the mask, as in Keras).
	x := [][]float32{ramp(3*6*3, 0.37, 0.3)}
	ts := []int{6}
	m := mustOpen(t, cliModel(t, "keras3", "binone.keras"))
	defer m.Close()
	plain, err := m.RunInputs(x, 3, ts, nil)
	if err != nil || len(plain) != 2 {
		t.Fatalf("%v %v", plain, err)
	}
	ones := bytes.Repeat([]byte{1}, 18)
	if got, _ := m.RunInputs(x, 3, ts, [][]byte{ones}); !reflect.DeepEqual(got, plain) {
		t.Error("an all-ones mask changes nothing")
	}
	if got, _ := m.RunInputs(x, 3, ts, [][]byte{nil}); !reflect.DeepEqual(got, plain) {
		t.Error("a nil mask entry is no mask")
	}
	holes := append([]byte(nil), ones...)
	holes[2], holes[17] = 0, 0
	masked, _ := m.RunInputs(x, 3, ts, [][]byte{holes})
	if reflect.DeepEqual(masked[0], plain[0]) || reflect.DeepEqual(masked[1], plain[1]) {
		t.Error("holes must change both outputs")
	}
	_, err = m.RunInputs(x, 3, ts, [][]byte{make([]byte, 17)})
	wantError(t, "17 mask values", err, ErrShape, "masks: expected 18")
}

func TestGraphStatefulModel(t *testing.T) {
	c := loadGraphCase(t, "keras3", "stateful_sequential_gru")
	m := mustOpen(t, graphFile(t, "keras3", "stateful_sequential_gru", "keras"))
	defer m.Close()
	if s, _ := m.IsStateful(); !s {
		t.Fatal("stateful")
	}
	if n, _ := m.StatesLength("gru"); n != 12 {
		t.Errorf("StatesLength %d", n)
	}
	// The stateful layers with their states' shapes; the input and output report the fixed batch.
	if n, err := m.NumStatefulLayers(); err != nil || n != 1 {
		t.Errorf("NumStatefulLayers %d %v", n, err)
	}
	gru, err := m.StatefulLayer(0)
	if want := (StatefulLayer{Index: 0, Name: "gru", NumStates: 1, Batch: 3, Units: 4}); err != nil || gru != want {
		t.Errorf("StatefulLayer(0) %+v %v, want %+v", gru, err, want)
	}
	if gru.StatesLength() != 12 {
		t.Errorf("StatesLength of %+v: %d", gru, gru.StatesLength())
	}
	if ls, err := m.StatefulLayers(); err != nil || !reflect.DeepEqual(ls, []StatefulLayer{gru}) {
		t.Errorf("StatefulLayers %v %v", ls, err)
	}
	if in, _ := m.Input(0); in.Dims[0] != 3 || !in.Sequence {
		t.Errorf("the stateful input's fixed batch: %+v", in)
	}
	if out, _ := m.Output(0); out.Dims[0] != 3 {
		t.Errorf("the stateful output's fixed batch: %+v", out)
	}
	_, err = m.StatefulLayer(1)
	wantError(t, "StatefulLayer(1)", err, ErrInvalidArgument, "index 1 is out of range")
	_, err = m.StatefulLayer(-1)
	wantError(t, "StatefulLayer(-1)", err, ErrInvalidArgument, "index -1")
	zero := make([]float32, 12)
	if s, _ := m.States("gru"); !reflect.DeepEqual(s, zero) {
		t.Errorf("states before the first call %v", s)
	}
	first, second := c.Calls[0], c.Calls[1]
	y1, _ := m.RunInputs(first.inputs(), 3, first.timesteps(), nil)
	after1, _ := m.States("gru")
	if reflect.DeepEqual(after1, zero) {
		t.Error("states after a call")
	}
	y2, err := m.RunInputs(second.inputs(), 3, second.timesteps(), nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "the second call goes on from the first", second.Outputs[0].Data, y2[0], graphTol)
	if err := m.SetStates("gru", after1); err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 12)
	if err := m.GetStates("gru", buf); err != nil || !reflect.DeepEqual(buf, after1) {
		t.Errorf("set/get states: %v %v", buf, err)
	}
	if again, _ := m.RunInputs(second.inputs(), 3, second.timesteps(), nil); !reflect.DeepEqual(again, y2) {
		t.Error("rewound to the states after call 1")
	}
	if err := m.ResetStates(); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.RunInputs(first.inputs(), 3, first.timesteps(), nil); !reflect.DeepEqual(again, y1) {
		t.Error("after ResetStates: call 1 again")
	}
	_, err = m.States("nosuch")
	wantError(t, "unknown layer", err, ErrInvalidArgument, "no layer 'nosuch'")
	_, err = m.StatesLength("dense")
	wantError(t, "not recurrent", err, ErrInvalidArgument, "'dense'")
	wantError(t, "11 states", m.SetStates("gru", make([]float32, 11)), ErrShape, "got 11")
	wantError(t, "13 states", m.GetStates("gru", make([]float32, 13)), ErrShape, "got 13")
	_, err = m.RunInputs([][]float32{make([]float32, 2*4*3)}, 2, []int{4}, nil)
	wantError(t, "another batch", err, ErrShape, "fixed batch of 3")

	f := mustOpen(t, graphFile(t, "keras3", "stateful_functional_lstm_gru", "h5"))
	defer f.Close()
	nl, _ := f.StatesLength("lstm")
	ng, _ := f.StatesLength("gru")
	if nl != 24 || ng != 9 {
		t.Errorf("LSTM h, c: %d; GRU h: %d", nl, ng)
	}
	ls, err := f.StatefulLayers()
	wantLs := []StatefulLayer{{0, "lstm", 2, 3, 4}, {1, "gru", 1, 3, 3}} // config order
	if err != nil || !reflect.DeepEqual(ls, wantLs) {
		t.Errorf("StatefulLayers %+v %v, want %+v", ls, err, wantLs)
	}
	for _, l := range ls {
		if n, _ := f.StatesLength(l.Name); n != l.StatesLength() {
			t.Errorf("%s: StatesLength %d, descriptor %d", l.Name, n, l.StatesLength())
		}
	}
	_, err = f.StatefulLayer(2)
	wantError(t, "StatefulLayer(2)", err, ErrInvalidArgument, "index 2 is out of range")
	b := mustOpen(t, cliModel(t, "keras3", "bigru.keras"))
	defer b.Close()
	if s, _ := b.IsStateful(); s {
		t.Error("bigru is not stateful")
	}
	_, err = b.StatesLength("bi/forward")
	wantError(t, "a layer that is not stateful", err, ErrInvalidArgument, "not stateful")
	if n, err := b.NumStatefulLayers(); err != nil || n != 0 {
		t.Errorf("NumStatefulLayers of bigru %d %v", n, err)
	}
	_, err = b.StatefulLayer(0)
	wantError(t, "StatefulLayer(0) of none", err, ErrInvalidArgument, "index 0 is out of range")
	if in, _ := b.Input(0); in.Dims[0] != -1 {
		t.Errorf("not stateful: the batch is given at run time: %+v", in)
	}
	if err := b.ResetStates(); err != nil {
		t.Error(err)
	}
}

func TestGraphKerasBackend(t *testing.T) {
	// masked_initial_state: rows start with masked steps and the initial states are not zero, so
	// the backends differ (TensorFlow outputs zeros there, JAX the initial state).
	tf := loadGraphCase(t, "keras3", "masked_initial_state").Calls[0]
	jax := loadGraphCase(t, "keras3_jax", "masked_initial_state").Calls[0]
	for i := range tf.Outputs {
		if reflect.DeepEqual(tf.Outputs[i].Data, jax.Outputs[i].Data) {
			t.Fatalf("the fixture should show the backends' difference in output %d", i)
		}
	}
	m := mustOpen(t, graphFile(t, "keras3", "masked_initial_state", "keras"))
	defer m.Close()
	check := func(what string, c graphCall) {
		t.Helper()
		y, err := m.RunInputs(c.inputs(), 3, c.timesteps(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range y {
			near(t, what+" output "+strconv.Itoa(i), c.Outputs[i].Data, y[i], graphTol)
		}
	}
	check("tensorflow (the default)", tf)
	if err := m.SetKerasBackend("jax"); err != nil {
		t.Fatal(err)
	}
	check("jax", jax)
	if err := m.SetKerasBackend("tensorflow"); err != nil {
		t.Fatal(err)
	}
	check("tensorflow again", tf)
	for _, bad := range []string{"torch", "numpy", "JAX", ""} {
		wantError(t, "backend "+bad, m.SetKerasBackend(bad), ErrInvalidArgument, `"tensorflow" or "jax"`)
	}
	k2 := mustOpen(t, cliModel(t, "keras2", "bigru.keras"))
	defer k2.Close()
	wantError(t, "jax for Keras 2", k2.SetKerasBackend("jax"), ErrUnsupported, "Keras 2")

	tok := mustOpen(t, cliModel(t, "keras3", "tokens.keras"))
	defer tok.Close()
	gru, err := tok.Layer("gru")
	if err != nil {
		t.Fatal(err)
	}
	defer gru.Close()
	info, _ := gru.Info()
	f, u := info.InputSize, info.Units
	x := ramp(2*3*f, 0.37, 0.5)
	mask := []byte{0, 1, 1, 1, 1, 1}
	h0 := ramp(2*u, 0.37, 1.5)
	tfOut, _ := gru.Call(x, 2, 3, &ForwardOptions{Mask: mask, InitialState: h0})
	if err := gru.SetKerasBackend("jax"); err != nil {
		t.Fatal(err)
	}
	jaxOut, _ := gru.Call(x, 2, 3, &ForwardOptions{Mask: mask, InitialState: h0})
	if !info.ReturnSequences {
		t.Fatal("the GRU returns sequences")
	}
	for k := 0; k < u; k++ {
		if tfOut[k] != 0 || jaxOut[k] != h0[k] {
			t.Fatalf("masked first step, unit %d: tensorflow %v (want 0), jax %v (want h0 %v)", k, tfOut[k], jaxOut[k], h0[k])
		}
	}
	if !reflect.DeepEqual(tfOut[u:], jaxOut[u:]) {
		t.Error("the valid steps agree")
	}
	wantError(t, "layer backend mxnet", gru.SetKerasBackend("mxnet"), ErrInvalidArgument, `got "mxnet"`)
	tok2 := mustOpen(t, cliModel(t, "keras2", "tokens.keras"))
	defer tok2.Close()
	g2, _ := tok2.Layer("gru")
	defer g2.Close()
	wantError(t, "jax for a Keras 2 layer", g2.SetKerasBackend("jax"), ErrUnsupported, "Keras 2")
}

// chunk: inputs[i][b, t0:t0+n, ...] of the sequence inputs, the whole of the others.
func chunk(inputs [][]float32, shapes [][]int, seq []bool, t0, n int) [][]float32 {
	out := make([][]float32, len(inputs))
	for i, x := range inputs {
		if !seq[i] {
			out[i] = x
			continue
		}
		b, tt := shapes[i][0], shapes[i][1]
		rest := len(x) / (b * tt)
		for r := 0; r < b; r++ {
			out[i] = append(out[i], x[(r*tt+t0)*rest:(r*tt+t0+n)*rest]...)
		}
	}
	return out
}

// streamed steps a call through a ModelState step timesteps at a time and returns the outputs as
// a run gives them (safe to call from any goroutine).
func streamed(m *Model, call graphCall, step int) ([][]float32, error) {
	batch := call.batch()
	shapes := make([][]int, len(call.Inputs))
	seq := make([]bool, len(call.Inputs))
	T := 0
	for i, x := range call.Inputs {
		in, err := m.Input(i)
		if err != nil {
			return nil, err
		}
		shapes[i] = x.Shape
		seq[i] = in.Sequence
		if seq[i] {
			T = x.Shape[1]
		}
	}
	full, err := m.OutputShapes(batch, call.timesteps())
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(full))
	for i, d := range full {
		out[i] = make([]float32, product(d))
	}
	s, err := NewModelState(m, batch)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if s.Batch() != batch {
		return nil, argError("Batch " + strconv.Itoa(s.Batch()))
	}
	for t0 := 0; t0 < T; t0 += step {
		n := step
		if T-t0 < n {
			n = T - t0
		}
		y, err := s.Step(chunk(call.inputs(), shapes, seq, t0, n), n, nil)
		if err != nil {
			return nil, err
		}
		yd, err := s.OutputDims(n)
		if err != nil {
			return nil, err
		}
		for i := range y {
			if len(yd[i]) >= 3 {
				rest := len(y[i]) / (batch * n)
				for r := 0; r < batch; r++ {
					copy(out[i][(r*full[i][1]+t0)*rest:], y[i][r*n*rest:(r+1)*n*rest])
				}
			} else {
				out[i] = y[i]
			}
		}
	}
	return out, nil
}

func TestGraphStreamsEqualRuns(t *testing.T) {
	for _, name := range []string{"multi_io", "masking_sequential", "embedding_masked_full_row", "branches_concat"} {
		for _, step := range []int{1, 2, 7} {
			call := loadGraphCase(t, "keras3", name).Calls[0]
			m := mustOpen(t, graphFile(t, "keras3", name, "keras"))
			if why, err := m.Streamable(); why != "" || err != nil {
				t.Fatalf("%s: Streamable %q %v", name, why, err)
			}
			whole, err := m.RunInputs(call.inputs(), call.batch(), call.timesteps(), nil)
			if err != nil {
				t.Fatal(err)
			}
			pieces, err := streamed(m, call, step)
			if err != nil {
				t.Fatalf("%s chunk %d: %v", name, step, err)
			}
			for i := range whole {
				near(t, name+" streamed", whole[i], pieces[i], 1e-6)
				near(t, name+" vs Keras", call.Outputs[i].Data, pieces[i], graphTol)
			}
			m.Close()
		}
	}
}

func TestGraphModelStateAPI(t *testing.T) {
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	s, err := NewModelState(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	in, out, err := s.Lengths(2)
	if err != nil || in != 3*2*4+3*5 || out != 3*3+3*2 {
		t.Errorf("Lengths %d %d %v", in, out, err)
	}
	if d, _ := s.OutputDims(2); !reflect.DeepEqual(d, [][]int{{3, 3}, {3, 2}}) {
		t.Errorf("OutputDims %v", d)
	}
	if d, err := s.StepOutputDims(1, 5); err != nil || !reflect.DeepEqual(d, []int{3, 2}) {
		t.Errorf("StepOutputDims(1, 5) %v %v", d, err)
	}
	_, err = s.StepOutputDims(2, 1)
	wantError(t, "StepOutputDims(2)", err, ErrInvalidArgument, "index 2 is out of range")
	_, err = s.StepOutputDims(-1, 1)
	wantError(t, "StepOutputDims(-1)", err, ErrInvalidArgument, "index -1")
	_, err = s.StepOutputDims(0, 0)
	wantError(t, "StepOutputDims of 0 timesteps", err, ErrInvalidArgument, "timesteps")
	in, out, _ = s.Lengths(1)
	x := make([]float32, in)
	copy(x, ramp(12, 0.37, 0.1))
	y := make([]float32, out)
	if err := s.StepFlat(x, 1, nil, y); err != nil {
		t.Fatal(err)
	}
	first := append([]float32(nil), y...)
	s.StepFlat(x, 1, nil, y)
	if reflect.DeepEqual(first, y) {
		t.Error("the stream carries its state")
	}
	s.Reset()
	s.StepFlat(x, 1, nil, y)
	if !reflect.DeepEqual(first, y) {
		t.Error("Reset starts a new stream")
	}
	s.Reset()
	split, err := s.Step([][]float32{x[:12], x[12:]}, 1, [][]byte{{1, 1, 1}, nil})
	if err != nil || !reflect.DeepEqual(split, [][]float32{first[:9], first[9:]}) {
		t.Errorf("Step %v %v", split, err)
	}
	wantError(t, "short inputs", s.StepFlat(x[1:], 1, nil, y), ErrShape, "inputs")
	wantError(t, "short masks", s.StepFlat(x, 1, []byte{1, 1}, y), ErrShape, "masks")
	wantError(t, "long outputs", s.StepFlat(x, 1, nil, make([]float32, out+1)), ErrShape)
	wantError(t, "0 timesteps", s.StepFlat(x, 0, nil, y), ErrInvalidArgument, "timesteps")
	_, _, err = s.Lengths(0)
	wantError(t, "lengths of 0 timesteps", err, ErrInvalidArgument, "timesteps")
	_, err = s.Step([][]float32{x}, 1, nil)
	wantError(t, "one input of two", err, ErrInvalidArgument, "one per model input")
	_, err = NewModelState(m, 0)
	wantError(t, "batch 0", err, ErrInvalidArgument, "batch")

	m.Close()
	s.Reset()
	if err := s.StepFlat(x, 1, nil, y); err != nil || !reflect.DeepEqual(first, y) {
		t.Errorf("a state outlives its model: %v", err)
	}
	_, err = NewModelState(m, 1)
	wantError(t, "state of a closed model", err, ErrState, "closed")
	s.Close()
	s.Close()
	wantError(t, "Reset after Close", s.Reset(), ErrState, "closed")
	wantError(t, "StepFlat after Close", s.StepFlat(x, 1, nil, y), ErrState, "closed")
	_, err = s.Step([][]float32{x[:12], x[12:]}, 1, nil)
	wantError(t, "Step after Close", err, ErrState, "closed")
	if s.Batch() != 0 {
		t.Error("Batch after Close")
	}
	_, err = s.StepOutputDims(0, 1)
	wantError(t, "StepOutputDims after Close", err, ErrState, "closed")
	_, err = s.OutputDims(1)
	wantError(t, "OutputDims after Close", err, ErrState, "closed")
}

func TestGraphModelStateConcurrentStreams(t *testing.T) {
	// Many goroutines, each with its own stream on one shared model, give the serial numbers.
	c := loadGraphCase(t, "keras3", "masking_sequential").Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "masking_sequential", "keras"))
	defer m.Close()
	want, err := streamed(m, c, 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := streamed(m, c, 2)
			if err != nil {
				errs <- err.Error()
			} else if !reflect.DeepEqual(got, want) {
				errs <- "a concurrent stream differs"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestGraphModelsThatDoNotStream(t *testing.T) {
	b := mustOpen(t, cliModel(t, "keras3", "bigru.keras"))
	defer b.Close()
	why, _ := b.Streamable()
	if !strings.Contains(why, "'bi'") || !strings.Contains(why, "Bidirectional") {
		t.Errorf("Streamable %q", why)
	}
	_, err := NewModelState(b, 1)
	wantError(t, "a state of bigru", err, ErrUnsupported, "layer 'bi' (Bidirectional)")
	s2s := mustOpen(t, graphFile(t, "keras3", "seq2seq_initial_state", "keras"))
	defer s2s.Close()
	if why, _ := s2s.Streamable(); !strings.Contains(why, "initial_state") {
		t.Errorf("Streamable %q", why)
	}
	_, err = NewModelState(s2s, 3)
	wantError(t, "a state of seq2seq", err, ErrUnsupported, "'lstm_1'")
	st := mustOpen(t, graphFile(t, "keras3", "stateful_sequential_gru", "keras"))
	defer st.Close()
	_, err = NewModelState(st, 2)
	wantError(t, "another batch than the stateful one", err, ErrInvalidArgument, "fixed batch of 3")
	s, err := NewModelState(st, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, out, _ := s.Lengths(2); out != 12 {
		t.Errorf("3 x 2 x 2 outputs: %d", out)
	}
	// (3, T, 2): a sequence output's step dims hold the step's timesteps.
	if d, err := s.OutputDims(5); err != nil || !reflect.DeepEqual(d, [][]int{{3, 5, 2}}) {
		t.Errorf("OutputDims(5) %v %v", d, err)
	}
	s.Close()
}

func TestGraphClosedModel(t *testing.T) {
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	m.Close()
	check := func(what string, err error) { wantError(t, what, err, ErrState, "closed") }
	_, err := m.NumInputs()
	check("NumInputs", err)
	_, err = m.NumOutputs()
	check("NumOutputs", err)
	_, err = m.Input(0)
	check("Input", err)
	_, err = m.Outputs()
	check("Outputs", err)
	_, err = m.IsStateful()
	check("IsStateful", err)
	check("ResetStates", m.ResetStates())
	_, err = m.StatesLength("gru")
	check("StatesLength", err)
	check("SetStates", m.SetStates("gru", nil))
	check("SetKerasBackend", m.SetKerasBackend("jax"))
	_, err = m.Streamable()
	check("Streamable", err)
	_, err = m.IsSequence(0)
	check("IsSequence", err)
	_, err = m.NumStatefulLayers()
	check("NumStatefulLayers", err)
	_, err = m.StatefulLayer(0)
	check("StatefulLayer", err)
	_, err = m.StatefulLayers()
	check("StatefulLayers", err)
	_, err = m.OutputDims(0, 1, []int{7, 0})
	check("OutputDims", err)
	_, err = m.RunInputs([][]float32{make([]float32, 28), make([]float32, 5)}, 1, []int{7, 0}, nil)
	check("RunInputs", err)
	check("RunFlat", m.RunFlat(make([]float32, 33), 1, []int{7, 0}, nil, make([]float32, 5)))
}

// StepFlat, the streaming path of a whole model, allocates nothing per call.
func TestGraphStepFlatDoesNotAllocate(t *testing.T) {
	if asanBuild {
		t.Skip("-asan instruments cgo calls with Go allocations of its own; the Release run counts them")
	}
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	s, err := NewModelState(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nin, nout, err := s.Lengths(1)
	if err != nil {
		t.Fatal(err)
	}
	in, out := ramp(nin, 0.01, 0), make([]float32, nout)
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.StepFlat(in, 1, nil, out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("StepFlat allocates %v times per call", n)
	}
}
