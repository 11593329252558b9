// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"context"
	"math"
	"path/filepath"
	"testing"
)

// Model.StepStates gives the numbers of stepping each state alone (states of different batches,
// a sequence input with a mask and a static input given whole), and a call that fails leaves
// every state as it was.
func TestStepStatesMatchesStepsOneByOne(t *testing.T) {
	m := mustOpen(t, filepath.Join(sourceDir(t), "tests", "keras", "graphs", "keras3", "multi_io.keras"))
	defer m.Close()
	batches := []int64{2, 1, 3}
	var alone, together []*ModelState
	for _, b := range batches {
		alone = append(alone, must(NewModelState(m, int(b))))
		together = append(together, must(NewModelState(m, int(b))))
	}
	defer func() {
		for i := range alone {
			alone[i].Close()
			together[i].Close()
		}
	}()
	val := func(k int) float32 { return float32(math.Sin(float64(k)*0.37)) * 0.9 }
	seed := 0
	for call := 0; call < 4; call++ {
		steps := int64(1 + call%2)
		var seqAll, staticAll []float32
		var maskAll []byte
		want := map[string][]float32{}
		for s, b := range batches {
			seq := make([]float32, b*steps*4)
			static := make([]float32, b*5)
			mask := make([]byte, b*steps)
			for i := range seq {
				seq[i] = val(seed)
				seed++
			}
			for i := range static {
				static[i] = val(seed)
				seed++
			}
			for i := range mask {
				if (seed+i)%3 != 0 {
					mask[i] = 1
				}
			}
			seqT := NewFloat32Tensor("seq", seq, b, steps, 4)
			seqT.Mask = mask
			outs, err := alone[s].StepNamed(context.Background(), []Tensor{seqT, NewFloat32Tensor("static", static, b, 5)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				want[o.Name] = append(want[o.Name], o.Values...)
			}
			seqAll, staticAll, maskAll = append(seqAll, seq...), append(staticAll, static...), append(maskAll, mask...)
		}
		seqT := NewFloat32Tensor("seq", seqAll, 6, steps, 4)
		seqT.Mask = maskAll
		in := []Tensor{seqT, NewFloat32Tensor("static", staticAll, 6, 5)}
		if call == 2 {
			_, err := m.StepStates(context.Background(), together, []Tensor{seqT, NewFloat32Tensor("static", staticAll[:25], 5, 5)}, nil)
			wantError(t, "StepStates with 5 rows", err, ErrShape, "the rows of the 3 states")
			_, err = m.StepStates(context.Background(), []*ModelState{together[0], together[0]}, in, nil)
			wantError(t, "StepStates twice", err, ErrInvalidArgument, "are the same state")
		}
		got, err := m.StepStates(context.Background(), together, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range got {
			w := want[o.Name]
			if len(w) != len(o.Values) {
				t.Fatalf("%s: %d values, want %d", o.Name, len(o.Values), len(w))
			}
			for i := range w {
				if math.Abs(float64(w[i]-o.Values[i])) > 1e-6 {
					t.Fatalf("call %d %s[%d]: %v, want %v", call, o.Name, i, o.Values[i], w[i])
				}
			}
		}
	}
}
