// Package ingest answers a webhook delivery: it finds the source, verifies
// the signature over the raw bytes, reads the provider's event identity,
// stores the event once with one conditional write and queues it — and only
// then answers 2xx. Duplicates are acknowledged (and re-queued while they
// are not processed yet) so providers stop retrying.
package ingest

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
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

// Secrets returns the keys of an endpoint, or an error that
// Config.IsSecretNotFound recognizes when the endpoint has none.
type Secrets interface {
	Get(ctx context.Context, id string) (source.Keys, error)
	// Previous returns the secret's previous version while a rotation
	// window lasts (see secrets.Store.Previous), an error otherwise; it is
	// asked only after the current keys refused a signature.
	Previous(ctx context.Context, id string) (source.Keys, error)
}

// Remote is what certificate-signed schemes (signature.Certified,
// signature.Confirmer) need from their providers: the certificates they
// sign with, fetched and cached, and subscription confirmations visited.
// Ingest passes it only URLs the scheme's allow-list accepted. An error
// wrapping inbox.ErrUnavailable may pass on a retry (ingest answers 503,
// so the provider retries); any other is the provider's refusal.
type Remote interface {
	Certificate(ctx context.Context, url string) (*x509.Certificate, error)
	Confirm(ctx context.Context, url string) error
}

// Nonces records the nonces of signatures that do not cover the body's
// bytes (signature.Nonced).
type Nonces interface {
	// ClaimNonce records id with binding until until, or finds it recorded
	// with the same binding: nil. Recorded with another, unexpired: an
	// error wrapping inbox.ErrNonceUsed; unavailable: inbox.ErrUnavailable.
	ClaimNonce(ctx context.Context, id, binding string, until, now time.Time) error
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
	// Remote is required when a source's scheme is signature.Certified or
	// signature.Confirmer.
	Remote Remote
	// Nonces is required when a source's scheme is signature.Nonced.
	Nonces       Nonces
	MaxBodyBytes int
	Logger       *slog.Logger
	// Metrics, if it has a namespace, makes each request's log line
	// publish the Webhooks metric (see metricAttrs).
	Metrics obs.Metrics
	Now     func() time.Time
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
	}
	for _, name := range cfg.Sources.Names() {
		src, _ := cfg.Sources.Lookup(name, "")
		_, certified := src.Scheme.(signature.Certified)
		_, confirms := src.Scheme.(signature.Confirmer)
		_, nonced := src.Scheme.(signature.Nonced)
		switch {
		case (certified || confirms) && cfg.Remote == nil:
			return nil, fmt.Errorf("ingest: source %s (%s) fetches from its provider: Config.Remote is required", name, src.Kind)
		case nonced && cfg.Nonces == nil:
			return nil, fmt.Errorf("ingest: source %s (%s) signs a nonce, not the body: Config.Nonces is required", name, src.Kind)
		}
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
	outcomeHandshake = "handshake"
)

// errorClipBytes bounds the error logged for a request: enough for a
// wrapped AWS SDK error naming a key, not for a quoted 100 KB path segment.
const errorClipBytes = 1024

// result is what one request came to: the HTTP answer and what to log.
type result struct {
	status  int
	body    any
	reply   *signature.Reply // a handshake answered in the provider's format
	outcome string
	key     string
	events  int
	err     error
}

// HandleV2 serves an API Gateway HTTP API (payload format 2.0) event.
func (h *Handler) HandleV2(ctx context.Context, e events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := h.cfg.Now()
	req, err := apigw.FromV2(e, h.cfg.MaxBodyBytes)
	return h.serve(ctx, req, err, start).V2(), nil
}

// HandleV1 serves an API Gateway REST API (payload format 1.0) event.
func (h *Handler) HandleV1(ctx context.Context, e events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	start := h.cfg.Now()
	req, err := apigw.FromV1(e, h.cfg.MaxBodyBytes)
	return h.serve(ctx, req, err, start).V1(), nil
}

// answerMargin is the part of the invocation's time that ingest keeps for
// itself after its last AWS call: to log, and to answer before Lambda's
// timeout does. Every call is bounded by the deadline less this margin, so
// a slow queue or table gets ingest's own 503 (with the event stored, when
// it was: the sweep then queues it) and never the platform's "timed out",
// which API Gateway turns into a 5xx that says nothing. A short invocation
// keeps a quarter of its time instead.
const answerMargin = 500 * time.Millisecond

