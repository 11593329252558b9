// SPDX-License-Identifier: Apache-2.0

package recur

import (
	"runtime"
	"sync"
)

// native is a library handle and the lock that guards it, shared by Layer, State, Model and
// ModelState. Calls that only read the object hold the lock shared, calls that change it (and
// Close) hold it exclusively; a zero handle means closed. The lock calls take what, the object's
// name in the ErrState error of a closed one. A nil *native (the guard of a nil owner) reads as
// closed.
type native[H ~uintptr] struct {
	mu sync.RWMutex
	h  H
}

func (n *native[H]) lockRead(what string) (H, error) {
	if n == nil {
		return 0, closedError(what)
	}
	n.mu.RLock()
	if n.h == 0 {
		n.mu.RUnlock()
		return 0, closedError(what)
	}
	return n.h, nil
}

func (n *native[H]) lockWrite(what string) (H, error) {
	if n == nil {
		return 0, closedError(what)
	}
	n.mu.Lock()
	if n.h == 0 {
		n.mu.Unlock()
		return 0, closedError(what)
	}
	return n.h, nil
}

// unlockRead and unlockWrite keep the owner (which embeds n) alive until the call on its handle
// has returned, so that its finalizer cannot free the handle during the call.
func (n *native[H]) unlockRead()  { n.mu.RUnlock(); runtime.KeepAlive(n) }
func (n *native[H]) unlockWrite() { n.mu.Unlock(); runtime.KeepAlive(n) }

// reading and writing run call on the handle under the shared or the exclusive lock. call does
// not escape, so a closure passed here stays on the stack: the streaming paths do not allocate.
func (n *native[H]) reading(what string, call func(H) error) error {
	h, err := n.lockRead(what)
	if err != nil {
		return err
	}
	err = call(h)
	n.unlockRead()
	return err
}

func (n *native[H]) writing(what string, call func(H) error) error {
	h, err := n.lockWrite(what)
	if err != nil {
		return err
	}
	err = call(h)
	n.unlockWrite()
	return err
}

// free frees the handle once (Close is idempotent; a nil owner has nothing to free) and drops the
// owner's finalizer.
func (n *native[H]) free(owner any, del func(H)) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	if n.h != 0 {
		del(n.h)
		n.h = 0
	}
	n.mu.Unlock()
	runtime.SetFinalizer(owner, nil)
	return nil
}

// filled allocates a slice of n floats (n, err from the length query that sizes it) and has fill
// write it: the allocating forms (Call, Predict, Weights, ...) of the methods that write into a
// caller's slice.
func filled(n int, err error, fill func([]float32) error) ([]float32, error) {
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	if err := fill(out); err != nil {
		return nil, err
	}
	return out, nil
}

// each describes items 0..n-1 with at (n, err from the count query): Inputs, Outputs, ...
func each[T any](n int, err error, at func(int) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = at(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}
