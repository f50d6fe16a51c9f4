// Package outbox delivers the outbound calls an event's commit wrote to
// the outbox, after the commit, exactly once where the outcome can be
// known and never twice where it cannot.
//
// The invariant it keeps: a row is sent only while its deliverer holds the
// row's lease (claimed with an owner token, the same fencing as events),
// and a row is never sent again once it is delivered, rejected, unknown or
// dead. A call whose outcome cannot be known — a timeout or a lost
// connection after the request was written, or a worker that stopped
// while it held the row — ends unknown, for review, and is not resent,
// unless its target dedupes on the idempotency key (RetryUnknown). A row
// that keeps failing is bounded by MaxAttempts. An event's outbox is
// settled when every row is final; until then the event stays with the
// sweep, so no row is left pending forever.
package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/effects"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/obs"
)

// Store is the outbox as the deliverer needs it; see inboxstore.Store for
// the contract of each method.
type Store interface {
	ClaimRow(ctx context.Context, key, owner string, now, leaseUntil time.Time) (Row, error)
	FinishRow(ctx context.Context, key, owner string, res Result, now time.Time) error
	SettleOutbox(ctx context.Context, k inbox.Key, gen int, settled bool, due, now time.Time) error
}

// Target is a configured receiver of outbound rows: an HTTP receiver, or
// for forwarding rows (effects.ActionEventBridge) an EventBridge route
// (forward.TargetOf names it; the bus is in the row).
type Target struct {
	// URL receives each row as a JSON POST. Empty: rows are delivered to
	// the log only (a development setup with no receiver). Unused by
	// forwarding rows.
	URL string
	// RetryUnknown says the receiver dedupes on the Idempotency-Key
	// header (an HTTP receiver) or on the event key (an EventBridge
	// route's consumers), so a call whose outcome is unknown may be made
	// again.
	RetryUnknown bool
	// Timeout bounds one call, from dialling to the response's status.
	// Zero means DefaultTimeout.
	Timeout time.Duration
}

// Defaults of Config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 20
	DefaultRetryBase   = 30 * time.Second
	DefaultRetryCap    = time.Hour
)

// leaseMargin outlives a call's timeout, so a row's lease never ends while
// its call can still be under way.
const leaseMargin = 10 * time.Second

// maxRowsAtOnce bounds the rows of one event delivered at once.
const maxRowsAtOnce = MaxBatchEntries

// finishTimeout bounds the write of a row's outcome after its call, which
// is made even when the caller's context has ended (the call happened).
const finishTimeout = 3 * time.Second

// Config holds a Deliverer's collaborators.
type Config struct {
	Store   Store
	Targets map[string]Target
	// Bus puts forwarding rows' entries (package eventbus), with their
	// Detail built from the payloads Events reads; both are needed only
	// for such rows.
	Bus    Bus
	Events Events
	// Client makes the calls; nil means one that never follows redirects.
	// Its CheckRedirect is replaced: a redirect is the receiver's answer,
	// not an invitation to send the row elsewhere.
	Client *http.Client
	// MaxAttempts bounds the attempts on one row: the last failure makes
	// it dead. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase and RetryCap shape the backoff after a failed attempt n:
	// a delay drawn from [d/2, d], d = min(RetryCap, RetryBase·2^(n-1)).
	RetryBase, RetryCap time.Duration
	Logger              *slog.Logger
	// Metrics, if it has a namespace, makes each row's log line publish
	// the OutboxRows metric (see metricAttrs).
	Metrics obs.Metrics
	Now     func() time.Time
	// Rand returns a number in [0, 1) for the backoff's jitter.
	Rand func() float64
}

// Deliverer sends outbox rows.
type Deliverer struct {
	cfg Config
	// batcher puts forwarding rows' entries, several to a request where
	// several are ready; nil without an EventBridge client.
	batcher *batcher
}

