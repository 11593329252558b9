// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Native leak checks with the live-handle counts (LiveHandles): everything a test makes and
// closes, on success and on every error path, and everything it forgets once the finalizers have
// run, leaves the counts where they were; TestMain checks that they read zero after the whole run.
// None of these tests calls t.Parallel, so no other test's objects move the counts they compare.

// TestMain runs the tests, then the garbage collector and the finalizers until every count reads
// zero (or 30 s have passed): a test run that leaves a native handle behind fails. Built with
// -asan, it then has LeakSanitizer look for native memory nobody points at.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := awaitLiveHandles(HandleCounts{}, 30*time.Second); left.Total() != 0 {
			fmt.Println("LEAK: native handles alive after the tests:", left)
			code = 1
		} else {
			fmt.Println("no native handles alive after the tests")
		}
	}
	if code == 0 && asanBuild {
		// Native memory that only a Go object points at (LeakSanitizer cannot see Go's heap) is
		// freed by finalizers: let them run first.
		for i := 0; i < 5; i++ {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
	}
	if code == 0 {
		if ran, leaked := nativeLeakCheck(); leaked {
			fmt.Println("LEAK: LeakSanitizer found native memory leaked (above)")
			code = 1
		} else if ran {
			fmt.Println("LeakSanitizer: no native memory leaked")
		}
	}
	os.Exit(code)
}

// awaitLiveHandles collects garbage and lets the finalizers run until the counts read want or
// timeout has passed; it returns the last counts read.
func awaitLiveHandles(want HandleCounts, timeout time.Duration) HandleCounts {
	end := time.Now().Add(timeout)
	now := LiveHandles()
	for now != want && time.Now().Before(end) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		now = LiveHandles()
	}
	return now
}

// settledLiveHandles is the counts once the garbage of earlier tests is collected (they stop falling).
func settledLiveHandles() HandleCounts {
	last := LiveHandles()
	for same, i := 0, 0; same < 3 && i < 200; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		now := LiveHandles()
		if now == last {
			same++
		} else {
			same = 0
		}
		last = now
	}
	return last
}

const leakGRU = `{"class_name": "GRU", "config": {"units": 3, "return_sequences": true}}`

func sentimentModel(t testing.TB) string {
	return filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras2.keras")
}

// mustFail checks that err is an *Error of the given status.
func mustFail(t *testing.T, err error, status int, what string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: want an *Error of status %d, got %v", what, status, err)
		return
	}
	if e.Status != status {
		t.Errorf("%s: status %d, want %d (%v)", what, e.Status, status, err)
	}
}

func checkBack(t *testing.T, before HandleCounts, what string) {
	t.Helper()
	if now := LiveHandles(); now != before {
		t.Errorf("%s: %v, was %v", what, now, before)
	}
}

// must is v, or a panic (which fails the run) for a call that cannot fail here.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLiveHandlesCounts(t *testing.T) {
	path := sentimentModel(t)
	before := settledLiveHandles()
	l := must(LayerFromJSON(leakGRU, 2, int(DialectAuto), ""))
	if got := LiveHandles().Layers; got != before.Layers+1 {
		t.Errorf("layers %d after a layer, want %d", got, before.Layers+1)
	}
	s := must(NewState(l, 2))
	if now := LiveHandles(); now.States != before.States+1 || now.Total() != before.Total()+2 {
		t.Errorf("%v after a layer and a state, was %v", now, before)
	}
	s.Close()
	l.Close()
	m := must(OpenModel(path))
	ms := must(NewModelState(m, 1))
	gru := must(m.Layer("gru"))
	if now := LiveHandles(); now.Models != before.Models+1 || now.ModelStates != before.ModelStates+1 ||
		now.Layers != before.Layers+1 {
		t.Errorf("%v after a model, a model state and a layer of the model, was %v", now, before)
	}
	gru.Close()
	ms.Close()
	m.Close()
	checkBack(t, before, "after closing everything")
	h := HandleCounts{Layers: 1, States: 2, Models: 3, ModelStates: 4, RunOptions: 5}
	if h.Total() != 15 || h.String() != "layers 1, states 2, models 3, model states 4, run options 5" {
		t.Errorf("%v: total %d", h, h.Total())
	}
}

