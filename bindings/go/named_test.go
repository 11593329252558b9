// SPDX-License-Identifier: Apache-2.0

package recur

// Named runs and steps, cancellation through a context and the log handler (recur 0.6).

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func sentimentKeras3(t testing.TB) *Model {
	t.Helper()
	return mustOpen(t, filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras"))
}

// sentimentIDs are the bundled token ids (rows x cols) as float32, int32 and int64.
func sentimentIDs(t *testing.T) (f []float32, i32 []int32, i64 []int64, rows, cols int) {
	f, rows, cols = readMatrixT(t, filepath.Join(sourceDir(t), "examples", "models", "sentiment_inputs.txt"))
	i32, i64 = make([]int32, len(f)), make([]int64, len(f))
	for k, v := range f {
		i32[k], i64[k] = int32(v), int64(v)
	}
	return f, i32, i64, rows, cols
}

func inputName(t *testing.T, m *Model, index int) string {
	t.Helper()
	in, err := m.Input(index)
	if err != nil {
		t.Fatal(err)
	}
	return in.Name
}

func dims64(d []int) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

func sameDims(a []int64, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != int64(b[i]) {
			return false
		}
	}
	return true
}

func TestNamedRunEqualsPositional(t *testing.T) {
	m := sentimentKeras3(t)
	defer m.Close()
	f, i32, i64, rows, cols := sentimentIDs(t)
	want, err := m.Predict(f, rows, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := inputName(t, m, 0)
	outName := must(m.OutputNames())[0]
	for _, in := range []Tensor{
		NewFloat32Tensor(name, f, int64(rows), int64(cols)),
		NewInt32Tensor(name, i32, int64(rows), int64(cols)),
		NewInt64Tensor(name, i64, int64(rows), int64(cols)),
	} {
		got, err := m.RunNamed(context.Background(), []Tensor{in}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Name != outName || !sameBits(got[0].Values, want) {
			t.Errorf("named run (%s) differs from Predict: %v vs %v", outName, got, want)
		}
		if len(got[0].Dims) != 2 || got[0].Dims[0] != int64(rows) || int(got[0].Dims[1])*rows != len(want) {
			t.Errorf("dims %v for %d values", got[0].Dims, len(want))
		}
	}
}

// multi_io (inputs seq and static, outputs probs and value): by name, with the inputs in the
// other order and the outputs a subset in another order, equal to RunInputs to the bit.
func TestNamedRunMultiInput(t *testing.T) {
	for _, dialect := range []string{"keras2", "keras3"} {
		c := loadGraphCase(t, dialect, "multi_io")
		call := c.Calls[0]
		m := mustOpen(t, graphFile(t, dialect, "multi_io", "keras"))
		want, err := m.RunInputs(call.inputs(), call.batch(), call.timesteps(), nil)
		if err != nil {
			t.Fatal(err)
		}
		names := must(m.OutputNames())
		ins := []Tensor{
			NewFloat32Tensor(c.InputNames[1], call.Inputs[1].Data, dims64(call.Inputs[1].Shape)...),
			NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data, dims64(call.Inputs[0].Shape)...),
		}
		all, err := m.RunNamed(context.Background(), ins, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if all[i].Name != names[i] || !sameBits(all[i].Values, want[i]) || !sameDims(all[i].Dims, call.Outputs[i].Shape) {
				t.Errorf("%s: output %d %s differs: %v", dialect, i, names[i], all[i])
			}
			near(t, dialect+" "+names[i]+" vs Keras", call.Outputs[i].Data, all[i].Values, graphTol)
		}
		sub, err := m.RunNamed(context.Background(), ins, []string{names[1], names[0]})
		if err != nil {
			t.Fatal(err)
		}
		if sub[0].Name != names[1] || !sameBits(sub[0].Values, want[1]) || !sameBits(sub[1].Values, want[0]) {
			t.Errorf("%s: outputs in another order differ", dialect)
		}
		one, err := m.RunNamed(context.Background(), ins, []string{names[1]})
		if err != nil || len(one) != 1 || !sameBits(one[0].Values, want[1]) {
			t.Errorf("%s: one output: %v %v", dialect, one, err)
		}
		m.Close()
	}
}

// Outputs that share a Keras 3 name are "name:k"; the bare name is refused as ambiguous.
func TestNamedRunSharedOutputNames(t *testing.T) {
	c := loadGraphCase(t, "keras3", "return_state_outputs")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "return_state_outputs", "keras"))
	defer m.Close()
	names := must(m.OutputNames())
	if names[0] != "gru:0" || names[1] != "gru:1" || names[2] != "lstm:0" {
		t.Errorf("output names %v", names)
	}
	in := []Tensor{NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data, dims64(call.Inputs[0].Shape)...)}
	got, err := m.RunNamed(context.Background(), in, []string{"lstm:2", "gru:0"})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "lstm:2", call.Outputs[4].Data, got[0].Values, graphTol)
	near(t, "gru:0", call.Outputs[0].Data, got[1].Values, graphTol)
	_, err = m.RunNamed(context.Background(), in, []string{"lstm"})
	wantError(t, "ambiguous output name", err, ErrInvalidArgument, "lstm")
}