// New returns a deliverer; Store and Logger are required, and every
// target's URL must be empty or an absolute http or https URL.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.Logger == nil {
		return nil, errors.New("outbox: incomplete config")
	}
	for name, t := range cfg.Targets {
		if t.URL != "" {
			u, err := url.Parse(t.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("outbox: target %q: URL %q is not an absolute http or https URL", name, t.URL)
			}
		}
		if t.Timeout < 0 {
			return nil, fmt.Errorf("outbox: target %q: negative timeout", name)
		}
	}
	targets := make(map[string]Target, len(cfg.Targets))
	for name, t := range cfg.Targets {
		if t.Timeout == 0 {
			t.Timeout = DefaultTimeout
		}
		targets[name] = t
	}
	cfg.Targets = targets
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryCap == 0 {
		cfg.RetryCap = DefaultRetryCap
	}
	switch {
	case cfg.MaxAttempts < 1:
		return nil, errors.New("outbox: MaxAttempts must be at least 1")
	case cfg.RetryBase <= 0 || cfg.RetryCap <= 0:
		// A cap below the base is allowed (template.yaml cannot refuse
		// it): every backoff is then the cap.
		return nil, fmt.Errorf("outbox: want RetryBase (%s) and RetryCap (%s) over 0", cfg.RetryBase, cfg.RetryCap)
	}
	client := http.Client{}
	if cfg.Client != nil {
		client = *cfg.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client.Transport = counting(client.Transport)
	cfg.Client = &client
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = mrand.Float64
	}
	d := &Deliverer{cfg: cfg}
	if cfg.Bus != nil {
		d.batcher = newBatcher(cfg.Bus, cfg.Now)
	}
	return d, nil
}

// Settlement is what one delivery pass left of an event's outbox.
type Settlement struct {
	// Settled: every row is final, and the event was told so.
	Settled bool
	// Due is when the earliest row that is not final may be tried again.
	Due time.Time
	// Sent counts the calls this pass made; States the rows' states as
	// this pass left or found them.
	Sent   int
	States map[State]int
}

// Deliver tries every row of the event's outbox as owner, up to
// maxRowsAtOnce at a time: the rows are independent calls, each with its
// own key and lease, and nothing orders them. Forwarding rows go to the
// batcher, which puts them with the other deliveries' rows for the same
// bus. Calls are made under work (a row is not started without time for
// its whole timeout before work's deadline); outcomes are recorded under
// book, which outlives work. It records on the event whether its outbox
// settled, and returns the first error of the store it met; a row's
// failure is not an error, only a row that is not final. gen is the
// event's outbox generation as the caller read it (inbox.Event.OutboxGen),
// read before this pass claims any row: the outbox is settled only if no
// row was resent since.
func (d *Deliverer) Deliver(work, book context.Context, ev inbox.Key, gen int, rows []string, owner string) (Settlement, error) {
	st := Settlement{Settled: true, States: make(map[State]int, len(rows))}
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxRowsAtOnce)
	// The rows that start at once are all counted on their way before
	// any starts: no request starts while one of them could still join
	// it.
	tickets := make([]*ticket, len(rows))
	for i := range min(len(rows), maxRowsAtOnce) {
		tickets[i] = d.batcher.expect()
	}
	for i, key := range rows {
		sem <- struct{}{}
		if tickets[i] == nil {
			tickets[i] = d.batcher.expect()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			defer tickets[i].drop()
			state, due, sent, err := d.one(work, book, ev, i, key, owner, tickets[i])
			mu.Lock()
			defer mu.Unlock()
			st.States[state]++
			if sent {
				st.Sent++
			}
			if err != nil {
				errs = append(errs, err)
			}
			if !state.Final() {
				st.Settled = false
				if st.Due.IsZero() || due.Before(st.Due) {
					st.Due = due
				}
			}
		})
	}
	wg.Wait()
	if err := d.cfg.Store.SettleOutbox(book, ev, gen, st.Settled, st.Due, d.cfg.Now()); err != nil {
		// Not told: the caller comes back, and the next pass, finding
		// the rows as they are, tells it again.
		errs = append(errs, err)
		if st.Settled {
			st.Settled, st.Due = false, d.cfg.Now()
		}
	}
	return st, errors.Join(errs...)
}

