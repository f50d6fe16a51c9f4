package local

import (
	"context"
	"fmt"
)

// outcome is what a handler invocation returned.
type outcome[R any] struct {
	resp R
	err  error
}

// start runs handler(ctx, ev) in its own goroutine, as the Lambda runtime
// runs an invocation: a panic becomes an invocation error naming what
// panicked, and cancel runs once the handler has returned. The channel is
// buffered, so a handler whose caller stopped waiting (a timeout) never
// blocks on its send.
func start[E, R any](ctx context.Context, cancel context.CancelFunc, what string, handler func(context.Context, E) (R, error), ev E) <-chan outcome[R] {
	done := make(chan outcome[R], 1)
	go func() {
		defer cancel()
		var o outcome[R]
		defer func() {
			if v := recover(); v != nil {
				o = outcome[R]{err: fmt.Errorf("%s panicked: %v", what, v)}
			}
			done <- o
		}()
		o.resp, o.err = handler(ctx, ev)
	}()
	return done
}
