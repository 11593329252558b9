// SPDX-License-Identifier: Apache-2.0

package recur

// Cancelling runs and steps with a context.Context, through the C ABI's run options.

import (
	"context"
	"strings"
	"time"

	"recur.dev/recur/internal/recurswig"
)

// contextDone is nil while ctx may still run a call, else the cancelled error withContext returns.
func contextDone(ctx context.Context) error {
	if ctx == nil {
		return argError("ctx: nil; pass context.Background() for a call nothing cancels")
	}
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	return nil
}

func cancelled(cause error) error {
	return &Error{Status: ErrCancelled, Msg: "cancelled", Cause: cause}
}

// withContext runs call with a run options handle that a done ctx cancels (0, and no goroutine,
// when ctx can never be done, as context.Background()). A ctx already done returns before call;
// the error of a cancelled call carries ctx.Err() as its Cause. The watching goroutine has ended
// and the options are freed when withContext returns.
func withContext(ctx context.Context, call func(options int64) error) error {
	if err := contextDone(ctx); err != nil {
		return err
	}
	done := ctx.Done()
	if done == nil {
		return call(0)
	}
	var options int64
	if err := recurswig.Recur_go_run_options_create(&options); err != nil {
		return err
	}
	// A ctx with a deadline also sets the native timeout (since 0.8): the run checks it itself
	// between layers and timesteps, without waiting for the goroutine below to be scheduled.
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		if left := time.Until(deadline).Seconds(); left > 0 {
			_ = recurswig.Recur_go_run_options_set_timeout(options, left)
		}
	}
	finished := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-done:
			// Fails only for a NULL or freed handle, which cannot happen while the call runs.
			_ = recurswig.Recur_go_run_options_cancel(options)
		case <-finished:
		}
	}()
	err := call(options)
	close(finished)
	<-watching // the goroutine no longer uses options
	recurswig.Recur_go_run_options_destroy(options)
	if e, ok := err.(*Error); ok && e.Status == ErrCancelled && e.Cause == nil {
		e.Cause = ctx.Err()
	}
	// The native timeout is the ctx's deadline: reported as the ctx's, a cancel by DeadlineExceeded.
	if e, ok := err.(*Error); ok && hasDeadline && e.Status == ErrLimit && strings.Contains(e.Msg, "deadline passed after") {
		return &Error{Status: ErrCancelled, Msg: "cancelled: " + e.Msg, Cause: context.DeadlineExceeded}
	}
	return err
}