// undecided reports whether a claim's error leaves open whether it landed
// (an outage, a lost answer), as the store's decided refusals do not.
func undecided(err error) bool {
	for _, decided := range []error{ErrFinal, inbox.ErrClaimed, inbox.ErrNotDue, inbox.ErrNotFound} {
		if errors.Is(err, decided) {
			return false
		}
	}
	return true
}

// one delivers one row, if it is this owner's to deliver now, and returns
// its state and, when it is not final, when it is due again.
//
// Logs and errors name the row by its event and its place in the event's
// outbox (row), never by its key: keys are built from business
// identifiers (an invoice id), which stay out of logs.
//
// tk is the row's ticket with the batcher: used up by its put, if it is a
// forwarding row put now; its caller drops it otherwise.
func (d *Deliverer) one(work, book context.Context, ev inbox.Key, i int, key, owner string, tk *ticket) (state State, due time.Time, sent bool, err error) {
	now := d.cfg.Now()
	// The row's target is not known before the claim: the longest timeout
	// any target has decides whether there is time to start.
	// Deadlines are the runtime's, on the wall clock.
	if deadline, ok := work.Deadline(); ok && time.Until(deadline) < d.longestTimeout() {
		return Pending, now, false, nil
	}
	leaseEnd := now.Add(d.rowLease())
	prev, err := d.cfg.Store.ClaimRow(work, key, owner, now, leaseEnd)
	if err != nil && undecided(err) && work.Err() == nil {
		// The claim's answer was lost: it may have landed. Claiming again
		// as the same owner returns the row as that claim found it (the
		// store recognises its own lease), so what follows — a send, or
		// unknown for a delivery a stopped worker left — is decided as
		// for any claim, never from a guess.
		prev, err = d.cfg.Store.ClaimRow(work, key, owner, now, leaseEnd)
	}
	switch {
	case errors.Is(err, ErrFinal):
		return prev.State, time.Time{}, false, nil
	case errors.Is(err, inbox.ErrClaimed):
		return Delivering, prev.LeaseUntil, false, nil
	case errors.Is(err, inbox.ErrNotDue):
		return prev.State, prev.DueAt, false, nil
	case errors.Is(err, inbox.ErrNotFound):
		// Listed by the event but absent: written in the same
		// transaction, so only an operator's deletion does this.
		d.cfg.Logger.Error("outbox row missing", "event_key", ev.String(), "row", i)
		return Dead, time.Time{}, false, nil
	case err != nil:
		return Pending, now.Add(min(d.cfg.RetryBase, d.cfg.RetryCap)), false, fmt.Errorf("row %d: %w", i, err)
	}
	return d.attempt(work, book, ev, i, key, owner, tk, prev, leaseEnd)
}

