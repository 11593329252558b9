// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func gruOptions(units, input int) LayerOptions {
	return LayerOptions{Type: GRU, Units: units, InputSize: input, Seed: Int64(7), ReturnSequences: True}
}

func mustLayer(t testing.TB, opts LayerOptions) *Layer {
	t.Helper()
	l, err := NewLayer(opts)
	if err != nil {
		t.Fatalf("NewLayer: %v", err)
	}
	return l
}

// wantError checks that err is an *Error with the given status and a non-empty message that
// contains every one of words.
func wantError(t *testing.T, what string, err error, status int, words ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: want *recur.Error with status %d, got %v", what, status, err)
		return
	}
	if e.Status != status {
		t.Errorf("%s: status %d (%s), want %d: %s", what, e.Status, StatusString(e.Status), status, e.Msg)
	}
	if e.Msg == "" {
		t.Errorf("%s: empty message", what)
	}
	for _, w := range words {
		if !strings.Contains(e.Msg, w) {
			t.Errorf("%s: message %q does not mention %q", what, e.Msg, w)
		}
	}
	if !strings.Contains(err.Error(), e.Msg) {
		t.Errorf("%s: Error() %q lacks the message", what, err.Error())
	}
	t.Logf("%s: %v", what, err)
}

func ramp(n int, scale float64, phase float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)*scale+phase) * 0.8)
	}
	return v
}

func TestVersion(t *testing.T) {
	v := Version()
	if strings.Count(v, ".") != 2 {
		t.Fatalf("Version() = %q", v)
	}
}

func TestLayerFromOptions(t *testing.T) {
	l := mustLayer(t, LayerOptions{Type: LSTM, Units: 5, InputSize: 3, Seed: Int64(1), ReturnState: True,
		KernelRegularizer: "l2", ActivityRegularizer: `{"class_name": "L1", "config": {"l1": 0.01}}`,
		RecurrentConstraint: "max_norm", Name: "my_lstm"})
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != LSTM || info.Units != 5 || info.InputSize != 3 || info.NumStates != 2 || info.NumWeights != 3 ||
		!info.ReturnState || info.ReturnSequences || info.Dialect != Keras3 {
		t.Fatalf("Info() = %+v", info)
	}
	names := []string{"kernel", "recurrent_kernel", "bias"}
	shapes := [][]int{{3, 20}, {5, 20}, {20}}
	total := 0
	for i := range names {
		name, err := l.WeightName(i)
		if err != nil || name != names[i] {
			t.Fatalf("WeightName(%d) = %q, %v", i, name, err)
		}
		shape, err := l.WeightShape(i)
		if err != nil || fmt.Sprint(shape) != fmt.Sprint(shapes[i]) {
			t.Fatalf("WeightShape(%d) = %v, %v", i, shape, err)
		}
		w, err := l.Weight(i)
		if err != nil {
			t.Fatal(err)
		}
		total += len(w)
		for j := range w {
			w[j] = float32(i) + float32(j)*0.001
		}
		if err := l.SetWeight(i, w); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(w))
		if err := l.GetWeight(i, back); err != nil || fmt.Sprint(back) != fmt.Sprint(w) {
			t.Fatalf("GetWeight(%d) after SetWeight: %v", i, err)
		}
	}
	if n, err := l.WeightsLength(); err != nil || n != total {
		t.Fatalf("WeightsLength() = %d, %v; want %d", n, err, total)
	}
	all, err := l.Weights()
	if err != nil || len(all) != total || all[len(all)-1] != 2+19*0.001 {
		t.Fatalf("Weights(): %v", err)
	}
	if err := l.SetWeights(all); err != nil {
		t.Fatal(err)
	}

	out, err := l.Call(ramp(2*4*3, 0.3, 0), 2, 4, nil)
	if err != nil || len(out) != 2*5 {
		t.Fatalf("Call: %d values, %v", len(out), err)
	}
	losses, err := l.Losses()
	if err != nil {
		t.Fatal(err)
	}
	var lossNames []string
	for _, loss := range losses {
		lossNames = append(lossNames, loss.Name)
		if !(loss.Value > 0) {
			t.Errorf("loss %s = %g", loss.Name, loss.Value)
		}
	}
	if got := strings.Join(lossNames, ","); got != "activity:output,activity:state_h,activity:state_c,kernel" {
		t.Errorf("loss names %s", got)
	}
	if err := l.ApplyConstraints(); err != nil {
		t.Fatal(err)
	}
	rk, _ := l.Weight(1)
	for col := 0; col < 20; col++ { // max_norm(2) over axis 0
		s := 0.0
		for row := 0; row < 5; row++ {
			s += float64(rk[row*20+col]) * float64(rk[row*20+col])
		}
		if math.Sqrt(s) > 2+1e-5 {
			t.Fatalf("column %d has norm %g after max_norm", col, math.Sqrt(s))
		}
	}
	zeros, err := l.InitialState(3)
	if err != nil || len(zeros) != 2*3*5 {
		t.Fatalf("InitialState: %d, %v", len(zeros), err)
	}
}

func TestCellsAndDropoutMasks(t *testing.T) {
	cell := mustLayer(t, LayerOptions{Type: GRUCell, Units: 4, InputSize: 3, Seed: Int64(3), Dropout: 0.5,
		RecurrentDropout: 0.25})
	defer cell.Close()
	out := make([]float32, 2*4)
	newStates := make([]float32, 2*4)
	if err := cell.CellCall(ramp(6, 0.5, 0), 2, make([]float32, 8), out, newStates, false); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i] != newStates[i] {
			t.Fatalf("GRUCell output %v != new h %v", out, newStates)
		}
	}
	masks, count, err := cell.DropoutMask(2, true)
	if err != nil || count == 0 || len(masks) != count*2*3 {
		t.Fatalf("DropoutMask: %d masks, %d values, %v", count, len(masks), err)
	}
	for _, v := range masks {
		if v != 0 && v != 2 {
			t.Fatalf("dropout mask value %g (rate 0.5)", v)
		}
	}
	rmasks, rcount, err := cell.RecurrentDropoutMask(2, true)
	if err != nil || rcount == 0 || len(rmasks) != rcount*2*4 {
		t.Fatalf("RecurrentDropoutMask: %d masks, %v", rcount, err)
	}
	if err := cell.ResetDropoutMask(); err != nil {
		t.Fatal(err)
	}
	if err := cell.ResetRecurrentDropoutMask(); err != nil {
		t.Fatal(err)
	}
	if err := cell.CellCall(ramp(6, 0.5, 0), 2, make([]float32, 8), out, nil, true); err != nil {
		t.Fatal(err)
	}
}

