// Package ingest answers a webhook delivery: it finds the source, verifies
// the signature over the raw bytes, reads the provider's event identity,
// stores the event once with one conditional write and queues it — and only
// then answers 2xx. Duplicates are acknowledged (and re-queued while they
// are not processed yet) so providers stop retrying.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/internal/apigw"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// Store is the inbox as ingest needs it.
type Store interface {
	// Insert stores a new event; for an existing key it returns the stored
	// event and an error wrapping inbox.ErrDuplicate.
	Insert(ctx context.Context, e inbox.Event, now time.Time) (inbox.Event, error)
}

// Queue sends the message that points at a stored event.
type Queue interface {
	Enqueue(ctx context.Context, k inbox.Key) error
}

// Secrets returns the signing secrets of an endpoint, or an error wrapping
// secrets.ErrNotFound (which Config.IsNotFound recognizes).
type Secrets interface {
	Get(ctx context.Context, id string) ([][]byte, error)
}

// Config holds a Handler's collaborators and limits.
type Config struct {
	Sources *source.Set
	Secrets Secrets
	// IsSecretNotFound reports whether a Secrets error means the endpoint
	// has no secret (404) rather than an outage (503).
	IsSecretNotFound func(error) bool
	Store            Store
	Queue            Queue
	MaxBodyBytes     int
	Retention        time.Duration
	Logger           *slog.Logger
	Now              func() time.Time
}

// Handler is the ingest Lambda's handler.
type Handler struct {
	cfg Config
}

// New returns a handler; every field of cfg but Now is required.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Sources == nil, cfg.Secrets == nil, cfg.IsSecretNotFound == nil, cfg.Store == nil, cfg.Queue == nil, cfg.Logger == nil:
		return nil, errors.New("ingest: incomplete config")
	case cfg.MaxBodyBytes <= 0:
		return nil, errors.New("ingest: MaxBodyBytes must be positive")
	case cfg.Retention <= 0:
		return nil, errors.New("ingest: Retention must be positive")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}, nil
}

// Outcomes logged and counted per request.
const (
	outcomeAccepted  = "accepted"
	outcomeDuplicate = "duplicate"
	outcomeRejected  = "rejected"
	outcomeInvalid   = "invalid"
	outcomeUnknown   = "unknown_source"
	outcomeError     = "unavailable"
	outcomeMethod    = "method_not_allowed"
	outcomeTooLarge  = "too_large"
)

// result is what one request came to: the HTTP answer and what to log.
type result struct {
	status  int
	body    any
	outcome string
	key     string
	err     error
}

// HandleV2 serves an API Gateway HTTP API (payload 2.0) event.
func (h *Handler) HandleV2(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	src := e.PathParameters["source"]
	res := h.handle(ctx, e, start)
	log := obs.WithRequest(ctx, h.cfg.Logger)
	attrs := []any{
		"source", src,
		"account", e.PathParameters["account"],
		"event_key", res.key,
		"outcome", res.outcome,
		"status", res.status,
		"duration_ms", float64(h.cfg.Now().Sub(start).Microseconds()) / 1000,
	}
	switch {
	case res.status >= 500:
		log.Error("webhook", append(attrs, "error", res.err.Error())...)
	case res.err != nil:
		log.Warn("webhook", append(attrs, "error", res.err.Error())...)
	default:
		log.Info("webhook", attrs...)
	}
	b, _ := json.Marshal(res.body)
	return apigw.Response{Status: res.status, Body: string(b)}.V2(), nil
}

type errorBody struct {
	Error string `json:"error"`
}

type statusBody struct {
	Status  string `json:"status"`
	EventID string `json:"event_id"`
}

func fail(status int, outcome, msg string, err error) result {
	return result{status: status, body: errorBody{msg}, outcome: outcome, err: err}
}

func (h *Handler) handle(ctx context.Context, e events.APIGatewayV2HTTPRequest, now time.Time) result {
	name, account := e.PathParameters["source"], e.PathParameters["account"]
	src, err := h.cfg.Sources.Lookup(name, account)
	if err != nil {
		return fail(http.StatusNotFound, outcomeUnknown, "not found", err)
	}
	if m := e.RequestContext.HTTP.Method; m != http.MethodPost {
		return fail(http.StatusMethodNotAllowed, outcomeMethod, "method not allowed", errors.New("method "+m))
	}
	req, err := apigw.FromV2(e, h.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, apigw.ErrBodyTooLarge):
		return fail(http.StatusRequestEntityTooLarge, outcomeTooLarge, "body too large", err)
	case err != nil:
		return fail(http.StatusBadRequest, outcomeInvalid, "invalid body encoding", err)
	}
	secrets, err := h.cfg.Secrets.Get(ctx, h.cfg.Sources.SecretID(src.Name, account))
	switch {
	case err != nil && h.cfg.IsSecretNotFound(err):
		return fail(http.StatusNotFound, outcomeUnknown, "not found", err)
	case err != nil:
		return fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", err)
	}
	sreq := signature.Request{Method: req.Method, Header: req.Header, Body: req.Body}
	if err := src.Scheme.Verify(sreq, secrets, now); err != nil {
		return fail(http.StatusUnauthorized, outcomeRejected, "invalid signature", err)
	}
	id, err := src.Scheme.Identify(sreq)
	if err != nil {
		return fail(http.StatusBadRequest, outcomeInvalid, "malformed event: missing or invalid id, type or created", err)
	}
	key := inbox.Key{Source: src.Name, Account: account, EventID: id.ID}
	if err := key.Validate(); err != nil {
		return fail(http.StatusBadRequest, outcomeInvalid, "malformed event id", err)
	}
	ev := inbox.Event{
		Key: key, Kind: src.Kind, Type: id.Type, Created: id.Created, Payload: req.Body,
		Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now, ExpiresAt: now.Add(h.cfg.Retention),
	}
	stored, err := h.cfg.Store.Insert(ctx, ev, now)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		// The first delivery may have been stored but never queued (the
		// enqueue failed, or the process died in between): queue it again
		// until it is processed. The processor's claim makes extra messages
		// harmless.
		if stored.Status != inbox.StatusProcessed {
			if err := h.cfg.Queue.Enqueue(ctx, key); err != nil {
				return result{status: http.StatusServiceUnavailable, body: errorBody{"temporarily unavailable"}, outcome: outcomeError, key: key.String(), err: err}
			}
		}
		return result{status: http.StatusOK, body: statusBody{"duplicate", id.ID}, outcome: outcomeDuplicate, key: key.String()}
	case err != nil:
		return result{status: http.StatusServiceUnavailable, body: errorBody{"temporarily unavailable"}, outcome: outcomeError, key: key.String(), err: err}
	}
	if err := h.cfg.Queue.Enqueue(ctx, key); err != nil {
		// Stored but not queued: fail so the provider retries; its retry
		// takes the duplicate path above and queues the event.
		return result{status: http.StatusServiceUnavailable, body: errorBody{"temporarily unavailable"}, outcome: outcomeError, key: key.String(), err: err}
	}
	return result{status: http.StatusAccepted, body: statusBody{"accepted", id.ID}, outcome: outcomeAccepted, key: key.String()}
}
