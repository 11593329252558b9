// SPDX-License-Identifier: Apache-2.0

package recur

// Text inputs (recur 0.7): NewStringTensor into TextVectorization and StringLookup models,
// against Keras's numbers in tests/keras/graphs/text.

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type textCase struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
	Calls []struct {
		Inputs []struct {
			Shape []int64  `json:"shape"`
			Data  []string `json:"data"`
		} `json:"inputs"`
		Outputs []graphTensor `json:"outputs"`
	} `json:"calls"`
}

func loadTextCase(t *testing.T, dialect, name string) *textCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sourceDir(t), "tests", "keras", "graphs", "text", dialect+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []*textCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("text/%s.json has no case %s", dialect, name)
	return nil
}

func TestTextModelsMatchKeras(t *testing.T) {
	for _, dialect := range []string{"keras2", "keras3"} {
		for _, name := range []string{"text_vectorization_lstm", "string_lookup_gru", "text_vectorization_ragged_bigrams"} {
			c := loadTextCase(t, dialect, name)
			m := mustOpen(t, filepath.Join(sourceDir(t), "tests", "keras", c.Files[0]))
			info, err := m.Input(0)
			text, err2 := m.TakesStrings(0)
			if err != nil || err2 != nil || !text || info.TokenIDs {
				t.Fatalf("%s/%s: input %+v, strings %v, %v %v", dialect, name, info, text, err, err2)
			}
			in := c.Calls[0].Inputs[0]
			outs, err := m.RunNamed(context.Background(), []Tensor{NewStringTensor("text", in.Data, in.Shape...)}, []string{"out"})
			if err != nil {
				t.Fatalf("%s/%s: %v", dialect, name, err)
			}
			want := c.Calls[0].Outputs[0].Data
			if len(outs[0].Values) != len(want) {
				t.Fatalf("%s/%s: %d values, Keras has %d", dialect, name, len(outs[0].Values), len(want))
			}
			for i := range want {
				if math.Abs(float64(outs[0].Values[i]-want[i])) > graphTol {
					t.Errorf("%s/%s [%d]: %g, Keras %g", dialect, name, i, outs[0].Values[i], want[i])
				}
			}
			m.Close()
		}
	}
}

func TestTextInputErrors(t *testing.T) {
	m := mustOpen(t, filepath.Join(sourceDir(t), "tests", "keras", "graphs", "text", "keras3", "text_vectorization_lstm.keras"))
	defer m.Close()
	ctx := context.Background()
	_, err := m.RunNamed(ctx, []Tensor{NewStringTensor("text", []string{"a", "b\x00c", "d"}, 3, 1)}, []string{"out"})
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument || !strings.Contains(e.Msg, "Strings[1]") {
		t.Errorf("a NUL in a text: %v", err)
	}
	_, err = m.RunNamed(ctx, []Tensor{NewStringTensor("text", []string{"a", "caf\xc3", "d"}, 3, 1)}, []string{"out"})
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument || !strings.Contains(e.Msg, "not valid UTF-8") {
		t.Errorf("bad UTF-8: %v", err)
	}
	_, err = m.RunNamed(ctx, []Tensor{NewFloat32Tensor("text", []float32{1, 2, 3}, 3, 1)}, []string{"out"})
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument || !strings.Contains(e.Msg, "the input holds strings") {
		t.Errorf("floats to a string input: %v", err)
	}
	_, err = m.RunNamed(ctx, []Tensor{NewStringTensor("text", []string{"a", "b"}, 3, 1)}, []string{"out"})
	if !errors.As(err, &e) || e.Status != ErrShape {
		t.Errorf("too few texts: %v", err)
	}
	// Past the directly passed slots, the texts travel through C memory.
	old := directSlots
	directSlots = 0
	defer func() { directSlots = old }()
	outs, err := m.RunNamed(ctx, []Tensor{NewStringTensor("text", []string{"the cat", "", "naïve"}, 3, 1)}, []string{"out"})
	if err != nil || len(outs[0].Values) != 6 {
		t.Errorf("staged texts: %v", err)
	}
}