func TestStatefulLayer(t *testing.T) {
	l := mustLayer(t, LayerOptions{Type: LSTM, Units: 3, InputSize: 2, Stateful: True, BatchSize: 2,
		Seed: Int64(5)})
	defer l.Close()
	x := ramp(2*3*2, 0.4, 1)
	first, err := l.Call(x, 2, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.States()
	if err != nil || len(st) != 2*2*3 {
		t.Fatalf("States: %d, %v", len(st), err)
	}
	second, _ := l.Call(x, 2, 3, nil)
	if fmt.Sprint(first) == fmt.Sprint(second) {
		t.Fatal("a stateful layer gave the same output twice")
	}
	if err := l.ResetStates(); err != nil {
		t.Fatal(err)
	}
	again, _ := l.Call(x, 2, 3, nil)
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatal("ResetStates did not restart the stream")
	}
	if err := l.SetStates(st); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, len(st))
	if err := l.GetStates(back); err != nil || fmt.Sprint(back) != fmt.Sprint(st) {
		t.Fatalf("GetStates after SetStates: %v", err)
	}
}

// Feeding a sequence step by step through a State gives what one Forward call gives.
func TestStreamingMatchesForward(t *testing.T) {
	for _, typ := range []LayerType{GRU, LSTM} {
		l := mustLayer(t, LayerOptions{Type: typ, Units: 6, InputSize: 4, Seed: Int64(11), ReturnSequences: True})
		const B, T, F, U = 3, 7, 4, 6
		x := ramp(B*T*F, 0.21, 0.5)
		mask := make([]byte, B*T)
		for i := range mask {
			mask[i] = byte((i*7 + 3) % 5 % 4) // some zeros
		}
		want, err := l.Call(x, B, T, &ForwardOptions{Mask: mask})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewState(l, B)
		if err != nil {
			t.Fatal(err)
		}
		if ns, b, u, err := s.Shape(); err != nil || b != B || u != U || ns != map[LayerType]int{GRU: 1, LSTM: 2}[typ] {
			t.Fatalf("Shape() = %d %d %d %v", ns, b, u, err)
		}
		step := make([]float32, B*F)
		stepMask := make([]byte, B)
		out := make([]float32, B*U)
		for ts := 0; ts < T; ts++ {
			for b := 0; b < B; b++ {
				copy(step[b*F:(b+1)*F], x[(b*T+ts)*F:(b*T+ts+1)*F])
				stepMask[b] = mask[b*T+ts]
			}
			if err := l.ForwardState(s, step, 1, stepMask, out); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < B; b++ {
				for u := 0; u < U; u++ {
					if d := math.Abs(float64(out[b*U+u] - want[(b*T+ts)*U+u])); d > 1e-6 {
						t.Fatalf("%v step %d stream %d: %g vs %g", typ, ts, b, out[b*U+u], want[(b*T+ts)*U+u])
					}
				}
			}
		}
		vals, err := s.Values()
		if err != nil || len(vals) != s.Len() {
			t.Fatal(err)
		}
		if err := s.Set(vals); err != nil {
			t.Fatal(err)
		}
		if err := s.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := s.Get(vals); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if v != 0 {
				t.Fatal("Reset left a non-zero state")
			}
		}
		s.Close()
		l.Close()
	}
}

func TestModelFiles(t *testing.T) {
	dir := filepath.Join(sourceDir(t), "examples", "models")
	for _, dialect := range []string{"keras2", "keras3"} {
		keras, krows, kcols := readMatrixT(t, filepath.Join(dir, "sentiment_"+dialect+"_keras.txt"))
		ids, rows, cols := readMatrixT(t, filepath.Join(dir, "sentiment_inputs.txt"))
		if krows != rows {
			t.Fatal("rows differ")
		}
		for _, format := range []string{"keras", "h5"} {
			m, err := OpenModel(filepath.Join(dir, "sentiment_"+dialect+"."+format))
			if err != nil {
				t.Fatal(err)
			}
			info, err := m.Info()
			if err != nil || !info.Runnable || !info.TakesTokenIDs || info.OutputSize != kcols || info.NumOutputs != 1 {
				t.Fatalf("Info() = %+v, %v", info, err)
			}
			out, err := m.Predict(ids, rows, cols, nil)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i := range keras {
				worst = math.Max(worst, math.Abs(float64(out[i]-keras[i])))
			}
			if worst > 1e-5 {
				t.Errorf("%s.%s differs from Keras by %g", dialect, format, worst)
			}
			recurrent := 0
			for i := 0; i < info.NumLayers; i++ {
				ml, err := m.LayerAt(i)
				if err != nil || ml.Name == "" || ml.ClassName == "" || !strings.HasPrefix(ml.ConfigJSON, "{") {
					t.Fatalf("LayerAt(%d) = %+v, %v", i, ml, err)
				}
				if !ml.Recurrent {
					continue
				}
				recurrent++
				l, err := m.Layer(ml.Name)
				if err != nil {
					t.Fatalf("Layer(%q): %v", ml.Name, err)
				}
				li, _ := l.Info()
				if li.Units != ml.OutputSize || li.InputSize != ml.InputSize {
					t.Errorf("layer %s: info %+v, model says in %d out %d", ml.Name, li, ml.InputSize, ml.OutputSize)
				}
				l.Close()
			}
			if recurrent != 2 {
				t.Errorf("%d recurrent layers, want 2 (GRU, LSTM)", recurrent)
			}
			m.Close()
		}
	}
}

