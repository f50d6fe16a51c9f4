package local

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/replay"
)

// ReplayFunc is the replay Lambda's handler as the local stack calls it.
type ReplayFunc func(context.Context, replay.Request) (replay.Summary, error)

// Sweeper runs the replay function's sweep on a schedule, as the
// template's EventBridge rule does in the cloud.
type Sweeper struct {
	Handler ReplayFunc
	// Every is the schedule's rate; Request is its input.
	Every   time.Duration
	Request replay.Request
	// Timeout is the replay function's Timeout: each run's deadline.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Run sweeps every Every until ctx is done, then returns nil. The first
// sweep runs one period after the start, as a new schedule's does.
func (s *Sweeper) Run(ctx context.Context) error {
	if s.Handler == nil || s.Every <= 0 {
		return errors.New("sweeper: a handler and a positive period are required")
	}
	t := time.NewTicker(s.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Once(ctx)
		}
	}
}

// Once runs one sweep with the schedule's input and the function's
// deadline, and logs its summary.
func (s *Sweeper) Once(ctx context.Context) replay.Summary {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	sum, err := s.Handler(ctx, s.Request)
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err != nil {
		log.Error("sweep", "error", err.Error())
	}
	return sum
}
