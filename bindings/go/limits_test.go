// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"path/filepath"
	"testing"
)

// The limit tests change process-wide values, so none of them calls t.Parallel: they run before
// any parallel test starts, and each puts the default back with defer.

var limitDefaults = map[Limit]uint64{
	LimitUnits:           65536,
	LimitBatch:           1 << 20,
	LimitStateBytes:      256 << 20,
	LimitWeightBytes:     1 << 30,
	LimitFileBytes:       4 << 30,
	LimitTensorBytes:     1 << 30,
	LimitTotalStateBytes: 256 << 20,
	LimitRunBytes:        512 << 20,
	LimitTimesteps:       1 << 20,
	LimitInitWork:        1 << 31,
	LimitRunWork:         1 << 38,
}

// lowerLimit sets a limit for the rest of a test and returns the function that restores it.
func lowerLimit(t *testing.T, l Limit, v uint64) func() {
	t.Helper()
	if err := SetLimit(l, v); err != nil {
		t.Fatalf("SetLimit(%v, %d): %v", l, v, err)
	}
	return func() {
		if err := SetLimit(l, 0); err != nil {
			t.Errorf("restoring %v: %v", l, err)
		}
	}
}

func TestLimitDefaults(t *testing.T) {
	if len(limitDefaults) != 11 {
		t.Fatal("eleven limits")
	}
	for l, want := range limitDefaults {
		d, err := DefaultLimit(l)
		if err != nil || d != want {
			t.Errorf("DefaultLimit(%v) = %d, %v; want %d", l, d, err, want)
		}
		v, err := GetLimit(l)
		if err != nil || v != want {
			t.Errorf("GetLimit(%v) = %d, %v; want the default %d", l, v, err, want)
		}
	}
	names := []string{"units", "batch", "state_bytes", "weight_bytes", "file_bytes", "tensor_bytes",
		"total_state_bytes", "run_bytes", "timesteps", "init_work", "run_work"}
	for i, n := range names {
		if Limit(i).String() != n {
			t.Errorf("Limit(%d).String() = %q, want %q", i, Limit(i).String(), n)
		}
	}
	if Limit(11).String() != "Limit(11)" {
		t.Errorf("Limit(11).String() = %q", Limit(11).String())
	}
	if StatusString(ErrLimit) != "over a resource limit" {
		t.Errorf("StatusString(ErrLimit) = %q", StatusString(ErrLimit))
	}
}

func TestLimitSetAndRestore(t *testing.T) {
	for l, def := range limitDefaults {
		func() {
			defer lowerLimit(t, l, 12345)()
			if v, err := GetLimit(l); err != nil || v != 12345 {
				t.Errorf("GetLimit(%v) after SetLimit 12345 = %d, %v", l, v, err)
			}
			if d, _ := DefaultLimit(l); d != def {
				t.Errorf("DefaultLimit(%v) changed to %d", l, d)
			}
			if err := SetLimit(l, ^uint64(0)); err != nil {
				t.Errorf("SetLimit(%v, max): %v", l, err)
			}
			if v, _ := GetLimit(l); v != ^uint64(0) {
				t.Errorf("GetLimit(%v) = %d, want all 64 bits", l, v)
			}
		}()
		if v, err := GetLimit(l); err != nil || v != def {
			t.Errorf("GetLimit(%v) after SetLimit 0 = %d, %v; want the default %d", l, v, err, def)
		}
	}
}

func TestLimitBadArguments(t *testing.T) {
	for _, bad := range []Limit{-1, 11, 99, Limit(1 << 40)} {
		_, err := GetLimit(bad)
		wantError(t, "GetLimit("+bad.String()+")", err, ErrInvalidArgument, "limit")
		_, err = DefaultLimit(bad)
		wantError(t, "DefaultLimit("+bad.String()+")", err, ErrInvalidArgument, "limit")
		wantError(t, "SetLimit("+bad.String()+")", SetLimit(bad, 5), ErrInvalidArgument, "limit")
	}
}

func TestLimitRefusals(t *testing.T) {
	// A layer over the units limit.
	func() {
		defer lowerLimit(t, LimitUnits, 8)()
		l, err := NewLayer(gruOptions(16, 4))
		if l != nil {
			l.Close()
			t.Error("a layer over the units limit was made")
		}
		wantError(t, "16 units over a units limit of 8", err, ErrLimit, "units limit of 8", "16")
		small := mustLayer(t, gruOptions(8, 4))
		small.Close()
	}()
	l := mustLayer(t, gruOptions(16, 4))
	l.Close()

	// A state over the batch limit.
	layer := mustLayer(t, gruOptions(4, 3))
	defer layer.Close()
	func() {
		defer lowerLimit(t, LimitBatch, 2)()
		s, err := NewState(layer, 3)
		if s != nil {
			s.Close()
		}
		wantError(t, "state batch 3 over a batch limit of 2", err, ErrLimit, "batch limit of 2")
		s, err = NewState(layer, 2)
		if err != nil {
			t.Fatalf("NewState at the limit: %v", err)
		}
		s.Close()
	}()

	// A model over the weight limit.
	path := filepath.Join(sourceDir(t), "examples", "models", "sentiment_keras3.keras")
	func() {
		defer lowerLimit(t, LimitWeightBytes, 1024)()
		m, err := OpenModel(path)
		if m != nil {
			m.Close()
		}
		wantError(t, "model over a weight limit of 1 KiB", err, ErrLimit, "weight_bytes limit")
	}()
	m, err := OpenModel(path)
	if err != nil {
		t.Fatalf("OpenModel with the default limit: %v", err)
	}
	m.Close()
}