// Every error path maps to a *recur.Error with the C ABI's status and the library's message.
func TestErrors(t *testing.T) {
	_, err := NewLayer(LayerOptions{Type: GRU, Units: 0, InputSize: 3})
	wantError(t, "units 0", err, ErrInvalidArgument, "units")
	_, err = NewLayer(LayerOptions{Type: GRU, Units: 4, InputSize: 3, Activation: "no_such_activation"})
	wantError(t, "unknown activation", err, ErrInvalidArgument, "no_such_activation")
	_, err = NewLayer(LayerOptions{Type: CuDNNGRU, Units: 4, InputSize: 3, Dialect: Keras3})
	wantError(t, "CuDNN in Keras 3", err, ErrUnsupported)
	_, err = NewLayer(LayerOptions{Type: LayerType(42), Units: 4, InputSize: 3})
	wantError(t, "layer type 42", err, ErrInvalidArgument)
	_, err = NewLayer(LayerOptions{Type: GRU, Units: 1 << 40, InputSize: 3})
	wantError(t, "units beyond int32", err, ErrInvalidArgument)
	_, err = LayerFromJSON(`{"class_name": "GRU", "config": {`, 3, 0, "")
	wantError(t, "malformed JSON", err, ErrParse)
	_, err = LayerFromJSON(`{"class_name": "Dense", "config": {"units": 3}}`, 3, 0, "")
	wantError(t, "not a recurrent layer", err, ErrUnsupported, "Dense")
	_, err = OpenModel("/nonexistent/model.keras")
	wantError(t, "missing model file", err, ErrIO, "/nonexistent/model.keras")

	l := mustLayer(t, gruOptions(4, 3))
	defer l.Close()
	out := make([]float32, 2*5*4)
	err = l.Forward(make([]float32, 7), 2, 5, out, nil)
	wantError(t, "short input", err, ErrShape, "7")
	err = l.Forward(make([]float32, 2*5*3), 2, 5, out[:3], nil)
	wantError(t, "short output", err, ErrShape)
	err = l.Forward(make([]float32, 2*5*3), 2, 5, out, &ForwardOptions{Mask: make([]byte, 3)})
	wantError(t, "short mask", err, ErrShape)
	err = l.Forward(make([]float32, 2*5*3), 2, 5, out, &ForwardOptions{InitialState: make([]float32, 3)})
	wantError(t, "short initial state", err, ErrShape)
	err = l.Forward(make([]float32, 2*5*3), 2, 5, out, &ForwardOptions{FinalState: make([]float32, 3)})
	wantError(t, "short final state", err, ErrShape)
	err = l.Forward(make([]float32, 2*5*3), -2, 5, out, nil)
	wantError(t, "negative batch", err, ErrInvalidArgument)
	_, err = l.OutputLength(0, 5)
	wantError(t, "batch 0", err, ErrInvalidArgument)
	err = l.ResetStates()
	wantError(t, "reset_states on a non-stateful layer", err, ErrState, "stateful")
	err = l.SetStates(make([]float32, 4))
	wantError(t, "set_states on a non-stateful layer", err, ErrState)
	err = l.GetStates(make([]float32, 4))
	wantError(t, "get_states on a non-stateful layer", err, ErrState)
	err = l.CellCall(make([]float32, 3), 1, make([]float32, 4), make([]float32, 4), nil, false)
	wantError(t, "cell call on a sequence layer", err, ErrState)
	_, _, err = l.DropoutMask(1, true)
	wantError(t, "dropout mask of a sequence layer", err, ErrState)
	before, _ := l.Weights()
	err = l.SetWeights(make([]float32, 5))
	wantError(t, "short weights", err, ErrShape)
	after, _ := l.Weights()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Error("a failed SetWeights changed the weights")
	}
	err = l.SetWeight(0, make([]float32, 5))
	wantError(t, "short kernel", err, ErrShape)
	_, err = l.WeightShape(9)
	wantError(t, "weight index 9", err, ErrInvalidArgument)
	_, err = l.WeightName(-1)
	wantError(t, "weight index -1", err, ErrInvalidArgument)
	err = l.GetWeight(0, make([]float32, 1))
	wantError(t, "GetWeight into a short slice", err, ErrShape)

	s, err := NewState(l, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = l.ForwardState(s, make([]float32, 2*3), 1, nil, make([]float32, 3))
	wantError(t, "ForwardState with a short output", err, ErrShape)
	err = s.Set(make([]float32, 3))
	wantError(t, "State.Set with a short slice", err, ErrShape)
	err = s.Get(make([]float32, 3))
	wantError(t, "State.Get into a short slice", err, ErrShape)
	_, err = NewState(l, 0)
	wantError(t, "state batch 0", err, ErrInvalidArgument)

	cudnn, err := NewLayer(LayerOptions{Type: CuDNNLSTM, Units: 4, InputSize: 3, Dialect: Keras2})
	if err != nil {
		t.Fatal(err)
	}
	defer cudnn.Close()
	_, err = cudnn.Call(make([]float32, 2*3), 1, 2, &ForwardOptions{Mask: []byte{1, 1}})
	wantError(t, "mask on a CuDNN layer", err, ErrUnsupported)

	m, err := OpenModel(filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Layer("no_such_layer")
	wantError(t, "unknown model layer", err, ErrInvalidArgument, "no_such_layer")
	_, err = m.LayerAt(1000)
	wantError(t, "model layer index 1000", err, ErrInvalidArgument)
	_, err = m.Predict([]float32{1, 2, 1e6}, 1, 3, nil)
	wantError(t, "token id out of range", err, ErrInvalidArgument)
	err = m.Run([]float32{1, 2, 3}, 1, 3, nil, make([]float32, 1))
	wantError(t, "short model output", err, ErrShape)
}

// The message belongs to the goroutine's own failure even when many goroutines fail at once on
// different OS threads (it is read inside the same cgo call).
func TestErrorMessagesPerGoroutine(t *testing.T) {
	l := mustLayer(t, gruOptions(4, 3))
	defer l.Close()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			out := make([]float32, 4*1*4)
			for i := 0; i < 200; i++ {
				n := 1 + g // a wrong length that names this goroutine
				err := l.ForwardState(nil, make([]float32, n), 1, nil, out)
				_ = err
				s, _ := NewState(l, 1)
				err = l.ForwardState(s, make([]float32, n+100), 1, nil, out)
				s.Close()
				var e *Error
				if !errors.As(err, &e) || !strings.Contains(e.Msg, fmt.Sprint(n+100)) {
					errs <- fmt.Sprintf("goroutine %d got %v", g, err)
					return
				}
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	l := mustLayer(t, gruOptions(4, 3))
	s, err := NewState(l, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenModel(filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras2.h5"))
	if err != nil {
		t.Fatal(err)
	}
	ml, err := m.Layer("gru")
	if err != nil {
		ml = nil
	}
	// A state outlives its layer; a layer outlives its model.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := m.Close(); err != nil || m.Close() != nil {
		t.Fatal("Model.Close twice failed")
	}
	if v, err := s.Values(); err != nil || len(v) != 4 {
		t.Fatalf("a state after its layer closed: %v", err)
	}
	if ml != nil {
		if _, err := ml.Call(make([]float32, 3), 1, 1, nil); err != nil && !strings.Contains(err.Error(), "input") {
			t.Fatalf("a model layer after its model closed: %v", err)
		}
		ml.Close()
	}

	closed := func(what string, err error) { t.Helper(); wantError(t, what, err, ErrState, "closed") }
	out := make([]float32, 4)
	closed("Info", func() error { _, err := l.Info(); return err }())
	closed("OutputLength", func() error { _, err := l.OutputLength(1, 1); return err }())
	closed("Forward", l.Forward(make([]float32, 3), 1, 1, out, nil))
	closed("Call", func() error { _, err := l.Call(make([]float32, 3), 1, 1, nil); return err }())
	closed("ForwardState", l.ForwardState(s, make([]float32, 3), 1, nil, out))
	closed("ResetStates", l.ResetStates())
	closed("SetStates", l.SetStates(out))
	closed("GetStates", l.GetStates(out))
	closed("States", func() error { _, err := l.States(); return err }())
	closed("InitialState", func() error { _, err := l.InitialState(1); return err }())
	closed("CellCall", l.CellCall(out, 1, out, out, nil, false))
	closed("DropoutMask", func() error { _, _, err := l.DropoutMask(1, false); return err }())
	closed("RecurrentDropoutMask", func() error { _, _, err := l.RecurrentDropoutMask(1, false); return err }())
	closed("ResetDropoutMask", l.ResetDropoutMask())
	closed("ResetRecurrentDropoutMask", l.ResetRecurrentDropoutMask())
	closed("NumWeights", func() error { _, err := l.NumWeights(); return err }())
	closed("WeightShape", func() error { _, err := l.WeightShape(0); return err }())
	closed("WeightName", func() error { _, err := l.WeightName(0); return err }())
	closed("Weight", func() error { _, err := l.Weight(0); return err }())
	closed("GetWeight", l.GetWeight(0, out))
	closed("SetWeight", l.SetWeight(0, out))
	closed("WeightsLength", func() error { _, err := l.WeightsLength(); return err }())
	closed("Weights", func() error { _, err := l.Weights(); return err }())
	closed("GetWeights", l.GetWeights(out))
	closed("SetWeights", l.SetWeights(out))
	closed("Losses", func() error { _, err := l.Losses(); return err }())
	closed("ApplyConstraints", l.ApplyConstraints())
	closed("NewState on a closed layer", func() error { _, err := NewState(l, 1); return err }())

	closed("Model.Info", func() error { _, err := m.Info(); return err }())
	closed("Model.LayerAt", func() error { _, err := m.LayerAt(0); return err }())
	closed("Model.Layer", func() error { _, err := m.Layer("gru"); return err }())
	closed("Model.OutputLength", func() error { _, err := m.OutputLength(1, 1); return err }())
	closed("Model.Run", m.Run(out, 1, 1, nil, out))
	closed("Model.Predict", func() error { _, err := m.Predict(out, 1, 1, nil); return err }())

	l2 := mustLayer(t, gruOptions(4, 3))
	defer l2.Close()
	if err := s.Close(); err != nil || s.Close() != nil {
		t.Fatal("State.Close twice failed")
	}
	closed("ForwardState with a closed state", l2.ForwardState(s, make([]float32, 3), 1, nil, out))
	closed("State.Get", s.Get(out))
	closed("State.Set", s.Set(out))
	closed("State.Reset", s.Reset())
	closed("State.Values", func() error { _, err := s.Values(); return err }())
	closed("State.Shape", func() error { _, _, _, err := s.Shape(); return err }())

	// nil objects behave like closed ones.
	var nl *Layer
	var ns *State
	var nm *Model
	closed("nil layer", nl.Forward(out, 1, 1, out, nil))
	closed("nil state", l2.ForwardState(ns, make([]float32, 3), 1, nil, out))
	closed("nil model", func() error { _, err := nm.Info(); return err }())
	if nl.Close() != nil || ns.Close() != nil || nm.Close() != nil {
		t.Fatal("Close on nil failed")
	}
}

// Objects that are never closed are freed by their finalizers (the safety net) without crashes.
func TestFinalizers(t *testing.T) {
	for i := 0; i < 200; i++ {
		l := mustLayer(t, gruOptions(8, 8))
		s, _ := NewState(l, 2)
		_ = l.ForwardState(s, make([]float32, 16), 1, nil, make([]float32, 16))
	}
	runtime.GC()
	runtime.GC()
}

// Many goroutines stepping their own states on one shared layer give exactly the serial results.
func TestConcurrentStatesOnOneLayer(t *testing.T) {
	for _, typ := range []LayerType{GRU, LSTM} {
		const G, T, U, F = 48, 60, 32, 16
		l := mustLayer(t, LayerOptions{Type: typ, Units: U, InputSize: F, Seed: Int64(9)})
		input := func(g, ts int) []float32 { return ramp(F, 0.37, float64(g)*1.3+float64(ts)*0.11) }
		serial := make([][]float32, G)
		for g := 0; g < G; g++ {
			s, err := NewState(l, 1)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float32, U)
			for ts := 0; ts < T; ts++ {
				if err := l.ForwardState(s, input(g, ts), 1, nil, out); err != nil {
					t.Fatal(err)
				}
				serial[g] = append(serial[g], out...)
			}
			s.Close()
		}
		parallel := make([][]float32, G)
		var wg sync.WaitGroup
		errs := make(chan error, G)
		start := make(chan struct{})
		for g := 0; g < G; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				s, err := NewState(l, 1)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				out := make([]float32, U)
				<-start
				for ts := 0; ts < T; ts++ {
					if err := l.ForwardState(s, input(g, ts), 1, nil, out); err != nil {
						errs <- err
						return
					}
					parallel[g] = append(parallel[g], out...)
					if ts%7 == 0 {
						runtime.Gosched()
					}
				}
			}(g)
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for g := 0; g < G; g++ {
			for i := range serial[g] {
				if serial[g][i] != parallel[g][i] {
					t.Fatalf("%v goroutine %d value %d: %g concurrently, %g serially", typ, g, i, parallel[g][i], serial[g][i])
				}
			}
		}
		l.Close()
	}
}

// Closing a layer while other goroutines use it is safe: they either finish their call or get
// the "closed" error, never a crash.
func TestConcurrentClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		l := mustLayer(t, gruOptions(16, 16))
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := NewState(l, 1)
				if err != nil {
					return // closed already
				}
				defer s.Close()
				out := make([]float32, 16)
				for i := 0; i < 100; i++ {
					if err := l.ForwardState(s, make([]float32, 16), 1, nil, out); err != nil {
						var e *Error
						if !errors.As(err, &e) || e.Status != ErrState {
							t.Errorf("unexpected error %v", err)
						}
						return
					}
				}
			}()
		}
		runtime.Gosched()
		l.Close()
		wg.Wait()
	}
}