// Every kind of object, made, used once and closed.
func TestLeaksExplicitClose(t *testing.T) {
	path := sentimentModel(t)
	before := settledLiveHandles()
	func() {
		l := must(NewLayer(LayerOptions{Type: LSTM, Units: 4, InputSize: 3}))
		defer l.Close()
		s := must(NewState(l, 2))
		defer s.Close()
		must(l.Call(make([]float32, 2*5*3), 2, 5, nil))
		if err := l.ForwardState(s, make([]float32, 2*3), 1, nil, make([]float32, 2*4)); err != nil {
			t.Fatal(err)
		}
		if err := l.ForwardStates([]*State{s}, make([]float32, 2*3), nil, make([]float32, 2*4)); err != nil {
			t.Fatal(err)
		}
		if err := s.Reset(); err != nil {
			t.Fatal(err)
		}
		cell := must(NewLayer(LayerOptions{Type: GRUCell, Units: 3, InputSize: 2}))
		defer cell.Close()
		if err := cell.CellCall(make([]float32, 2*2), 2, make([]float32, 2*3), make([]float32, 2*3), nil, false); err != nil {
			t.Fatal(err)
		}
	}()
	func() {
		data := must(os.ReadFile(path))
		file := must(OpenModel(path))
		defer file.Close()
		fromBytes := must(OpenModelBytesNamed("sentiment.keras", data))
		defer fromBytes.Close()
		fromReader := must(OpenModelReader(bytes.NewReader(data)))
		defer fromReader.Close()
		f := must(os.Open(path))
		defer f.Close()
		fromFile := must(OpenModelReader(f))
		defer fromFile.Close()
		for _, m := range []*Model{file, fromBytes, fromReader, fromFile} {
			must(m.Predict(make([]float32, 10), 1, 10, nil))
		}
		gru := must(file.Layer("gru"))
		defer gru.Close()
		ms := must(NewModelState(file, 1))
		defer ms.Close()
		in, out, err := ms.Lengths(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.StepFlat(make([]float32, in), 1, nil, make([]float32, out)); err != nil {
			t.Fatal(err)
		}
		if err := ms.Reset(); err != nil {
			t.Fatal(err)
		}
	}()
	checkBack(t, before, "after closing everything")
}

// Failed creates leave no handle; calls that fail leave nothing of what they made.
func TestLeaksErrorPaths(t *testing.T) {
	path := sentimentModel(t)
	bigru := cliModel(t, "keras3", "bigru.keras")
	before := settledLiveHandles()
	_, err := LayerFromJSON("{not json", 2, int(DialectAuto), "")
	mustFail(t, err, ErrParse, "bad JSON")
	_, err = NewLayer(LayerOptions{Type: GRU, Units: 0, InputSize: 4})
	mustFail(t, err, ErrInvalidArgument, "units 0")
	_, err = NewLayer(LayerOptions{Type: GRU, Units: 3, InputSize: 4, Activation: "no_such_activation"})
	mustFail(t, err, ErrInvalidArgument, "unknown activation")
	func() {
		l := must(LayerFromJSON(leakGRU, 2, int(DialectAuto), ""))
		defer l.Close()
		_, err := NewState(l, 0)
		mustFail(t, err, ErrInvalidArgument, "state of batch 0")
		_, err = l.Call(make([]float32, 5), 1, 2, nil)
		mustFail(t, err, ErrShape, "forward input length")
		s := must(NewState(l, 1))
		defer s.Close()
		mustFail(t, l.ForwardState(s, make([]float32, 3), 1, nil, make([]float32, 3)), ErrShape, "step input length")
		mustFail(t, s.Set(make([]float32, 2)), ErrShape, "state values length")
	}()
	_, err = OpenModel(filepath.Join(filepath.Dir(path), "no_such_model.keras"))
	mustFail(t, err, ErrIO, "missing file")
	_, err = OpenModelBytes([]byte{1, 2, 3, 4})
	mustFail(t, err, ErrIO, "junk bytes")
	_, err = OpenModelBytes(nil)
	mustFail(t, err, ErrInvalidArgument, "no bytes")
	data := must(os.ReadFile(path))
	if _, err = OpenModelBytes(data[:len(data)/2]); err == nil {
		t.Error("a cut file opened")
	}
	func() {
		m := must(OpenModelBytes(data))
		defer m.Close()
		_, err := m.Predict(make([]float32, 3), 1, 10, nil)
		mustFail(t, err, ErrShape, "model input length")
		_, err = m.Layer("no_such_layer")
		mustFail(t, err, ErrInvalidArgument, "unknown layer")
		_, err = NewModelState(m, 0)
		mustFail(t, err, ErrInvalidArgument, "model state of batch 0")
		ms := must(NewModelState(m, 1))
		defer ms.Close()
		in, out, err := ms.Lengths(1)
		if err != nil {
			t.Fatal(err)
		}
		mustFail(t, ms.StepFlat(make([]float32, in+1), 1, nil, make([]float32, out)), ErrShape, "step input length")
	}()
	func() {
		bi := must(OpenModel(bigru))
		defer bi.Close()
		_, err := NewModelState(bi, 1)
		mustFail(t, err, ErrUnsupported, "a model that does not stream")
	}()
	func() {
		defer lowerLimit(t, LimitUnits, 2)()
		_, err := LayerFromJSON(leakGRU, 2, int(DialectAuto), "")
		mustFail(t, err, ErrLimit, "layer over the units limit")
		_, err = OpenModelBytes(data)
		mustFail(t, err, ErrLimit, "model over the units limit")
	}()
	checkBack(t, before, "after the failures")
}

// Objects never closed: their finalizers free them once they are unreachable.
func TestLeaksFinalizers(t *testing.T) {
	path := sentimentModel(t)
	data := must(os.ReadFile(path))
	before := settledLiveHandles()
	func() {
		for i := 0; i < 20; i++ {
			l := must(LayerFromJSON(leakGRU, 2, int(DialectAuto), ""))
			s := must(NewState(l, 2))
			if err := l.ForwardState(s, make([]float32, 4), 1, nil, make([]float32, 6)); err != nil {
				t.Fatal(err)
			}
			must(NewLayer(LayerOptions{Type: LSTMCell, Units: 2, InputSize: 2}))
			m := must(OpenModelBytes(data))
			must(NewModelState(m, 1))
			must(m.Layer("lstm"))
		}
		must(OpenModel(path))
		if LiveHandles().Total() <= before.Total() {
			t.Error("the objects count until they are collected")
		}
	}()
	if left := awaitLiveHandles(before, 30*time.Second); left != before {
		t.Errorf("after the collector and the finalizers: %v, was %v", left, before)
	}
}