// callBound returns ctx bounded by its deadline less answerMargin (or a
// quarter of what is left, if that is less); without a deadline, ctx.
func callBound(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	margin := min(answerMargin, time.Until(deadline)/4)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

// serve answers one normalized request (or the error normalizing it) and
// logs one line for it.
func (h *Handler) serve(ctx context.Context, req apigw.Request, reqErr error, start time.Time) apigw.Response {
	callCtx, cancel := callBound(ctx)
	defer cancel()
	var res result
	switch {
	case errors.Is(reqErr, apigw.ErrBodyTooLarge):
		res = fail(http.StatusRequestEntityTooLarge, outcomeTooLarge, "body too large", reqErr)
	case reqErr != nil:
		res = fail(http.StatusBadRequest, outcomeInvalid, "invalid body encoding", reqErr)
	default:
		res = h.handle(callCtx, req, start)
	}
	log := obs.WithRequest(ctx, h.cfg.Logger)
	// The path segments and the event key are the client's choice and are
	// logged before (or whether or not) anything validated them, so each is
	// clipped; errors quote such values too (an unknown source's name), so
	// they are clipped as well, with more room for the dependency's words.
	attrs := []any{
		"source", obs.Clip(req.PathParams["source"], obs.ClipBytes),
		"account", obs.Clip(req.PathParams["account"], obs.ClipBytes),
		"event_key", obs.Clip(res.key, obs.ClipBytes),
		"outcome", res.outcome,
		"status", res.status,
		"duration_ms", float64(h.cfg.Now().Sub(start).Microseconds()) / 1000,
	}
	if res.events > 1 {
		attrs = append(attrs, "events", res.events)
	}
	attrs = append(attrs, h.metricAttrs(req, res)...)
	switch {
	case res.status >= 500:
		log.Error("webhook", append(attrs, "error", obs.Clip(res.err.Error(), errorClipBytes))...)
	case res.err != nil:
		log.Warn("webhook", append(attrs, "error", obs.Clip(res.err.Error(), errorClipBytes))...)
	default:
		log.Info("webhook", attrs...)
	}
	if res.reply != nil {
		ct := res.reply.ContentType
		if ct == "" {
			ct = "application/json"
		}
		return apigw.Response{Status: res.reply.Status, Header: map[string]string{"content-type": ct}, Body: string(res.reply.Body)}
	}
	b, _ := json.Marshal(res.body)
	return apigw.Response{Status: res.status, Body: string(b)}
}

type errorBody struct {
	Error string `json:"error"`
}

type statusBody struct {
	Status  string `json:"status"`
	EventID string `json:"event_id"`
	// EventIDs lists every event of a delivery that carried several.
	EventIDs []string `json:"event_ids,omitempty"`
}

func fail(status int, outcome, msg string, err error) result {
	return result{status: status, body: errorBody{msg}, outcome: outcome, err: err}
}

// metricAttrs publishes one Webhooks count per request, by Source (a
// configured source, "unknown" for any other name: the path is the
// client's) and Outcome (accepted, duplicate, rejected for a signature,
// invalid for a malformed body, too_large, unknown_source, unavailable
// for a 503, method_not_allowed, handshake), by Outcome alone and in all.
func (h *Handler) metricAttrs(req apigw.Request, res result) []any {
	if h.cfg.Metrics.Namespace == "" {
		return nil
	}
	src := "unknown"
	if s, _ := h.cfg.Sources.Lookup(req.PathParams["source"], req.PathParams["account"]); s != nil {
		src = s.Name
	}
	return h.cfg.Metrics.Attrs(
		[]obs.Dimension{{Name: "Source", Value: src}, {Name: "Outcome", Value: res.outcome}},
		[][]string{{"Source", "Outcome"}, {"Outcome"}, {}},
		obs.Count("Webhooks"))
}

func (h *Handler) handle(ctx context.Context, req apigw.Request, now time.Time) result {
	name, account := req.PathParams["source"], req.PathParams["account"]
	src, err := h.cfg.Sources.Lookup(name, account)
	if src == nil {
		return fail(http.StatusNotFound, outcomeUnknown, "not found", err)
	}
	sub, subscribes := src.Scheme.(signature.Subscriber)
	if req.Method != http.MethodPost && !(req.Method == http.MethodGet && subscribes) {
		return fail(http.StatusMethodNotAllowed, outcomeMethod, "method not allowed", errors.New("method "+req.Method))
	}
	if err != nil {
		// An account the source does not serve: answered as a bad
		// signature, with no secret looked up (see rejected).
		return rejected(err)
	}
	sreq := signature.Request{Method: req.Method, Header: req.Header, RawQuery: req.RawQuery, Body: req.Body, DeliveryID: req.RequestID}
	if req.Method == http.MethodPost {
		// A per-tenant source: the delivery's own (unverified) account
		// chooses the secret, and only that secret's verification makes
		// it the event's account. On a path with an account, the
		// delivery must name that one or none. Both refusals come before
		// anything is verified, so they are the bad signature's answer:
		// another, for a served account named, would list the accounts.
		if tenant, ok := src.Tenant(sreq); ok {
			switch {
			case account != "" && tenant != account:
				return rejected(fmt.Errorf("path account %q, delivery account %q", account, tenant))
			case !src.Serves(tenant):
				return rejected(fmt.Errorf("%w: %q named by the delivery", source.ErrNoAccount, tenant))
			}
			account = tenant
		}
	}
	// A certificate-signed delivery names its certificate: a URL the
	// scheme's allow-list refuses is a bad signature, answered before
	// anything is looked up or fetched.
	certified, _ := src.Scheme.(signature.Certified)
	var certURL string
	if certified != nil && req.Method == http.MethodPost {
		if certURL, err = certified.CertificateURL(sreq); err != nil {
			return rejected(err)
		}
	}
	secretID := h.cfg.Sources.SecretID(src.Name, account)
	keys, err := h.cfg.Secrets.Get(ctx, secretID)
	switch {
	case err != nil && account != "" && (h.cfg.IsSecretNotFound(err) || errors.Is(err, source.ErrNotLookedUp)):
		// An account served but without a secret (yet, or any more), or
		// one not looked up during a flood of made-up ones: told apart
		// from a bad signature, either would say which accounts exist
		// (or which this instance has seen).
		return rejected(err)
	case err != nil && h.cfg.IsSecretNotFound(err):
		return fail(http.StatusNotFound, outcomeUnknown, "not found", err)
	case err != nil:
		return fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", err)
	}
	if req.Method == http.MethodGet {
		var reply signature.Reply
		if _, res := h.verify(ctx, secretID, keys, func(k source.Keys) (err error) {
			reply, err = sub.Subscribe(sreq, k.VerifyTokens)
			return err
		}); res != nil {
			return *res
		}
		return result{status: reply.Status, reply: &reply, outcome: outcomeHandshake}
	}
	// An unsigned ping that carries nothing is answered before Verify,
	// and stores nothing (see signature.Pinger).
	if p, ok := src.Scheme.(signature.Pinger); ok {
		if reply, isPing := p.Ping(sreq); isPing {
			return result{status: reply.Status, reply: &reply, outcome: outcomeHandshake}
		}
	}
	if certURL != "" {
		// Everything but the signature first (the window, the topic or
		// webhook id), so that nothing is fetched for a delivery that
		// could not verify. Then the certificate, fetched (or found in
		// the cache) within ctx: the invocation's deadline less the
		// answer's margin.
		var res *result
		if keys, res = h.verify(ctx, secretID, keys, func(k source.Keys) error { return certified.Precheck(sreq, k.Signing, now) }); res != nil {
			return *res
		}
		cert, err := h.cfg.Remote.Certificate(ctx, certURL)
		switch {
		case errors.Is(err, inbox.ErrUnavailable):
			return fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", err)
		case err != nil:
			return rejected(fmt.Errorf("%w: %v", signature.ErrUntrustedCertificate, err))
		}
		sreq.Certificate = cert
	}
	keys, res := h.verify(ctx, secretID, keys, func(k source.Keys) error { return src.Scheme.Verify(sreq, k.Signing, now) })
	if res != nil {
		return *res
	}
	// Only a verified delivery may confirm a subscription: confirming an
	// unverified one would subscribe the endpoint to anyone's topic.
	if c, ok := src.Scheme.(signature.Confirmer); ok {
		url, reply, isConfirmation, err := c.Confirmation(sreq)
		if err != nil {
			return fail(http.StatusBadRequest, outcomeInvalid, "malformed subscription confirmation", err)
		}
		if isConfirmation {
			err := h.cfg.Remote.Confirm(ctx, url)
			switch {
			case errors.Is(err, inbox.ErrUnavailable):
				return fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", err)
			case err != nil:
				return fail(http.StatusBadRequest, outcomeInvalid, "subscription confirmation refused by the provider", err)
			}
			return result{status: reply.Status, reply: &reply, outcome: outcomeHandshake}
		}
	}
	// Only a verified request may be a handshake: answering an unverified
	// challenge would let anyone confirm an endpoint.
	if hs, ok := src.Scheme.(signature.Handshaker); ok {
		reply, isHandshake, err := hs.Handshake(sreq, keys.Signing)
		if err != nil {
			return fail(http.StatusBadRequest, outcomeInvalid, "malformed handshake", err)
		}
		if isHandshake {
			return result{status: reply.Status, reply: &reply, outcome: outcomeHandshake}
		}
	}
	ids, err := identify(src.Scheme, sreq)
	if err != nil {
		return fail(http.StatusBadRequest, outcomeInvalid, "malformed event: missing or invalid id, type or created", err)
	}
	if n, ok := src.Scheme.(signature.Nonced); ok {
		// The signature does not cover these bytes: its nonce is taken
		// with this body, once (see signature.Nonced). Once per kind,
		// not per source or account: a provider's key may sign for
		// several endpoints (Mailgun's is the account's), and a
		// signature one of them received must not carry another body
		// to the next.
		nonce, until := n.Nonce(sreq)
		sum := sha256.Sum256(req.Body)
		err := h.cfg.Nonces.ClaimNonce(ctx, src.Kind+"#"+nonce, hex.EncodeToString(sum[:]), until, now)
		switch {
		case errors.Is(err, inbox.ErrNonceUsed):
			return rejected(err)
		case err != nil:
			return fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", err)
		}
	}
	stored := h.store(ctx, src, account, ids, req, now)
	if a, ok := src.Scheme.(signature.Acknowledger); ok && (stored.status == http.StatusOK || stored.status == http.StatusAccepted) {
		ack := a.Ack()
		ack.Status = stored.status
		stored.reply = &ack
	}
	return stored
}

// verify runs check with the secret's current keys and, if they fail,
// with its previous version's during a Secrets Manager rotation window
// (the provider may still sign, or a subscription be confirmed, with the
// old secret). It returns the keys that passed, or the result refusing
// the request.
func (h *Handler) verify(ctx context.Context, secretID string, keys source.Keys, check func(source.Keys) error) (source.Keys, *result) {
	err := check(keys)
	if err == nil {
		return keys, nil
	}
	prev, perr := h.cfg.Secrets.Previous(ctx, secretID)
	switch {
	case perr != nil && errors.Is(perr, inbox.ErrUnavailable):
		res := fail(http.StatusServiceUnavailable, outcomeError, "temporarily unavailable", perr)
		return keys, &res
	case perr == nil && check(prev) == nil:
		return prev, nil
	}
	res := rejected(err)
	return keys, &res
}

// rejected is the one answer to a delivery that is not proven to come
// from the endpoint's provider: a missing, bad or expired signature, and
// an account the source does not serve or has no secret for — the same
// status and body for each, so that nothing tells which accounts exist.
func rejected(err error) result {
	return fail(http.StatusUnauthorized, outcomeRejected, "invalid signature", err)
}

// neverKept are the headers that carry credentials: never stored, whatever
// a scheme lists.
var neverKept = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true,
	"X-Gitlab-Token": true, "X-Api-Key": true, "X-Amz-Security-Token": true,
}

