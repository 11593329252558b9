// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"fmt"
	"os"
	"testing"
	"time"

	"recur.dev/recur/internal/recurswig"
)

// One streaming step (batch 1, T=1, input size = units) through the binding, against the same
// step through the C ABI in a loop written in C (recur_binding_c_step_ns), in the same process.

type stepRig struct {
	layer   *Layer
	state   *State
	in, out []float32
}

func newStepRig(tb testing.TB, typ LayerType, units int) *stepRig {
	l := mustLayer(tb, LayerOptions{Type: typ, Units: units, InputSize: units, Seed: Int64(1)})
	s, err := NewState(l, 1)
	if err != nil {
		tb.Fatal(err)
	}
	return &stepRig{layer: l, state: s, in: ramp(units, 0.01, 0), out: make([]float32, units)}
}

func (r *stepRig) close() { r.state.Close(); r.layer.Close() }

// goNs times n binding calls.
func (r *stepRig) goNs(n int) float64 {
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := r.layer.ForwardState(r.state, r.in, 1, nil, r.out); err != nil {
			panic(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// rawNs times n calls of the generated SWIG function alone (no locks, no checks of ours).
func (r *stepRig) rawNs(n int) float64 {
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := r.layer.native.h.Forward_state(r.state.native.h, r.in, len(r.in), 1, nil, 0, r.out, len(r.out)); err != nil {
			panic(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func (r *stepRig) cNs(n int) float64 {
	return recurswig.Recur_binding_c_step_ns(r.layer.native.h, r.state.native.h, r.in, len(r.in), r.out, len(r.out), n)
}

func minOf(f func(int) float64, n, reps int) float64 {
	best := f(n)
	for i := 1; i < reps; i++ {
		if v := f(n); v < best {
			best = v
		}
	}
	return best
}

// TestStepOverhead prints ns per step through Go and through C, and the difference. It never
// asserts timings. ctest go_bench runs it with RECUR_GO_BENCH=1 (more iterations).
func TestStepOverhead(t *testing.T) {
	if os.Getenv("RECUR_GO_BENCH") != "1" {
		t.Skip("set RECUR_GO_BENCH=1 (ctest go_bench does)")
	}
	const reps = 5
	fmt.Printf("%-5s %6s %14s %14s %14s %14s %8s\n", "layer", "units", "C ns/step", "Go ns/step", "raw SWIG ns",
		"overhead ns", "allocs")
	for _, typ := range []LayerType{GRU, LSTM} {
		for _, units := range []int{4, 64, 256} { // 4: almost no work, the fixed per-call cost
			r := newStepRig(t, typ, units)
			// About the same time per measurement (tens of ms): enough for a minimum of five,
			// short enough for the test suite.
			iters := 20000 * 64 * 64 / (units * units)
			if iters < 1000 {
				iters = 1000
			}
			if iters > 200000 {
				iters = 200000
			}
			r.goNs(iters / 10) // warm up
			r.cNs(iters / 10)
			// Interleave the measurements so that frequency changes hit both alike.
			c, g, raw := 1e18, 1e18, 1e18
			for i := 0; i < reps; i++ {
				c = minF(c, r.cNs(iters))
				g = minF(g, r.goNs(iters))
				raw = minF(raw, r.rawNs(iters))
			}
			allocs := testing.AllocsPerRun(200, func() { _ = r.layer.ForwardState(r.state, r.in, 1, nil, r.out) })
			name := map[LayerType]string{GRU: "GRU", LSTM: "LSTM"}[typ]
			fmt.Printf("%-5s %6d %14.1f %14.1f %14.1f %14.1f %8.0f\n", name, units, c, g, raw, g-c, allocs)
			r.close()
		}
	}
}

func minF(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

func benchmarkStep(b *testing.B, typ LayerType, units int) {
	r := newStepRig(b, typ, units)
	defer r.close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.layer.ForwardState(r.state, r.in, 1, nil, r.out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(r.cNs(20000), "C-ns/op")
}

func BenchmarkStepGRU64(b *testing.B)   { benchmarkStep(b, GRU, 64) }
func BenchmarkStepGRU256(b *testing.B)  { benchmarkStep(b, GRU, 256) }
func BenchmarkStepLSTM64(b *testing.B)  { benchmarkStep(b, LSTM, 64) }
func BenchmarkStepLSTM256(b *testing.B) { benchmarkStep(b, LSTM, 256) }