// The zero-copy streaming path allocates nothing per call.
func TestForwardStateDoesNotAllocate(t *testing.T) {
	if asanBuild {
		t.Skip("-asan instruments cgo calls with Go allocations of its own; the Release run counts them")
	}
	l := mustLayer(t, LayerOptions{Type: LSTM, Units: 64, InputSize: 64, Seed: Int64(1)})
	defer l.Close()
	s, _ := NewState(l, 1)
	defer s.Close()
	in, out := ramp(64, 0.1, 0), make([]float32, 64)
	mask := []byte{1}
	if n := testing.AllocsPerRun(1000, func() {
		if err := l.ForwardState(s, in, 1, mask, out); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ForwardState allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = l.Forward(in, 1, 1, out, nil) }); n != 0 {
		t.Errorf("Forward allocates %v times per call", n)
	}
}

func readMatrixT(t *testing.T, path string) (v []float32, rows, cols int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		cols = len(fields)
		for _, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			v = append(v, float32(x))
		}
		rows++
	}
	return v, rows, cols
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

const (
	gpuTolerance = 1e-5
	// A batched step rounds like a batch of all its rows, so it matches per-state steps to float
	// rounding.
	batchRounding = 1e-6
)

var badDevices = []string{"gpu", "cuda:-1", "cuda:x", "CUDA", "", "cuda:"}