// attempt makes a delivery attempt at the row prev, claimed by owner until
// leaseEnd, and records its outcome.
func (d *Deliverer) attempt(work, book context.Context, ev inbox.Key, i int, key, owner string, tk *ticket, prev Row, leaseEnd time.Time) (state State, due time.Time, sent bool, err error) {
	if prev.Action != effects.ActionEventBridge {
		// Not coming to the batcher: it need not wait for this row.
		tk.drop()
	}
	attempt := prev.Attempts + 1
	target, known := d.cfg.Targets[prev.Target]
	var res Result
	// entries is the size of the PutEvents request a forwarding row went
	// in.
	var entries int
	switch {
	case prev.State == Delivering && !(known && target.RetryUnknown):
		res = Result{State: Unknown, Cause: "a delivery was under way when its worker stopped: it may have reached the receiver"}
	case attempt > d.cfg.MaxAttempts:
		res = Result{State: Dead, Cause: fmt.Sprintf("%d attempts, over the budget of %d", attempt-1, d.cfg.MaxAttempts)}
	case !known:
		res = Result{State: Failed, Cause: fmt.Sprintf("no target %q is configured", prev.Target)}
	case prev.Action == effects.ActionEventBridge:
		res, entries = d.put(work, tk, target, prev, leaseEnd)
		sent = entries > 0
	case target.URL == "":
		res = Result{State: Delivered, DeliveredTo: "log"}
		d.cfg.Logger.Info("outbox row delivered to the log", "event_key", ev.String(), "row", i, "target", prev.Target, "body_bytes", len(prev.Body))
	default:
		res = d.send(work, target, prev)
		sent = true
	}
	// Whatever was decided, this row is not on its way to the batcher
	// any more (a no-op for a ticket its put used; a forwarding row that
	// failed before its put gives its ticket back here).
	tk.drop()
	if res.State == Failed {
		if attempt >= d.cfg.MaxAttempts {
			res.State, res.Cause = Dead, fmt.Sprintf("failed on all %d attempts, the last: %s", attempt, res.Cause)
		} else {
			res.RetryAt = d.cfg.Now().Add(d.backoff(attempt))
		}
	}
	fctx, cancel := context.WithTimeout(book, finishTimeout)
	defer cancel()
	err = d.cfg.Store.FinishRow(fctx, key, owner, res, d.cfg.Now())
	if err != nil && !sent && !errors.Is(err, inbox.ErrLeaseLost) && fctx.Err() == nil {
		// Nothing was sent, which only this record can say: try it once
		// more rather than leave the row to be taken for a delivery cut
		// short (unknown) when its lease ends.
		err = d.cfg.Store.FinishRow(fctx, key, owner, res, d.cfg.Now())
	}
	if err != nil {
		// Not recorded: the row stays delivering until its lease ends,
		// then its next claim finds it so (unknown, unless its target
		// dedupes) — or another worker already decided it.
		d.cfg.Logger.Warn("outbox row", "event_key", ev.String(), "row", i, "state", string(res.State), "error", err.Error())
		return Delivering, leaseEnd, sent, fmt.Errorf("row %d: recording %s: %w", i, res.State, err)
	}
	attrs := []any{"event_key", ev.String(), "row", i, "target", prev.Target, "state", string(res.State), "attempt", attempt}
	if res.StatusCode != 0 {
		attrs = append(attrs, "status_code", res.StatusCode)
	}
	if res.Cause != "" {
		attrs = append(attrs, "cause", res.Cause)
	}
	if entries > 0 {
		attrs = append(attrs, "put_entries", entries)
	}
	attrs = append(attrs, d.metricAttrs(prev, res.State)...)
	if res.State.ForReview() {
		d.cfg.Logger.Warn("outbox row", attrs...)
	} else {
		d.cfg.Logger.Info("outbox row", attrs...)
	}
	return res.State, res.RetryAt, sent, nil
}

// metricAttrs publishes one OutboxRows count per delivery attempt
// recorded, by Target (as the handler named it: code, not input) and
// State (delivered, failed, rejected, unknown, dead), and by State alone;
// a delivered row adds DeliveryLatency, from its commit to its delivery.
func (d *Deliverer) metricAttrs(row Row, state State) []any {
	if d.cfg.Metrics.Namespace == "" {
		return nil
	}
	metrics := []obs.Metric{obs.Count("OutboxRows")}
	if state == Delivered && !row.CreatedAt.IsZero() {
		ms := float64(d.cfg.Now().Sub(row.CreatedAt).Microseconds()) / 1000
		metrics = append(metrics, obs.Metric{Name: "DeliveryLatency", Unit: obs.UnitMilliseconds, Value: max(ms, 0)})
	}
	return d.cfg.Metrics.Attrs(
		[]obs.Dimension{{Name: "Target", Value: row.Target}, {Name: "State", Value: string(state)}},
		[][]string{{"Target", "State"}, {"State"}},
		metrics...)
}

// rowLease is how long a claim on a row lasts: the longest call any
// target may make, after a wait of as long for a PutEvents request in
// flight (see batcher), and a margin that covers the record of the
// outcome (finishTimeout).
func (d *Deliverer) rowLease() time.Duration {
	return 2*d.longestTimeout() + leaseMargin
}