// More buffers than the glue passes directly (17 outputs): the rest go through C memory.
func TestNamedRunManyOutputs(t *testing.T) {
	c := loadGraphCase(t, "keras3", "activations_layers")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "activations_layers", "keras"))
	defer m.Close()
	want, err := m.RunInputs(call.inputs(), call.batch(), call.timesteps(), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := []Tensor{NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data, dims64(call.Inputs[0].Shape)...)}
	got, err := m.RunNamed(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) <= recurSlots {
		t.Fatalf("%d outputs, want %d (> %d)", len(got), len(want), recurSlots)
	}
	for i := range want {
		if !sameBits(got[i].Values, want[i]) {
			t.Errorf("output %d (%s) differs", i, got[i].Name)
		}
	}
}

// Every buffer copied through C memory (inputs, masks and outputs), as past the 16th: the same
// numbers as passed directly.
func TestNamedRunStagedBuffers(t *testing.T) {
	c := loadGraphCase(t, "keras3", "merges_mixed_masks")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "merges_mixed_masks", "keras"))
	defer m.Close()
	var ins []Tensor
	for i, x := range call.Inputs {
		in := NewFloat32Tensor(c.InputNames[i], x.Data, dims64(x.Shape)...)
		in.Mask = make([]byte, x.Shape[0]*x.Shape[1])
		for k := range in.Mask {
			in.Mask[k] = byte(1 - (k%x.Shape[1])/(x.Shape[1]-1-i)) // the last steps masked
		}
		ins = append(ins, in)
	}
	direct, err := m.RunNamed(context.Background(), ins, nil)
	if err != nil {
		t.Fatal(err)
	}
	directSlots = 0
	defer func() { directSlots = recurSlots }()
	staged, err := m.RunNamed(context.Background(), ins, nil)
	if err != nil {
		t.Fatal(err)
	}
	unmasked := []Tensor{ins[0], ins[1]}
	unmasked[0].Mask, unmasked[1].Mask = nil, nil
	plain, err := m.RunNamed(context.Background(), unmasked, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(direct[0].Values, staged[0].Values) || sameBits(plain[0].Values, staged[0].Values) {
		t.Errorf("staged run differs from the direct one, or its masks were lost: %v %v %v", direct, staged, plain)
	}
}