func namesWhatIsMissing(msg string) bool {
	for _, part := range []string{"plugin", "driver", "GPU", "cuDNN"} {
		if strings.Contains(msg, part) {
			return true
		}
	}
	return false
}

func maxDiff32(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// sameOrClose: bitwise on the CPU, within gpuTolerance when a GPU ran.
func sameOrClose(t *testing.T, what string, got, want []float32, gpu bool) {
	t.Helper()
	d := maxDiff32(got, want)
	if (gpu && d > gpuTolerance) || (!gpu && d != 0) {
		t.Errorf("%s: differs by %g (GPU: %v)", what, d, gpu)
	}
}

// within: a batched step against per-state steps.
func within(t *testing.T, what string, got, want []float32, gpu bool) {
	t.Helper()
	tol := batchRounding
	if gpu {
		tol = gpuTolerance
	}
	if d := maxDiff32(got, want); d > tol {
		t.Errorf("%s: differs by %g (GPU: %v)", what, d, gpu)
	}
}

func TestDeviceChecks(t *testing.T) {
	n := DeviceCount()
	if n < 0 {
		t.Fatalf("DeviceCount() = %d", n)
	}
	for _, ok := range []string{"cpu", "auto"} {
		if err := CheckDevice(ok); err != nil {
			t.Errorf("CheckDevice(%q): %v", ok, err)
		}
	}
	for _, bad := range badDevices {
		wantError(t, "CheckDevice("+strconv.Quote(bad)+")", CheckDevice(bad), ErrInvalidArgument, `"cuda:N"`)
	}
	err := CheckDevice("cuda")
	if n > 0 {
		if err != nil {
			t.Errorf("CheckDevice(cuda) with %d GPU(s): %v", n, err)
		}
		return
	}
	wantError(t, "CheckDevice(cuda) without a GPU", err, ErrUnsupported, "cuda:0")
	if err != nil && !namesWhatIsMissing(err.Error()) {
		t.Errorf("the message does not say what is missing: %v", err)
	}
}

func TestLayerDevices(t *testing.T) {
	gpu := DeviceCount() > 0
	l := mustLayer(t, gruOptions(5, 3))
	defer l.Close()
	d, err := l.Device()
	if err != nil || d.Requested != "cpu" || d.Backend != "cpu" || d.Path != "cpu" || d.DeviceName != "" || d.Reason == "" {
		t.Fatalf("a new layer: %+v, %v", d, err)
	}
	const B, T = 2, 4
	x := ramp(B*T*3, 0.37, 0.1)
	mask := []byte{1, 1, 0, 1, 0, 1, 1, 1}
	cpu, err := l.Call(x, B, T, &ForwardOptions{Mask: mask})
	if err != nil {
		t.Fatal(err)
	}
	call := func() []float32 {
		y, err := l.Call(x, B, T, &ForwardOptions{Mask: mask})
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	if err := l.SetDevice("cpu"); err != nil {
		t.Fatal(err)
	}
	sameOrClose(t, "cpu", call(), cpu, false)
	if err := l.SetDevice("auto"); err != nil {
		t.Fatal(err)
	}
	d, _ = l.Device()
	if d.Requested != "auto" || (d.Backend == "cpu") == gpu {
		t.Errorf("auto: %+v (GPU: %v)", d, gpu)
	}
	if !gpu && !namesWhatIsMissing(d.Reason) {
		t.Errorf("auto on the CPU does not say why: %q", d.Reason)
	}
	sameOrClose(t, "auto", call(), cpu, gpu)
	if err := l.SetDevice("cpu"); err != nil {
		t.Fatal(err)
	}
	err = l.SetDevice("cuda")
	if gpu {
		if err != nil {
			t.Fatal(err)
		}
		d, _ = l.Device()
		if d.Backend != "cuda:0" || d.DeviceName == "" {
			t.Errorf("cuda: %+v", d)
		}
		// The GPU emulator keeps device memory on the host, so Go slices stand in for device
		// pointers (C memory in real use: recur keeps none of them after the call).
		if strings.HasPrefix(d.DeviceName, "recur GPU emulator") {
			y := make([]float32, len(cpu))
			err := l.ForwardDevice(0, uintptr(unsafe.Pointer(&x[0])), B, T, mask, 0, 0, uintptr(unsafe.Pointer(&y[0])), 0)
			runtime.KeepAlive(x)
			runtime.KeepAlive(y)
			if err != nil {
				t.Fatal(err)
			}
			within(t, "ForwardDevice", y, cpu, true)
		}
	} else {
		wantError(t, "SetDevice(cuda) without a GPU", err, ErrUnsupported, "cuda:0")
		if d, _ = l.Device(); d.Backend != "cpu" {
			t.Errorf("a failed move changed the backend: %+v", d)
		}
		wantError(t, "ForwardDevice on the CPU", l.ForwardDevice(0, 0, 1, 1, nil, 0, 0, 0, 0), ErrState,
			"recur_layer_set_device")
	}
	sameOrClose(t, "after cuda", call(), cpu, gpu)
	for _, bad := range badDevices {
		wantError(t, "SetDevice("+strconv.Quote(bad)+")", l.SetDevice(bad), ErrInvalidArgument, "recur_layer_set_device")
	}
	l.Close()
	if _, err := l.Device(); err == nil {
		t.Error("Device after Close")
	}
	wantError(t, "SetDevice after Close", l.SetDevice("cpu"), ErrState, "closed")
}

func TestForwardStatesEqualsForwardState(t *testing.T) {
	gpu := DeviceCount() > 0
	for _, typ := range []LayerType{GRU, LSTM} {
		opts := gruOptions(5, 3)
		opts.Type = typ
		l := mustLayer(t, opts)
		if gpu {
			if err := l.SetDevice("cuda"); err != nil {
				t.Fatal(err)
			}
		}
		batches := []int{1, 3, 2}
		batched, single, rows := statePairs(t, l, batches)
		for step := 0; step < 3; step++ {
			x := ramp(rows*3, 0.37, float64(step))
			mask := make([]byte, rows)
			for r := range mask {
				if (r+step)%4 != 2 {
					mask[r] = 1
				}
			}
			got, want := make([]float32, rows*5), make([]float32, rows*5)
			if err := l.ForwardStates(batched, x, mask, got); err != nil {
				t.Fatal(err)
			}
			row := 0
			for i, b := range batches {
				if err := l.ForwardState(single[i], x[row*3:(row+b)*3], 1, mask[row:row+b], want[row*5:(row+b)*5]); err != nil {
					t.Fatal(err)
				}
				row += b
			}
			within(t, fmt.Sprintf("%v step %d", typ, step), got, want, gpu)
		}
		wantPath := "cpu"
		if gpu {
			wantPath = "device-resident"
		}
		for i := range batches {
			a, _ := batched[i].Values()
			b, _ := single[i].Values()
			within(t, fmt.Sprintf("%v final state %d", typ, i), a, b, gpu)
			d, err := batched[i].Device()
			if err != nil || d.Path != wantPath {
				t.Errorf("state %d: %+v, %v", i, d, err)
			}
		}
		x, y := make([]float32, rows*3), make([]float32, rows*5)
		wantError(t, "a state twice", l.ForwardStates([]*State{batched[0], batched[1], batched[0]}, x, nil, y),
			ErrInvalidArgument, "states[0] and states[2] are the same state")
		wantError(t, "short output", l.ForwardStates(batched, x, nil, y[1:]), ErrShape)
		wantError(t, "no states", l.ForwardStates(nil, x, nil, y), ErrInvalidArgument, "empty")
		wantError(t, "a nil state", l.ForwardStates([]*State{batched[0], nil}, x, nil, y), ErrInvalidArgument,
			"states[1] is nil")
		single[2].Close()
		wantError(t, "a closed state", l.ForwardStates([]*State{batched[0], single[2]}, x, nil, y), ErrState,
			"states[1] is closed")
		for i := range batches {
			batched[i].Close()
			single[i].Close()
		}
		l.Close()
	}
}

// ForwardStatesDevice: on the CPU it says to move the layer first; on a GPU a zero address or a
// state twice is refused; on the GPU emulator (device memory on the host, so Go slices stand in
// for device pointers) the numbers are exactly ForwardStates's. Run again by go_device_gpu_emulator.
func TestForwardStatesDeviceMatchesForwardStates(t *testing.T) {
	gpu := DeviceCount() > 0
	for _, typ := range []LayerType{GRU, LSTM} {
		opts := gruOptions(5, 3)
		opts.Type = typ
		l := mustLayer(t, opts)
		s, err := NewState(l, 1)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "ForwardStatesDevice on the CPU", l.ForwardStatesDevice(0, []*State{s}, 0, nil, 0), ErrState,
			"recur_layer_set_device")
		wantError(t, "no states", l.ForwardStatesDevice(0, nil, 0, nil, 0), ErrInvalidArgument, "empty")
		s.Close()
		if !gpu {
			t.Logf("%v: numbers not checked: no GPU (DeviceCount is 0; go_device_gpu_emulator runs them)", typ)
			l.Close()
			continue
		}
		if err := l.SetDevice("cuda"); err != nil {
			t.Fatal(err)
		}
		batches := []int{1, 3, 2}
		host, dev, rows := statePairs(t, l, batches)
		wantError(t, "a zero dInput", l.ForwardStatesDevice(0, dev, 0, nil, 8), ErrInvalidArgument, "d_input")
		wantError(t, "a state twice", l.ForwardStatesDevice(0, []*State{dev[0], dev[1], dev[0]}, 8, nil, 8),
			ErrInvalidArgument, "states[0] and states[2] are the same state")
		d, err := l.Device()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(d.DeviceName, "recur GPU emulator") {
			t.Logf("%v: numbers not checked: device memory needs a CUDA library in the test; the GPU is %q",
				typ, d.DeviceName)
		} else {
			for step := 0; step < 3; step++ {
				x := ramp(rows*3, 0.37, float64(step))
				mask := make([]byte, rows)
				for r := range mask {
					if (r+step)%3 != 1 {
						mask[r] = 1
					}
				}
				got, want := make([]float32, rows*5), make([]float32, rows*5)
				if err := l.ForwardStates(host, x, mask, want); err != nil {
					t.Fatal(err)
				}
				err := l.ForwardStatesDevice(0, dev, uintptr(unsafe.Pointer(&x[0])), mask,
					uintptr(unsafe.Pointer(&got[0])))
				runtime.KeepAlive(x)
				runtime.KeepAlive(got)
				if err != nil {
					t.Fatal(err)
				}
				for k := range got {
					if got[k] != want[k] {
						t.Fatalf("%v step %d: output %d is %v, ForwardStates gives %v", typ, step, k, got[k], want[k])
					}
				}
			}
			for i := range batches {
				a, _ := host[i].Values()
				b, _ := dev[i].Values()
				for k := range a {
					if a[k] != b[k] {
						t.Fatalf("%v state %d differs at %d: %v vs %v", typ, i, k, b[k], a[k])
					}
				}
			}
		}
		for i := range batches {
			host[i].Close()
			dev[i].Close()
		}
		l.Close()
	}
}

// Overlapping state sets in opposite orders from many goroutines: the binding locks states in
// one order, so this neither deadlocks nor races (run with -race by go_test_race).
func TestConcurrentForwardStatesOverlapping(t *testing.T) {
	l := mustLayer(t, gruOptions(4, 3))
	defer l.Close()
	states := make([]*State, 4)
	for i := range states {
		s, err := NewState(l, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		states[i] = s
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			set := []*State{states[g%4], states[(g+1)%4], states[(g+2)%4]}
			if g%2 == 1 {
				set[0], set[2] = set[2], set[0]
			}
			x, y := ramp(3*3, 0.37, float64(g)), make([]float32, 3*4)
			for i := 0; i < 50; i++ {
				if err := l.ForwardStates(set, x, nil, y); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestModelDevices(t *testing.T) {
	gpu := DeviceCount() > 0
	m, err := OpenModel(filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := make([]float32, 2*10)
	for i := range ids {
		ids[i] = float32(i*7%19 + 1)
	}
	cpu, err := m.Predict(ids, 2, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m.Device(); err != nil || d.Backend != "cpu" {
		t.Errorf("a new model: %+v, %v", d, err)
	}
	for _, dev := range []string{"cpu", "auto"} {
		if err := m.SetDevice(dev); err != nil {
			t.Fatal(err)
		}
		d, _ := m.Device()
		info, _ := m.Info()
		// Every layer of this model has a GPU kernel: each goes where the model goes.
		for i := 0; i < info.NumLayers; i++ {
			want := d.Backend
			if ld, err := m.LayerDevice(i); err != nil || ld.Backend != want {
				t.Errorf("%s: layer %d: %+v, %v (model: %+v)", dev, i, ld, err, d)
			}
		}
		out, err := m.Predict(ids, 2, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameOrClose(t, dev, out, cpu, gpu && dev == "auto")
	}
	_, err = m.LayerDevice(-2)
	wantError(t, "LayerDevice(-2)", err, ErrInvalidArgument, "layer_index")
	wantError(t, "SetDevice(gpu)", m.SetDevice("gpu"), ErrInvalidArgument, "recur_model_set_device")
	if !gpu {
		wantError(t, "SetDevice(cuda) without a GPU", m.SetDevice("cuda"), ErrUnsupported, "cuda:0")
	}
}

// ---------------------------------------------------------------------------------------------
// CPU threads and kernels

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestCPUKernels(t *testing.T) {
	k := CPUKernels()
	if k != "avx512" && k != "avx2" && k != "baseline" {
		t.Fatalf("CPUKernels() = %q", k)
	}
	if CPUKernels() != k {
		t.Error("CPUKernels changed between calls")
	}
	t.Logf("CPU kernels: %s", k)
}

func TestLayerNumThreads(t *testing.T) {
	l := mustLayer(t, gruOptions(5, 3))
	defer l.Close()
	if n, err := l.NumThreads(); err != nil || n != 1 {
		t.Fatalf("a new layer: NumThreads() = %d, %v; want 1", n, err)
	}
	for _, n := range []int{2, 0, 1024} { // 0: one per core, reported as set
		if err := l.SetNumThreads(n); err != nil {
			t.Fatalf("SetNumThreads(%d): %v", n, err)
		}
		if got, err := l.NumThreads(); err != nil || got != n {
			t.Errorf("after SetNumThreads(%d): NumThreads() = %d, %v", n, got, err)
		}
	}
	for _, bad := range []int{-1, 1025, math.MinInt32, 1 << 40} {
		wantError(t, "SetNumThreads("+strconv.Itoa(bad)+")", l.SetNumThreads(bad), ErrInvalidArgument, "num_threads")
	}
	l.Close()
	wantError(t, "SetNumThreads after Close", l.SetNumThreads(2), ErrState, "closed")
	_, err := l.NumThreads()
	wantError(t, "NumThreads after Close", err, ErrState, "closed")
}

func TestThreadsGiveBitwiseTheSameNumbers(t *testing.T) {
	// Big enough per timestep that a call is split between threads (small calls stay on one).
	const B, T, F, U = 16, 12, 64, 128
	x := ramp(B*T*F, 0.37, 0.5)
	mask := make([]byte, B*T)
	for i := range mask {
		if i%7 != 6 {
			mask[i] = 1
		}
	}
	for _, typ := range []LayerType{GRU, LSTM} {
		opts := gruOptions(U, F)
		opts.Type = typ
		opts.Seed = Int64(23)
		l := mustLayer(t, opts)
		forward := func() []float32 {
			y, err := l.Call(x, B, T, &ForwardOptions{Mask: mask})
			if err != nil {
				t.Fatal(err)
			}
			return y
		}
		stream := func() []float32 {
			s, err := NewState(l, B)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			y := make([]float32, B*T*U)
			if err := l.ForwardState(s, x, T, mask, y); err != nil {
				t.Fatal(err)
			}
			return y
		}
		one, streamedOne := forward(), stream()
		for _, n := range []int{2, 0} {
			if err := l.SetNumThreads(n); err != nil {
				t.Fatal(err)
			}
			if !sameBits(forward(), one) {
				t.Errorf("type %d: Forward with %d threads differs from 1 thread", typ, n)
			}
			if !sameBits(stream(), streamedOne) {
				t.Errorf("type %d: ForwardState with %d threads differs from 1 thread", typ, n)
			}
		}
		l.Close()
	}
}

func TestModelNumThreads(t *testing.T) {
	m, err := OpenModel(filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n, err := m.NumThreads(); err != nil || n != 1 {
		t.Fatalf("a new model: NumThreads() = %d, %v; want 1", n, err)
	}
	ids := make([]float32, 4*10)
	for i := range ids {
		ids[i] = float32(i*7%19 + 1)
	}
	one, err := m.Predict(ids, 4, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 0} {
		if err := m.SetNumThreads(n); err != nil {
			t.Fatalf("SetNumThreads(%d): %v", n, err)
		}
		if got, err := m.NumThreads(); err != nil || got != n {
			t.Errorf("after SetNumThreads(%d): NumThreads() = %d, %v", n, got, err)
		}
		out, err := m.Predict(ids, 4, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(out, one) {
			t.Errorf("Run with %d threads differs from 1 thread", n)
		}
	}
	// Layers taken after SetNumThreads get the count too.
	info, _ := m.Info()
	for i := 0; i < info.NumLayers; i++ {
		ml, err := m.LayerAt(i)
		if err != nil || !ml.Recurrent {
			continue
		}
		l, err := m.Layer(ml.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := l.NumThreads(); err != nil || n != 0 {
			t.Errorf("layer %s: NumThreads() = %d, %v; want the model's 0", ml.Name, n, err)
		}
		l.Close()
	}
	for _, bad := range []int{-1, 1025} {
		wantError(t, "model SetNumThreads("+strconv.Itoa(bad)+")", m.SetNumThreads(bad), ErrInvalidArgument, "num_threads")
	}
	m.Close()
	wantError(t, "model SetNumThreads after Close", m.SetNumThreads(1), ErrState, "closed")
	_, err = m.NumThreads()
	wantError(t, "model NumThreads after Close", err, ErrState, "closed")
}

func TestPrecision(t *testing.T) {
	l := mustLayer(t, gruOptions(5, 3))
	defer l.Close()
	if p, err := l.Precision(); err != nil || p != "float32" {
		t.Fatalf("a new layer: Precision() = %q, %v; want float32", p, err)
	}
	x := make([]float32, 2*4*3)
	for i := range x {
		x[i] = float32(i%7)/7 - 0.4
	}
	run := func() []float32 {
		out := make([]float32, 2*4*5)
		if err := l.Forward(x, 2, 4, out, nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	f32 := run()
	for _, p := range []string{"bf16", "int8"} {
		if err := l.SetPrecision(p); err != nil {
			t.Fatalf("SetPrecision(%q): %v", p, err)
		}
		if got, _ := l.Precision(); got != p {
			t.Errorf("Precision() = %q after SetPrecision(%q)", got, p)
		}
		if d := maxDiff32(f32, run()); !(d > 0 && d < 0.05) {
			t.Errorf("%s: largest difference from float32 %g, want within (0, 0.05)", p, d)
		}
	}
	if err := l.SetPrecision("float32"); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff32(f32, run()); d != 0 {
		t.Errorf("float32 again differs by %g", d)
	}
	wantError(t, "SetPrecision(fp16)", l.SetPrecision("fp16"), ErrInvalidArgument, `"bf16" or "int8"`)

	m, err := OpenModel(filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetPrecision("int8"); err != nil {
		t.Fatal(err)
	}
	if p, err := m.Precision(); err != nil || p != "int8" {
		t.Errorf("model Precision() = %q, %v; want int8", p, err)
	}
	wantError(t, "model SetPrecision(int4)", m.SetPrecision("int4"), ErrInvalidArgument, "unknown precision")
}

// statePairs makes two states of the layer for each batch (two lists alike) and their total rows.
func statePairs(t *testing.T, l *Layer, batches []int) (a, b []*State, rows int) {
	t.Helper()
	for _, n := range batches {
		s1, err1 := NewState(l, n)
		s2, err2 := NewState(l, n)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		a, b = append(a, s1), append(b, s2)
		rows += n
	}
	return a, b, rows
}
