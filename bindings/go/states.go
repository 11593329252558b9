// SPDX-License-Identifier: Apache-2.0

package recur

// Many model states stepped in one call (recur 0.8): the streams of a game's characters or a
// stream processor's keys, stepped as one batch instead of one small batch each.

import (
	"context"
	"sort"
	"strconv"
	"unsafe"

	"recur.dev/recur/internal/recurswig"
)

// StepStates steps many states of model m in one call, as one batch (one matrix product per
// layer per timestep for all of them), with the numbers of calling StepNamed on each state with
// its own rows. inputs hold the rows of every state one after another in the order of states
// (Dims[0] = the sum of their batches), masks likewise; so do the outputs returned (all outputs
// when outputs is empty). Each state appears once and was made by NewModelState on m. ctx
// cancels the call; on any error every state is left exactly as before the call. The states are
// locked for the call: another goroutine's call on one of them waits.
func (m *Model) StepStates(ctx context.Context, states []*ModelState, inputs []Tensor, outputs []string) ([]Output, error) {
	if err := contextDone(ctx); err != nil {
		return nil, err
	}
	if len(outputs) == 0 {
		var err error
		if outputs, err = m.OutputNames(); err != nil {
			return nil, err
		}
	}
	outs := requested(outputs)
	if err := statesCall(recurswig.GO_STEPS_SHAPES, states, inputs, outs, 0, true); err != nil {
		return nil, err
	}
	if err := m.StepStatesInto(ctx, states, inputs, outs); err != nil {
		return nil, err
	}
	return outs, nil
}

// StepStatesInto is StepStates into the caller's slices, as Model.RunNamedInto.
func (m *Model) StepStatesInto(ctx context.Context, states []*ModelState, inputs []Tensor, outputs []Output) error {
	return withContext(ctx, func(options int64) error {
		return statesCall(recurswig.GO_STEPS, states, inputs, outputs, options, false)
	})
}

// statesCall locks every state (in one order, so that two calls on overlapping states cannot
// deadlock) and runs op on them.
func statesCall(op int, states []*ModelState, inputs []Tensor, outputs []Output, options int64, shapes bool) error {
	if len(states) == 0 {
		return argError("states: expected at least 1 state, got 0")
	}
	if len(states) > 1<<30 {
		return argError("states: at most 1073741824, got " + strconv.Itoa(len(states)))
	}
	first := make(map[*ModelState]int, len(states))
	for i, s := range states {
		if s == nil {
			return argError("states[" + strconv.Itoa(i) + "] is nil")
		}
		if j, seen := first[s]; seen {
			return argError("states[" + strconv.Itoa(j) + "] and states[" + strconv.Itoa(i) +
				"] are the same state (each stream may appear once per call)")
		}
		first[s] = i
	}
	order := make([]int, len(states))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return uintptr(unsafe.Pointer(states[order[a]])) < uintptr(unsafe.Pointer(states[order[b]]))
	})
	// The count, then the handles, in C memory (the glue reads them as recur_model_state pointers).
	c := recurswig.Swig_malloc(8 * (len(states) + 1))
	if c == 0 {
		return &Error{Status: ErrOutOfMemory, Msg: "out of memory for " + strconv.Itoa(len(states)) + " state handles"}
	}
	defer recurswig.Swig_free(c)
	words := unsafe.Slice((*int64)(cPointer(&c)), len(states)+1)
	words[0] = int64(len(states))
	locked := 0
	defer func() {
		for _, i := range order[:locked] {
			states[i].unlock()
		}
	}()
	for _, i := range order {
		h, err := states[i].lock()
		if err != nil {
			return &Error{Status: ErrState, Msg: "states[" + strconv.Itoa(i) + "]: the model state is closed"}
		}
		locked++
		words[i+1] = int64(h)
	}
	return namedCall(op, int64(c), inputs, outputs, options, shapes)
}
