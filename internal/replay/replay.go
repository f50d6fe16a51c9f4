// Package replay gives operators their way back from failure: it moves
// messages from the dead-letter queue to the main queue, where they pass
// through the same claim and effect controls as any delivery — a replay can
// never apply an effect twice. Every run starts as a dry run unless the
// operator says otherwise.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/queue"
)

// Source is the dead-letter queue.
type Source interface {
	Receive(ctx context.Context, max, visibility, wait int32) ([]queue.Message, error)
	Delete(ctx context.Context, receiptHandle string) error
	Release(ctx context.Context, receiptHandle string) error
}

// Target is the main queue.
type Target interface {
	Send(ctx context.Context, body string) error
}

// Request is the console or CLI test event.
//
//	{"action": "drain-dlq", "dry_run": false, "limit": 100}
//
// dry_run defaults to true: nothing moves unless it is false.
type Request struct {
	Action string `json:"action"`
	DryRun *bool  `json:"dry_run"`
	Limit  int    `json:"limit"`
}

// Summary is the JSON the invocation returns.
type Summary struct {
	Action string `json:"action"`
	DryRun bool   `json:"dry_run"`
	// Examined counts the DLQ messages looked at; Moved those sent back to
	// the main queue and deleted from the DLQ.
	Examined int `json:"examined"`
	Moved    int `json:"moved"`
	// Events lists the event keys of the examined messages.
	Events []string `json:"events"`
	// Unreadable counts messages that do not point at an event; they are
	// moved like the rest, and the processor reports them again.
	Unreadable int    `json:"unreadable"`
	Error      string `json:"error,omitempty"`
}

// Limits of one invocation.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
	// hold keeps examined messages invisible for the rest of the run, so a
	// dry run does not count one message twice.
	hold int32 = 120
	// reserve is the time kept back before the invocation's deadline.
	reserve = 10 * time.Second
)

// ActionDrainDLQ is the only action so far.
const ActionDrainDLQ = "drain-dlq"

// Replayer runs replay requests.
type Replayer struct {
	DLQ    Source
	Main   Target
	Logger *slog.Logger
}

// ErrBadRequest wraps problems with the request itself.
var ErrBadRequest = errors.New("replay: bad request")

// Handle runs one request. An unknown action or an out-of-range limit is an
// error; a failure part-way returns the summary so far with Error set.
func (r *Replayer) Handle(ctx context.Context, req Request) (Summary, error) {
	if req.Action == "" {
		req.Action = ActionDrainDLQ
	}
	if req.Action != ActionDrainDLQ {
		return Summary{}, fmt.Errorf("%w: unknown action %q (want %q)", ErrBadRequest, req.Action, ActionDrainDLQ)
	}
	if req.Limit == 0 {
		req.Limit = DefaultLimit
	}
	if req.Limit < 0 || req.Limit > MaxLimit {
		return Summary{}, fmt.Errorf("%w: limit %d: want 1..%d", ErrBadRequest, req.Limit, MaxLimit)
	}
	s := Summary{Action: req.Action, DryRun: req.DryRun == nil || *req.DryRun, Events: []string{}}
	err := r.drain(ctx, req.Limit, &s)
	if err != nil {
		s.Error = err.Error()
	}
	r.Logger.Info("replay", "action", s.Action, "dry_run", s.DryRun, "examined", s.Examined,
		"moved", s.Moved, "unreadable", s.Unreadable, "error", s.Error)
	return s, nil
}

func (r *Replayer) drain(ctx context.Context, limit int, s *Summary) error {
	var held []string // receipt handles to release at the end of a dry run
	defer func() {
		for _, h := range held {
			// Best effort: an unreleased message reappears after hold anyway.
			_ = r.DLQ.Release(context.WithoutCancel(ctx), h)
		}
	}()
	seen := map[string]bool{}
	for s.Examined < limit {
		// Stop while there is time to answer: the summary is the operator's
		// only record of what moved.
		if d, ok := ctx.Deadline(); ok && time.Until(d) < reserve {
			return errors.New("stopped before the function's timeout: invoke again to continue")
		}
		n := int32(min(10, limit-s.Examined))
		msgs, err := r.DLQ.Receive(ctx, n, hold, 0)
		if err != nil {
			return err
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.ID] {
				held = append(held, m.ReceiptHandle)
				continue
			}
			seen[m.ID] = true
			fresh++
			s.Examined++
			if msg, err := inbox.DecodeMessage(m.Body); err == nil {
				s.Events = append(s.Events, msg.Key.String())
			} else {
				s.Unreadable++
			}
			if s.DryRun {
				held = append(held, m.ReceiptHandle)
				continue
			}
			if err := r.Main.Send(ctx, m.Body); err != nil {
				held = append(held, m.ReceiptHandle)
				return fmt.Errorf("move %s: %w", m.ID, err)
			}
			if err := r.DLQ.Delete(ctx, m.ReceiptHandle); err != nil {
				// Sent but not deleted: the next drain sends it again, which
				// the processor's claim absorbs.
				return fmt.Errorf("delete %s: %w", m.ID, err)
			}
			s.Moved++
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// DecodeRequest reads the invocation payload; an empty payload is a dry run
// with the defaults.
func DecodeRequest(payload []byte) (Request, error) {
	var req Request
	if strings.TrimSpace(string(payload)) == "" {
		return req, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return req, nil
}