// longestTimeout is the longest call any target may make.
func (d *Deliverer) longestTimeout() time.Duration {
	var longest time.Duration
	for _, t := range d.cfg.Targets {
		longest = max(longest, t.Timeout)
	}
	if longest == 0 {
		return DefaultTimeout
	}
	return longest
}

// Targets returns the names of the configured targets, sorted.
func (d *Deliverer) Targets() []string {
	return slices.Sorted(maps.Keys(d.cfg.Targets))
}

func (d *Deliverer) backoff(attempt int) time.Duration {
	b := d.cfg.RetryCap
	if shift := attempt - 1; shift < 32 {
		b = min(b, d.cfg.RetryBase<<shift)
	}
	return b/2 + time.Duration(d.cfg.Rand()*float64(b/2))
}

// maxResponse bounds what is read of a receiver's response (to reuse the
// connection); the rest is discarded unread.
const maxResponse = 64 << 10

// send makes the call and classifies what came of it:
//
//   - 2xx: delivered;
//   - 503, 429 and 408: failed (the receiver says to come back, having
//     done nothing);
//   - other 5xx (500, a gateway's 502 or 504): the receiver, or the one
//     behind its gateway, may have acted on the request before failing:
//     unknown, or failed for a target that dedupes;
//   - 409 from a target that dedupes: its answer to a request with the
//     key still in progress: failed;
//   - other 4xx, and 3xx (redirects are not followed): rejected;
//   - an error before a connection was had (connection refused, DNS,
//     TLS), a write that failed, or any error with not a byte written on
//     the connection since the call got it: failed, the receiver cannot
//     have the whole request;
//   - any other error (a timeout or a reset after the request was
//     written, or a connection whose write had not reported when the
//     call ended): unknown, or failed for a target that dedupes.
func (d *Deliverer) send(ctx context.Context, t Target, r Row) Result {
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	var got, wrote, writeFailed atomic.Bool
	// The bytes written on the call's connection when it got it, and the
	// connection's counter (nil if it does not count).
	var counter atomic.Pointer[atomic.Int64]
	var before int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if c := counterOf(info.Conn); c != nil {
				before = c.Load()
				counter.Store(c)
			}
			got.Store(true)
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			} else {
				writeFailed.Store(true)
			}
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(r.Body))
	if err != nil {
		return Result{State: Failed, Cause: "building the request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", r.Key)
	req.Header.Set("User-Agent", "webhook-inbox-outbox")
	if !t.RetryUnknown {
		// net/http replays a request carrying Idempotency-Key on a reused
		// connection that failed after the request was written — a
		// resend of a call whose outcome is unknown. Without GetBody it
		// cannot.
		req.GetBody = nil
	}
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		// The URL stays out of the cause: it is logged and kept on the
		// row, and a receiver's URL may carry a token.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		// Sent, or possibly sent: the whole request was written, or a
		// connection was had and Do returned before the transport said
		// whether its write went through — unless not a byte went out
		// on the connection since the call got it.
		c := counter.Load()
		nothingSent := c != nil && c.Load() == before
		if !nothingSent && (wrote.Load() || (got.Load() && !writeFailed.Load())) {
			if t.RetryUnknown {
				return Result{State: Failed, Cause: "outcome unknown, resent as the receiver dedupes: " + err.Error()}
			}
			return Result{State: Unknown, Cause: "the request was sent and no answer came: " + err.Error()}
		}
		return Result{State: Failed, Cause: "not sent: " + err.Error()}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	_ = resp.Body.Close()
	code := resp.StatusCode
	res := Result{StatusCode: code}
	switch {
	case code >= 200 && code < 300:
		res.State, res.DeliveredTo = Delivered, "http"
	case code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout,
		t.RetryUnknown && (code >= 500 || code == http.StatusConflict):
		res.State, res.Cause = Failed, fmt.Sprintf("the receiver answered %d", code)
	case code >= 500:
		res.State, res.Cause = Unknown, fmt.Sprintf("the receiver answered %d: it may have acted on the request", code)
	default:
		res.State, res.Cause = Rejected, fmt.Sprintf("the receiver answered %d", code)
	}
	return res
}
