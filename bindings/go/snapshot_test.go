// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
)

func snapshotStep(t *testing.T, s *ModelState, step int) []float32 {
	t.Helper()
	in, out, err := s.Lengths(1)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, in)
	for i := range x {
		x[i] = float32(math.Sin(float64(i*13+step*5) * 0.37))
	}
	y := make([]float32, out)
	if err := s.StepFlat(x, 1, nil, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// A stream saved mid-sequence goes on in a new state with the same bits; bad bytes, another batch
// and another model's bytes are refused with the state unchanged.
func TestModelStateSaveLoad(t *testing.T) {
	graphs := filepath.Join(sourceDir(t), "tests", "keras", "graphs", "keras3")
	m := mustOpen(t, filepath.Join(graphs, "nested_sequential.keras"))
	defer m.Close()
	whole, first, resumed := must(NewModelState(m, 3)), must(NewModelState(m, 3)), must(NewModelState(m, 3))
	defer whole.Close()
	defer first.Close()
	defer resumed.Close()
	var want [][]float32
	for i := 0; i < 6; i++ {
		want = append(want, snapshotStep(t, whole, i))
	}
	for i := 0; i < 3; i++ {
		snapshotStep(t, first, i)
	}
	data := must(first.Save())
	if err := resumed.Load(data); err != nil {
		t.Fatal(err)
	}
	if again := must(resumed.Save()); !bytes.Equal(again, data) {
		t.Fatal("a loaded state saves other bytes")
	}
	for i := 3; i < 6; i++ {
		got := snapshotStep(t, resumed, i)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[i][k]) {
				t.Fatalf("step %d value %d: %v, never stopped: %v", i, k, got[k], want[i][k])
			}
		}
	}

	wantError(t, "short", first.Load([]byte("RC")), ErrInvalidArgument, "too short")
	wantError(t, "cut", first.Load(data[:len(data)-1]), ErrInvalidArgument, "checksum")
	b2 := must(NewModelState(m, 2))
	defer b2.Close()
	wantError(t, "batch", b2.Load(data), ErrInvalidArgument, "batch 3")
	other := mustOpen(t, filepath.Join(graphs, "masking_sequential.keras"))
	defer other.Close()
	o := must(NewModelState(other, 3))
	defer o.Close()
	wantError(t, "model", o.Load(data), ErrState, "saved by another model")
	first.Close()
	_, err := first.Save()
	wantError(t, "closed", err, ErrState)
}