func TestNamedRunIntoDoesNotAllocate(t *testing.T) {
	if asanBuild {
		t.Skip("-asan instruments cgo calls with Go allocations of its own; the Release run counts them")
	}
	c := loadGraphCase(t, "keras3", "multi_io")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	ins := []Tensor{
		NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data, dims64(call.Inputs[0].Shape)...),
		NewFloat32Tensor(c.InputNames[1], call.Inputs[1].Data, dims64(call.Inputs[1].Shape)...),
	}
	outs, err := m.OutputShapesNamed(ins, []string{"value", "probs"})
	if err != nil {
		t.Fatal(err)
	}
	if !sameDims(outs[0].Dims, call.Outputs[1].Shape) || len(outs[0].Values) != len(call.Outputs[1].Data) {
		t.Fatalf("OutputShapesNamed: %v", outs[0])
	}
	if n := testing.AllocsPerRun(500, func() {
		if err := m.RunNamedInto(context.Background(), ins, outs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("RunNamedInto allocates %v times per call", n)
	}
	near(t, "value", call.Outputs[1].Data, outs[0].Values, graphTol)
	s, err := NewModelState(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	step := []Tensor{
		NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data[:3*4], 3, 1, 4),
		NewFloat32Tensor(c.InputNames[1], call.Inputs[1].Data, dims64(call.Inputs[1].Shape)...),
	}
	souts, err := s.OutputShapesNamed(step, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(500, func() {
		if err := s.StepNamedInto(context.Background(), step, souts); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("StepNamedInto allocates %v times per call", n)
	}
}

// Streams fed by name, one step at a time, give what one run over the whole sequence gives.
func TestNamedStepsEqualRun(t *testing.T) {
	c := loadGraphCase(t, "keras3", "multi_io")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	want, err := m.RunInputs(call.inputs(), call.batch(), call.timesteps(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewModelState(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seq, shape := call.Inputs[0].Data, call.Inputs[0].Shape // (3, 7, 4)
	var last []Output
	for step := 0; step < shape[1]; step++ {
		x := make([]float32, 0, shape[0]*shape[2])
		for b := 0; b < shape[0]; b++ {
			row := seq[(b*shape[1]+step)*shape[2]:]
			x = append(x, row[:shape[2]]...)
		}
		last, err = s.StepNamed(context.Background(), []Tensor{
			NewFloat32Tensor(c.InputNames[1], call.Inputs[1].Data, dims64(call.Inputs[1].Shape)...),
			NewFloat32Tensor(c.InputNames[0], x, int64(shape[0]), 1, int64(shape[2])),
		}, []string{"value", "probs"})
		if err != nil {
			t.Fatal(err)
		}
	}
	near(t, "value after the stream", want[1], last[0].Values, 1e-6)
	near(t, "probs after the stream", want[0], last[1].Values, 1e-6)
}

func TestNamedRunErrors(t *testing.T) {
	m := sentimentKeras3(t)
	defer m.Close()
	_, i32, _, rows, cols := sentimentIDs(t)
	name := inputName(t, m, 0)
	ctx := context.Background()
	ids := NewInt32Tensor(name, i32, int64(rows), int64(cols))
	before := settledLiveHandles()
	cases := []struct {
		what    string
		inputs  []Tensor
		outputs []string
		status  int
		words   []string
	}{
		{"unknown input", []Tensor{NewInt32Tensor("nope", i32, int64(rows), int64(cols))}, nil, ErrInvalidArgument, []string{"nope"}},
		{"missing input", nil, nil, ErrInvalidArgument, []string{name}},
		{"input twice", []Tensor{ids, ids}, nil, ErrInvalidArgument, []string{name}},
		{"unknown output", []Tensor{ids}, []string{"nope"}, ErrInvalidArgument, []string{"nope"}},
		{"no values", []Tensor{{Name: name, Dims: []int64{int64(rows), int64(cols)}}}, nil, ErrInvalidArgument, []string{"Float32", "Int32", "Int64"}},
		{"two kinds of values", []Tensor{{Name: name, Dims: []int64{int64(rows), int64(cols)}, Int32: i32, Float32: []float32{1}}}, nil, ErrInvalidArgument, []string{"exactly one"}},
		{"length", []Tensor{NewInt32Tensor(name, i32[:5], int64(rows), int64(cols))}, nil, ErrShape, []string{"length"}},
		{"rank", []Tensor{NewInt32Tensor(name, i32, int64(rows), int64(cols), 1)}, nil, ErrShape, []string{"dims"}},
		{"rank above 8", []Tensor{NewInt32Tensor(name, i32, 1, 1, 1, 1, 1, 1, 1, 1, 1)}, nil, ErrShape, []string{"Dims", "above 8"}},
		{"mask length", []Tensor{{Name: name, Dims: []int64{int64(rows), int64(cols)}, Int32: i32, Mask: []byte{1}}}, nil, ErrShape, []string{"mask_length"}},
		{"id out of range", []Tensor{NewInt32Tensor(name, append([]int32{1 << 30}, i32[1:]...), int64(rows), int64(cols))}, nil, ErrInvalidArgument, []string{"1073741824"}},
		{"NUL in a name", []Tensor{NewInt32Tensor("a\x00b", i32, int64(rows), int64(cols))}, nil, ErrInvalidArgument, []string{"NUL"}},
	}
	for _, c := range cases {
		_, err := m.RunNamed(ctx, c.inputs, c.outputs)
		wantError(t, "RunNamed: "+c.what, err, c.status, c.words...)
		_, err = m.OutputShapesNamed(c.inputs, c.outputs)
		if c.what != "id out of range" && c.what != "mask length" { // sizing reads neither
			wantError(t, "OutputShapesNamed: "+c.what, err, c.status, c.words...)
		}
	}
	outs := must(m.OutputShapesNamed([]Tensor{ids}, nil))
	small := []Output{{Name: outs[0].Name, Values: make([]float32, len(outs[0].Values)-1)}}
	err := m.RunNamedInto(ctx, []Tensor{ids}, small)
	wantError(t, "output too small", err, ErrShape, "capacity")
	if len(small[0].Dims) != 0 || len(small[0].Values) != len(outs[0].Values)-1 {
		t.Errorf("a failed run wrote the output: %v", small[0])
	}
	_, err = m.RunNamed(nil, []Tensor{ids}, nil) //nolint:staticcheck // a nil context is the error under test
	wantError(t, "nil context", err, ErrInvalidArgument, "ctx")
	checkBack(t, before, "after the error paths")

	s, err := NewModelState(m, rows)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.StepNamed(ctx, nil, nil)
	wantError(t, "step without inputs", err, ErrInvalidArgument, name)
	_, err = s.StepNamed(ctx, []Tensor{NewInt32Tensor(name, i32[:cols], 1, int64(cols))}, nil)
	wantError(t, "step of another batch", err, ErrShape, "batch")
	s.Close()
}

func TestNamedCloseTwiceAndUseAfterClose(t *testing.T) {
	m := sentimentKeras3(t)
	_, i32, _, rows, cols := sentimentIDs(t)
	in := []Tensor{NewInt32Tensor(inputName(t, m, 0), i32, int64(rows), int64(cols))}
	s := must(NewModelState(m, rows))
	outs := must(m.OutputShapesNamed(in, nil))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, err := m.RunNamed(context.Background(), in, nil)
	wantError(t, "RunNamed after Close", err, ErrState, "model is closed")
	wantError(t, "RunNamedInto after Close", m.RunNamedInto(context.Background(), in, outs), ErrState, "closed")
	_, err = m.OutputShapesNamed(in, []string{"x"})
	wantError(t, "OutputShapesNamed after Close", err, ErrState, "closed")
	// The stream outlives its model.
	step := []Tensor{NewInt32Tensor(in[0].Name, i32[:rows], int64(rows), 1)}
	if _, err := s.StepNamed(context.Background(), step, nil); err != nil {
		t.Errorf("a stream after its model closed: %v", err)
	}
	s.Close()
	s.Close()
	_, err = s.StepNamed(context.Background(), step, nil)
	wantError(t, "StepNamed after Close", err, ErrState, "model state is closed")
	_, err = s.OutputShapesNamed(step, nil)
	wantError(t, "OutputShapesNamed after Close", err, ErrState, "closed")
	var nilModel *Model
	_, err = nilModel.RunNamed(context.Background(), in, nil)
	wantError(t, "nil model", err, ErrState, "closed")
}

// longRun is a run of the sentiment model that takes well over a second on one core.
func longRun(t *testing.T, m *Model) []Tensor {
	const batch, steps = 16, 100000
	ids := make([]int32, batch*steps)
	for i := range ids {
		ids[i] = int32(1 + i%19)
	}
	return []Tensor{NewInt32Tensor(inputName(t, m, 0), ids, batch, steps)}
}

func wantCancelled(t *testing.T, what string, err error, cause error) {
	t.Helper()
	if !errors.Is(err, cause) {
		t.Errorf("%s: errors.Is(err, %v) is false for %v", what, cause, err)
	}
	wantError(t, what, err, ErrCancelled, "cancelled")
}

func TestNamedRunCancel(t *testing.T) {
	m := sentimentKeras3(t)
	defer m.Close()
	in := longRun(t, m)
	outs := must(m.OutputShapesNamed(in, nil))
	before := settledLiveHandles()

	done, cancel := context.WithCancel(context.Background())
	cancel()
	outs[0].Dims = nil
	wantCancelled(t, "already cancelled", m.RunNamedInto(done, in, outs), context.Canceled)
	if len(outs[0].Dims) != 0 {
		t.Errorf("a cancelled run wrote its output")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The run holds one run options handle while it runs: cancel once it shows.
		end := time.Now().Add(5 * time.Second)
		for LiveHandles().RunOptions != before.RunOptions+1 && time.Now().Before(end) {
			time.Sleep(time.Millisecond)
		}
		if LiveHandles().RunOptions != before.RunOptions+1 {
			t.Errorf("no run options counted during a cancellable run: %v", LiveHandles())
		}
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	err := m.RunNamedInto(ctx, in, outs)
	took := time.Since(start)
	wg.Wait()
	wantCancelled(t, "cancelled from another goroutine", err, context.Canceled)
	t.Logf("cancelled after %v", took)

	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err = m.RunNamed(tctx, in, nil)
	tcancel()
	wantCancelled(t, "timeout", err, context.DeadlineExceeded)
	checkBack(t, before, "after cancelled runs (run options freed)")

	// A context that is never done: the call finishes, frees its options and its goroutine.
	small := []Tensor{NewInt32Tensor(in[0].Name, in[0].Int32[:2*3], 2, 3)}
	live, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	goroutines := runtimeGoroutines()
	for i := 0; i < 20; i++ {
		if _, err := m.RunNamed(live, small, nil); err != nil {
			t.Fatal(err)
		}
	}
	if now := waitGoroutines(goroutines); now > goroutines {
		t.Errorf("%d goroutines after 20 runs, %d before", now, goroutines)
	}
	checkBack(t, before, "after runs with a live context")
}

func TestNamedStepCancel(t *testing.T) {
	m := sentimentKeras3(t)
	defer m.Close()
	in := longRun(t, m)
	s := must(NewModelState(m, 16))
	defer s.Close()
	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := s.StepNamed(tctx, in, nil)
	wantCancelled(t, "step timeout", err, context.DeadlineExceeded)
	// The stream stayed where it was: a step now equals a first step of a fresh stream.
	one := []Tensor{NewInt32Tensor(in[0].Name, in[0].Int32[:16*2], 16, 2)}
	got := must(s.StepNamed(context.Background(), one, nil))
	fresh := must(NewModelState(m, 16))
	defer fresh.Close()
	want := must(fresh.StepNamed(context.Background(), one, nil))
	if !sameBits(got[0].Values, want[0].Values) {
		t.Errorf("a cancelled step changed the stream")
	}
}

func TestNamedConcurrentRunsAndCancels(t *testing.T) {
	m := sentimentKeras3(t)
	defer m.Close()
	f, i32, _, rows, cols := sentimentIDs(t)
	want := must(m.Predict(f, rows, cols, nil))
	in := []Tensor{NewInt32Tensor(inputName(t, m, 0), i32, int64(rows), int64(cols))}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if i%3 == g%3 {
					cancel()
				}
				got, err := m.RunNamed(ctx, in, nil)
				cancel()
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Error(err)
				} else if err == nil && !sameBits(got[0].Values, want) {
					t.Errorf("goroutine %d: run %d differs", g, i)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestLogHandler(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var levels []LogLevel
	handler := func(level LogLevel, msg string) {
		mu.Lock()
		got = append(got, msg)
		levels = append(levels, level)
		mu.Unlock()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	if err := SetLogHandler(handler, LogDebug); err != nil {
		t.Fatal(err)
	}
	m := sentimentKeras3(t)
	m.Close()
	n := count()
	mu.Lock()
	joined := strings.Join(got, "\n")
	mu.Unlock()
	if n == 0 || !strings.Contains(joined, "sentiment_keras3.keras") {
		t.Errorf("the log handler heard %d messages, none naming the model's layers:\n%s", n, joined)
	}
	t.Logf("%d messages, first %q", n, got[0])
	for _, l := range levels {
		if l < LogDebug || l > LogError || strings.HasPrefix(l.String(), "LogLevel(") {
			t.Errorf("level %v", l)
		}
	}
	// Warnings and up only: opening a model logs at info, so nothing more arrives.
	if err := SetLogHandler(handler, LogError); err != nil {
		t.Fatal(err)
	}
	n = count()
	sentimentKeras3(t).Close()
	if count() != n {
		t.Errorf("messages below the minimum level arrived")
	}
	// Removed: nothing more.
	if err := SetLogHandler(nil, LogDebug); err != nil {
		t.Fatal(err)
	}
	n = count()
	sentimentKeras3(t).Close()
	if count() != n {
		t.Errorf("the handler was called after it was removed")
	}
	// A panicking handler is recovered; recur goes on.
	if err := SetLogHandler(func(LogLevel, string) { panic("handler panic") }, LogDebug); err != nil {
		t.Fatal(err)
	}
	m = sentimentKeras3(t)
	if _, err := m.Info(); err != nil {
		t.Error(err)
	}
	m.Close()
	wantError(t, "bad level", SetLogHandler(handler, LogLevel(7)), ErrInvalidArgument, "min_level")
	if err := SetLogHandler(nil, LogDebug); err != nil {
		t.Fatal(err)
	}
}

// The handler from many goroutines at once (under -race in go_test_race).
func TestLogHandlerConcurrent(t *testing.T) {
	var mu sync.Mutex
	heard := 0
	if err := SetLogHandler(func(LogLevel, string) { mu.Lock(); heard++; mu.Unlock() }, LogDebug); err != nil {
		t.Fatal(err)
	}
	defer SetLogHandler(nil, LogDebug)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				sentimentKeras3(t).Close()
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if heard < 20 {
		t.Errorf("heard %d messages from 20 model opens", heard)
	}
}

func TestStatusStringCancelled(t *testing.T) {
	if StatusString(ErrCancelled) != "cancelled" {
		t.Errorf("StatusString(ErrCancelled) = %q", StatusString(ErrCancelled))
	}
}

func runtimeGoroutines() int { return runtime.NumGoroutine() }

// waitGoroutines waits up to a second for the goroutine count to fall back to want; it returns
// the last count.
func waitGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 100 && n > want; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// Integer values into an input that does not take ids are cast to float32, as Keras casts them.
func TestNamedIntegersIntoAFloatInput(t *testing.T) {
	c := loadGraphCase(t, "keras3", "multi_io")
	call := c.Calls[0]
	m := mustOpen(t, graphFile(t, "keras3", "multi_io", "keras"))
	defer m.Close()
	shape := dims64(call.Inputs[1].Shape)
	f := make([]float32, len(call.Inputs[1].Data))
	i64 := make([]int64, len(f))
	for k := range f {
		i64[k] = int64(k%5) - 2
		f[k] = float32(i64[k])
	}
	seq := NewFloat32Tensor(c.InputNames[0], call.Inputs[0].Data, dims64(call.Inputs[0].Shape)...)
	want := must(m.RunNamed(context.Background(), []Tensor{seq, NewFloat32Tensor(c.InputNames[1], f, shape...)}, nil))
	got := must(m.RunNamed(context.Background(), []Tensor{seq, NewInt64Tensor(c.InputNames[1], i64, shape...)}, nil))
	for i := range want {
		if !sameBits(want[i].Values, got[i].Values) {
			t.Errorf("output %s: int64 values differ from the same values as float32", want[i].Name)
		}
	}
}
