// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Parity with real Keras: the committed fixtures of tests/keras/fixtures (format in
// tests/keras/README.md), a representative subset of files, every case in them.

type fxTensor struct {
	Name  string    `json:"name"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type fxCall struct {
	ResetStates  *[]fxTensor `json:"reset_states"`
	Input        fxTensor    `json:"input"`
	Mask         *fxTensor   `json:"mask"`
	InitialState []fxTensor  `json:"initial_state"`
	Training     bool        `json:"training"`
	Outputs      []fxTensor  `json:"outputs"`
}

type fxCase struct {
	Name      string          `json:"name"`
	Layer     json.RawMessage `json:"layer"`
	InputSize int             `json:"input_size"`
	Weights   []fxTensor      `json:"weights"`
	Tolerance float64         `json:"tolerance"`
	Calls     []fxCall        `json:"calls"`
	Losses    []struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
	} `json:"losses"`
	ConstrainedWeights []fxTensor      `json:"constrained_weights"`
	InitializerStats   json.RawMessage `json:"initializer_stats"`
}

type fxFile struct {
	Dialect  string `json:"dialect"`
	Versions struct {
		Keras string `json:"keras"`
	} `json:"versions"`
	Cases []fxCase `json:"cases"`
}

func sourceDir(t testing.TB) string {
	dir := os.Getenv("RECUR_SOURCE_DIR")
	if dir == "" {
		t.Skip("RECUR_SOURCE_DIR is not set (ctest sets it to the recur source tree)")
	}
	return dir
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func concat(ts []fxTensor) []float32 {
	var out []float32
	for _, t := range ts {
		out = append(out, f32(t.Data)...)
	}
	return out
}

func maxAbsDiff(got []float32, want []float64) float64 {
	worst := 0.0
	for i := range want {
		d := math.Abs(float64(got[i]) - want[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// runFixtureCase runs one case and returns a description of the first mismatch, or "".
func runFixtureCase(t *testing.T, f *fxFile, c *fxCase) {
	dialect := int(Keras3)
	if f.Dialect == "keras2" {
		dialect = int(Keras2)
	}
	layer, err := LayerFromJSON(string(c.Layer), c.InputSize, dialect, f.Versions.Keras)
	if err != nil {
		t.Fatalf("LayerFromJSON: %v", err)
	}
	defer layer.Close()
	if err := layer.SetWeights(concat(c.Weights)); err != nil {
		t.Fatalf("SetWeights: %v", err)
	}
	info, _ := layer.Info()
	tol := c.Tolerance
	if tol == 0 {
		tol = 1e-5
	}
	isCell := info.Type == GRUCell || info.Type == LSTMCell || info.Type == SimpleRNNCell
	for ci, call := range c.Calls {
		if call.ResetStates != nil {
			if len(*call.ResetStates) == 0 {
				err = layer.ResetStates()
			} else {
				err = layer.SetStates(concat(*call.ResetStates))
			}
			if err != nil {
				t.Fatalf("call %d: reset_states: %v", ci, err)
			}
		}
		x := f32(call.Input.Data)
		init := concat(call.InitialState)
		var out, states []float32
		var batch int
		if isCell {
			batch = call.Input.Shape[0]
			out = make([]float32, batch*info.Units)
			states = make([]float32, info.NumStates*batch*info.Units)
			if err := layer.CellCall(x, batch, init, out, states, call.Training); err != nil {
				t.Fatalf("call %d: CellCall: %v", ci, err)
			}
		} else {
			steps := call.Input.Shape[1]
			batch = call.Input.Shape[0]
			if info.TimeMajor {
				batch, steps = steps, batch
			}
			var mask []byte
			if call.Mask != nil {
				mask = make([]byte, len(call.Mask.Data))
				for i, m := range call.Mask.Data {
					if m != 0 {
						mask[i] = 1
					}
				}
			}
			states = make([]float32, info.NumStates*batch*info.Units)
			out, err = layer.Call(x, batch, steps, &ForwardOptions{Mask: mask, InitialState: init,
				FinalState: states, Training: call.Training})
			if err != nil {
				t.Fatalf("call %d: Forward: %v", ci, err)
			}
		}
		each := batch * info.Units
		for _, o := range call.Outputs {
			got := out
			switch o.Name {
			case "state_h":
				got = states[:each]
			case "state_c":
				got = states[each : 2*each]
			}
			if len(got) != len(o.Data) {
				t.Fatalf("call %d: %s has %d values, Keras %d", ci, o.Name, len(got), len(o.Data))
			}
			if d := maxAbsDiff(got, o.Data); d > tol {
				t.Errorf("call %d: %s differs from Keras by %.3g (tolerance %.1g)", ci, o.Name, d, tol)
			}
		}
	}
	if len(c.Losses) > 0 {
		losses, err := layer.Losses()
		if err != nil {
			t.Fatalf("Losses: %v", err)
		}
		if len(losses) != len(c.Losses) {
			t.Fatalf("%d losses, Keras %d", len(losses), len(c.Losses))
		}
		for i, want := range c.Losses {
			if losses[i].Name != want.Name {
				t.Errorf("loss %d is %q, Keras %q", i, losses[i].Name, want.Name)
			}
			if d := math.Abs(float64(losses[i].Value) - want.Value); d > 1e-5*math.Max(1, math.Abs(want.Value)) {
				t.Errorf("loss %s = %g, Keras %g", want.Name, losses[i].Value, want.Value)
			}
		}
	}
	if len(c.ConstrainedWeights) > 0 {
		if err := layer.SetWeights(concat(c.Weights)); err != nil {
			t.Fatalf("SetWeights: %v", err)
		}
		if err := layer.ApplyConstraints(); err != nil {
			t.Fatalf("ApplyConstraints: %v", err)
		}
		got, err := layer.Weights()
		if err != nil {
			t.Fatalf("Weights: %v", err)
		}
		want := concat(c.ConstrainedWeights)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("constrained weight %d = %g, Keras %g", i, got[i], want[i])
			}
		}
	}
}

func TestKerasFixtures(t *testing.T) {
	dir := filepath.Join(sourceDir(t), "tests", "keras", "fixtures")
	files := []string{
		"keras2/gru.json", "keras2/lstm.json", "keras2/cudnn.json", "keras2/masks.json", "keras2/stateful.json",
		"keras2/cells.json", "keras2/regularizers.json", "keras2/constraints.json",
		"keras3/gru.json", "keras3/lstm.json", "keras3/masks.json", "keras3/stateful.json", "keras3/cells.json",
		"keras3/regularizers.json", "keras3/constraints.json",
		"keras2/simple_rnn.json", "keras2/simple_rnn_options.json", "keras3/simple_rnn.json",
		"keras3/simple_rnn_options.json",
	}
	seen := map[string]int{}
	for _, name := range files {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var f fxFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range f.Cases {
			c := &f.Cases[i]
			if len(c.Calls) == 0 {
				continue // initializer statistics only
			}
			var cls struct {
				ClassName string `json:"class_name"`
				Config    struct {
					ResetAfter *bool `json:"reset_after"`
					Stateful   bool  `json:"stateful"`
				} `json:"config"`
			}
			_ = json.Unmarshal(c.Layer, &cls)
			ok := t.Run(strings.TrimSuffix(name, ".json")+"/"+c.Name, func(t *testing.T) { runFixtureCase(t, &f, c) })
			if !ok {
				continue
			}
			kind := cls.ClassName
			if cls.ClassName == "GRU" && cls.Config.ResetAfter != nil {
				kind = fmt.Sprintf("GRU reset_after=%v", *cls.Config.ResetAfter)
			}
			seen[kind]++
			if strings.HasPrefix(cls.ClassName, "CuDNN") {
				seen["CuDNN"]++
			}
			if cls.Config.Stateful {
				seen["stateful"]++
			}
			for _, call := range c.Calls {
				if call.Mask != nil {
					seen["masked"]++
					break
				}
			}
			if len(c.Losses) > 0 {
				seen["losses"]++
			}
			if len(c.ConstrainedWeights) > 0 {
				seen["constraints"]++
			}
		}
	}
	t.Logf("passing cases by kind: %v", seen)
	for _, need := range []string{"GRU reset_after=true", "GRU reset_after=false", "LSTM", "CuDNN", "masked",
		"stateful", "GRUCell", "LSTMCell", "SimpleRNN", "SimpleRNNCell", "losses", "constraints"} {
		if seen[need] == 0 {
			t.Errorf("no passing fixture case of kind %q", need)
		}
	}
}
