// SPDX-License-Identifier: Apache-2.0

// recur from Go: builds a GRU and an LSTM from the JSON Keras 2 writes for them, sets
// deterministic weights, runs one masked batch through both, then opens the bundled Keras model
// files and prints recur's predictions next to the ones Keras computed (the same numbers as
// examples/c). It exits non-zero if any prediction differs from Keras's by more than 1e-5.
//
//	go run . ../models          # from examples/go, after building the binding with CMake
package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"recur.dev/recur"
)

const gruJSON = `{"class_name": "GRU", "config": {"name": "gru", "trainable": true, "dtype": "float32", ` +
	`"batch_input_shape": [null, null, 3], ` +
	`"return_sequences": true, "return_state": false, "go_backwards": false, "stateful": false, ` +
	`"unroll": false, "time_major": false, "units": 4, "activation": "tanh", ` +
	`"recurrent_activation": "sigmoid", "use_bias": true, ` +
	`"kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}}, ` +
	`"recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": null}}, ` +
	`"bias_initializer": {"class_name": "Zeros", "config": {}}, ` +
	`"kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null, ` +
	`"activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null, ` +
	`"bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 2, ` +
	`"reset_after": true}}`

const lstmJSON = `{"class_name": "LSTM", "config": {"name": "lstm", "trainable": true, "dtype": "float32", ` +
	`"batch_input_shape": [null, null, 3], ` +
	`"return_sequences": false, "return_state": true, "go_backwards": false, "stateful": false, ` +
	`"unroll": false, "time_major": false, "units": 4, "activation": "tanh", ` +
	`"recurrent_activation": "sigmoid", "use_bias": true, ` +
	`"kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}}, ` +
	`"recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": null}}, ` +
	`"bias_initializer": {"class_name": "Zeros", "config": {}}, "unit_forget_bias": true, ` +
	`"kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null, ` +
	`"activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null, ` +
	`"bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 2}}`

// B=2 sequences of T=5 steps with F=3 features. Row 0 is complete; row 1 has a hole at t=1 and
// two padded steps at the end.
const B, T, F = 2, 5, 3

var mask = []byte{
	1, 1, 1, 1, 1,
	1, 0, 1, 0, 0,
}

func printMatrix(label string, v []float32, rows, cols int) {
	fmt.Println(label)
	for r := 0; r < rows; r++ {
		fmt.Print("  [")
		for c := 0; c < cols; c++ {
			if c > 0 {
				fmt.Print(", ")
			}
			fmt.Printf("% .6f", v[r*cols+c])
		}
		fmt.Println("]")
	}
}

// setWeights sets every weight to sin(i*0.37 + k)*0.5, with the shape the library reports.
func setWeights(layer *recur.Layer, name string) error {
	n, err := layer.NumWeights()
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		shape, err := layer.WeightShape(k)
		if err != nil {
			return err
		}
		wname, err := layer.WeightName(k)
		if err != nil {
			return err
		}
		size := 1
		for _, d := range shape {
			size *= d
		}
		w := make([]float32, size)
		for i := range w {
			w[i] = float32(math.Sin(float64(i)*0.37+float64(k)) * 0.5)
		}
		if len(shape) == 2 {
			fmt.Printf("%s %-16s shape (%d, %d)\n", name, wname, shape[0], shape[1])
		} else {
			fmt.Printf("%s %-16s shape (%d,)\n", name, wname, shape[0])
		}
		if err := layer.SetWeight(k, w); err != nil {
			return err
		}
	}
	return nil
}

func runLayer(label, json string, input []float32) error {
	layer, err := recur.LayerFromJSON(json, 0, int(recur.DialectAuto), "")
	if err != nil {
		return err
	}
	defer layer.Close()
	info, err := layer.Info()
	if err != nil {
		return err
	}
	fmt.Printf("\n== %s: Keras %d, units %d, input size %d, %d state(s), return_sequences=%d ==\n", label,
		info.Dialect, info.Units, info.InputSize, info.NumStates, map[bool]int{false: 0, true: 1}[info.ReturnSequences])
	if err := setWeights(layer, label); err != nil {
		return err
	}
	states := make([]float32, info.NumStates*B*info.Units)
	out, err := layer.Call(input, B, T, &recur.ForwardOptions{Mask: mask, FinalState: states})
	if err != nil {
		return err
	}
	u := info.Units
	if info.ReturnSequences {
		for b := 0; b < B; b++ {
			printMatrix(fmt.Sprintf("%s output, sequence %d (T=%d x units=%d):", label, b, T, u), out[b*T*u:], T, u)
		}
	} else {
		printMatrix(fmt.Sprintf("%s output (B=%d x units=%d):", label, B, u), out, B, u)
	}
	for s := 0; s < info.NumStates; s++ {
		name := "h"
		if s == 1 {
			name = "c"
		}
		printMatrix(fmt.Sprintf("%s final state %s (B=%d x units=%d):", label, name, B, u), states[s*B*u:], B, u)
	}
	return nil
}