// maxKeptHeader bounds each kept header's value.
const maxKeptHeader = 1024

// keptHeaders is what the event keeps of the delivery's headers: its
// scheme's HeaderKeeper list and User-Agent, each present one clipped, the
// credential headers never.
func keptHeaders(s signature.Scheme, h http.Header) map[string]string {
	names := []string{"User-Agent"}
	if k, ok := s.(signature.HeaderKeeper); ok {
		names = append(names, k.KeptHeaders()...)
	}
	var out map[string]string
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		vs := h.Values(n)
		if len(vs) == 0 || neverKept[n] {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[n] = obs.Clip(strings.Join(vs, ", "), maxKeptHeader)
	}
	return out
}

// identify returns the events of a verified delivery: several for schemes
// whose deliveries carry several, else one.
func identify(s signature.Scheme, r signature.Request) ([]signature.Identity, error) {
	if sp, ok := s.(signature.Splitter); ok {
		ids, err := sp.Split(r)
		if err == nil && len(ids) == 0 {
			err = errors.New("no events in delivery")
		}
		return ids, err
	}
	id, err := s.Identify(r)
	if err != nil {
		return nil, err
	}
	return []signature.Identity{id}, nil
}

// store writes each event of a delivery once and queues it. The answer is
// 202 when any event was new and 200 when all were duplicates; a failure
// on any event fails the delivery (503), and the provider's retry stores
// the rest, the stored ones taking the duplicate path. Every event's key is
// checked before the first is stored, so a delivery refused for one bad
// event stores none of them.
func (h *Handler) store(ctx context.Context, src *source.Source, pathAccount string, ids []signature.Identity, req apigw.Request, now time.Time) result {
	body := req.Body
	headers := keptHeaders(src.Scheme, req.Header)
	keys := make([]inbox.Key, len(ids))
	for i, id := range ids {
		account := pathAccount
		if id.Account != "" {
			if pathAccount != "" && pathAccount != id.Account {
				return fail(http.StatusBadRequest, outcomeInvalid, "account does not match the endpoint", fmt.Errorf("path account %q, delivery account %q", pathAccount, id.Account))
			}
			account = id.Account
		}
		keys[i] = inbox.Key{Source: src.Name, Account: account, EventID: id.ID}
		if err := keys[i].Validate(); err != nil {
			return fail(http.StatusBadRequest, outcomeInvalid, "malformed event id", err)
		}
	}
	res := result{status: http.StatusOK, outcome: outcomeDuplicate, events: len(ids), key: keys[0].String()}
	sb := statusBody{Status: "duplicate", EventID: ids[0].ID}
	if len(ids) > 1 {
		sb.EventIDs = make([]string, 0, len(ids))
	}
	for i, id := range ids {
		key := keys[i]
		payload := id.Payload
		if payload == nil {
			payload = body
		}
		// No expiry: retention counts from the end of processing, so an
		// unfinished event outlives every message that points at it.
		ev := inbox.Event{
			Key: key, Kind: src.Kind, Type: id.Type, Created: id.Created, Payload: payload, Attributes: id.Attributes,
			Headers: headers, RequestID: req.RequestID, Scope: src.Scope(key), Unscoped: src.Unscoped,
			Status: inbox.StatusReceived, ReceivedAt: now, UpdatedAt: now,
		}
		stored, err := h.cfg.Store.Insert(ctx, ev, now)
		switch {
		case errors.Is(err, inbox.ErrDuplicate):
			// The first delivery may have been stored but never queued (the
			// enqueue failed, or the process died in between): queue it
			// again while it is unfinished. The processor's claim makes
			// extra messages harmless. A processed event is done, and a dead
			// one is final until an operator replays it: a provider's retry
			// must not start it over (Stripe retries for three days).
			if stored.Unfinished() {
				if err := h.cfg.Queue.Enqueue(ctx, key); err != nil {
					return unavailable(key, err)
				}
			}
		case errors.Is(err, inbox.ErrInvalid):
			// The store refuses the item itself (over DynamoDB's item
			// size): a retry would be refused the same way.
			res := fail(http.StatusRequestEntityTooLarge, outcomeTooLarge, "event too large to store", err)
			res.key = key.String()
			return res
		case err != nil:
			return unavailable(key, err)
		default:
			// Stored but not queued would be a gap: fail so the provider
			// retries; its retry takes the duplicate path and queues it, and
			// the sweep queues it if the provider never does.
			if err := h.cfg.Queue.Enqueue(ctx, key); err != nil {
				return unavailable(key, err)
			}
			res.status, res.outcome, sb.Status = http.StatusAccepted, outcomeAccepted, "accepted"
		}
		if sb.EventIDs != nil {
			sb.EventIDs = append(sb.EventIDs, id.ID)
		}
	}
	res.body = sb
	return res
}

func unavailable(k inbox.Key, err error) result {
	return result{status: http.StatusServiceUnavailable, body: errorBody{"temporarily unavailable"}, outcome: outcomeError, key: k.String(), err: err}
}