// readMatrix reads a whitespace-separated matrix, one row per line.
func readMatrix(path string) (v []float32, rows, cols int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if cols == 0 {
			cols = len(fields)
		} else if len(fields) != cols {
			return nil, 0, 0, fmt.Errorf("%s: row %d has %d columns, not %d", path, rows, len(fields), cols)
		}
		for _, s := range fields {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("%s: %v", path, err)
			}
			v = append(v, float32(x))
		}
		rows++
	}
	return v, rows, cols, sc.Err()
}

func runModel(file string, ids []float32, batch, steps int, keras []float32, kcols int) (bool, error) {
	model, err := recur.OpenModel(file)
	if err != nil {
		return false, err
	}
	defer model.Close()
	info, err := model.Info()
	if err != nil {
		return false, err
	}
	status := "runnable"
	if !info.Runnable {
		status = info.Unsupported
	}
	fmt.Printf("\n== %s (Keras %s, %d layers, %s) ==\n", file, info.KerasVersion, info.NumLayers, status)
	if info.OutputSize != kcols {
		return false, fmt.Errorf("the model has %d outputs per sample, the Keras file %d", info.OutputSize, kcols)
	}
	out, err := model.Predict(ids, batch, steps, nil)
	if err != nil {
		return false, err
	}
	worst := 0.0
	fmt.Printf("  sample  %-26s %-26s\n", "recur", "Keras")
	for b := 0; b < batch; b++ {
		fmt.Printf("  %6d ", b)
		for j := 0; j < kcols; j++ {
			fmt.Printf(" %12.9f", out[b*kcols+j])
		}
		fmt.Print(" ")
		for j := 0; j < kcols; j++ {
			d := math.Abs(float64(out[b*kcols+j]) - float64(keras[b*kcols+j]))
			worst = math.Max(worst, d)
			fmt.Printf(" %12.9f", keras[b*kcols+j])
		}
		fmt.Println()
	}
	fmt.Printf("  max abs difference to Keras: %.3g\n", worst)
	if worst > 1e-5 {
		fmt.Fprintf(os.Stderr, "error: %s differs from Keras by %.3g\n", file, worst)
		return false, nil
	}
	return true, nil
}

func runBundledModels(dir string) (bool, error) {
	ids, rows, cols, err := readMatrix(filepath.Join(dir, "sentiment_inputs.txt"))
	if err != nil {
		return false, err
	}
	fmt.Printf("\nsample token sequences (B=%d, T=%d, 0 = padding):\n", rows, cols)
	for r := 0; r < rows; r++ {
		fmt.Print("  ")
		for t := 0; t < cols; t++ {
			fmt.Printf("%3d", int(ids[r*cols+t]))
		}
		fmt.Println()
	}
	for _, dialect := range []string{"keras2", "keras3"} {
		keras, krows, kcols, err := readMatrix(filepath.Join(dir, "sentiment_"+dialect+"_keras.txt"))
		if err != nil {
			return false, err
		}
		if krows != rows {
			return false, fmt.Errorf("%s: %d rows of predictions for %d samples", dialect, krows, rows)
		}
		for _, format := range []string{"keras", "h5"} {
			ok, err := runModel(filepath.Join(dir, "sentiment_"+dialect+"."+format), ids, rows, cols, keras, kcols)
			if err != nil || !ok {
				return ok, err
			}
		}
	}
	return true, nil
}

func main() {
	fmt.Printf("recur %s\n", recur.Version())
	input := make([]float32, B*T*F)
	for i := range input {
		input[i] = float32(math.Cos(float64(i)*0.5) * 0.8)
	}
	fmt.Println("mask: sequence 0 = 1 1 1 1 1, sequence 1 = 1 0 1 0 0 (a hole at t=1, padding at t=3..4)")

	fail := func(err error) {
		var rerr *recur.Error
		if errors.As(err, &rerr) {
			fmt.Fprintf(os.Stderr, "error: %s (status %d)\n", rerr.Msg, rerr.Status)
		} else {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
		}
		os.Exit(1)
	}
	if err := runLayer("GRU", gruJSON, input); err != nil {
		fail(err)
	}
	if err := runLayer("LSTM", lstmJSON, input); err != nil {
		fail(err)
	}
	if len(os.Args) > 1 {
		ok, err := runBundledModels(os.Args[1])
		if err != nil {
			fail(err)
		}
		if !ok {
			os.Exit(1)
		}
	}
	fmt.Println("\nexample finished")
}
