// Package secrets reads signing secrets from AWS Secrets Manager and caches
// them per warm Lambda instance, including the absence of a secret, so an
// attacker probing unknown accounts cannot turn every request into an API
// call.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// ErrNotFound means no secret exists under the id (the endpoint does not exist).
var ErrNotFound = errors.New("secrets: not found")

// ErrMissBudget means the lookup was not made: the id was never found by
// this instance, and its budget of lookups that find nothing is spent (a
// flood of requests for made-up accounts). It wraps source.ErrNotLookedUp
// and inbox.ErrUnavailable: a provider's retry of a real delivery gets
// through once the budget refills.
var ErrMissBudget = fmt.Errorf("secrets: too many lookups of unknown secrets: %w: %w", source.ErrNotLookedUp, inbox.ErrUnavailable)

// The budget of lookups that find no secret, per instance: MissBurst at
// once, then MissRate a second. A lookup of an id this instance has found
// before is never held back, so a flood of made-up accounts cannot keep a
// real tenant's secret from being read again when its cache entry ends.
const (
	MissBurst = 10
	MissRate  = 1.0
)

// API is the one Secrets Manager call the store makes.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ API = (*secretsmanager.Client)(nil)

// Store returns the signing secrets of an endpoint.
type Store struct {
	api API
	ttl time.Duration // how long a found secret is reused
	neg time.Duration // how long an absent secret is remembered
	// window is how long after a secret's current version was created its
	// previous version (AWSPREVIOUS) is still accepted; 0: never.
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]entry
	prev  map[string]entry // by id, for the current version entry.version
	// known are the ids found at least once (bounded by maxEntries);
	// tokens and filled are the miss budget (MissBurst, MissRate).
	known  map[string]bool
	tokens float64
	filled time.Time
	// inflight are the lookups being made, by id.
	inflight map[string]*flight
}

type entry struct {
	keys  source.Keys
	err   error
	until time.Time
	// version and created are the current version's id and creation time
	// (cache); version is the current version a previous entry belongs to
	// (prev).
	version string
	created time.Time
}

// NewStore returns a store that caches found secrets for ttl and absent ones
// for a fifth of it (a new secret is picked up within that time). It serves
// no previous version; see WithRotationWindow.
func NewStore(api API, ttl time.Duration) *Store {
	return &Store{api: api, ttl: ttl, neg: ttl / 5, now: time.Now, cache: map[string]entry{}, prev: map[string]entry{}, known: map[string]bool{}, tokens: MissBurst, inflight: map[string]*flight{}}
}

// WithRotationWindow makes Previous serve a secret's AWSPREVIOUS version for
// window after its current version was created: the time a provider may
// keep signing with the old secret after a Secrets Manager rotation.
func (s *Store) WithRotationWindow(window time.Duration) *Store {
	s.window = window
	return s
}

// ErrNoPrevious means no previous version is accepted for the secret: none
// exists, or its rotation window has passed.
var ErrNoPrevious = errors.New("secrets: no previous version in its rotation window")

// Get returns the keys stored under id (see source.ParseKeys: the
// SecretString itself, or {"signing_secrets":[…]} with several secrets
// during rotation). It returns ErrNotFound when the secret does not exist
// and an error wrapping inbox.ErrUnavailable when Secrets Manager cannot
// answer.
func (s *Store) Get(ctx context.Context, id string) (source.Keys, error) {
	now := s.now()
	s.mu.Lock()
	e, ok := s.cache[id]
	if ok && now.Before(e.until) {
		s.mu.Unlock()
		return e.keys, e.err
	}
	// One lookup of an id at a time: concurrent requests for it (a burst
	// at a cold start) share the one call, and its budget.
	if f, busy := s.inflight[id]; busy {
		s.mu.Unlock()
		select {
		case <-f.done:
			if f.cut && ctx.Err() == nil {
				// The lookup was cut short by its own caller's
				// context, not this one's: look again.
				return s.Get(ctx, id)
			}
			return f.keys, f.err
		case <-ctx.Done():
			return source.Keys{}, awserr.Wrap("get secret "+id, ctx.Err())
		}
	}
	f := &flight{done: make(chan struct{})}
	s.inflight[id] = f
	s.mu.Unlock()
	defer func() {
		// Whatever happens to the lookup (a panic too), its waiters are
		// let go and the next caller looks again.
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
		f.cut = f.cut || ctx.Err() != nil
		close(f.done)
	}()
	f.cut = true // until the lookup returns
	f.keys, f.err = s.lookup(ctx, id, now)
	f.cut = false
	return f.keys, f.err
}

// flight is one lookup in progress, which other callers for its id wait
// for.
type flight struct {
	done chan struct{}
	keys source.Keys
	err  error
	// cut says the lookup did not finish for its own caller's reasons
	// (its context ended, or it panicked): a waiter looks again.
	cut bool
}

// lookup reads the secret, spending from the miss budget for an id never
// found before; only a lookup that finds nothing keeps what it spent.
func (s *Store) lookup(ctx context.Context, id string, now time.Time) (source.Keys, error) {
	unknown := !s.isKnown(id)
	if unknown && !s.spend(now) {
		return source.Keys{}, ErrMissBudget
	}
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	var nf *smtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		s.put(id, entry{err: ErrNotFound, until: now.Add(s.neg)})
		return source.Keys{}, ErrNotFound
	case err != nil:
		if unknown {
			s.refund()
		}
		return source.Keys{}, awserr.Wrap("get secret "+id, err)
	}
	if unknown {
		s.found(id)
	}
	if out.SecretString == nil {
		return source.Keys{}, fmt.Errorf("secret %s: no SecretString", id)
	}
	keys, err := source.ParseKeys(*out.SecretString)
	if err != nil {
		return source.Keys{}, fmt.Errorf("secret %s: %w", id, err)
	}
	s.put(id, entry{keys: keys, until: now.Add(s.ttl), version: aws.ToString(out.VersionId), created: aws.ToTime(out.CreatedDate)})
	return keys, nil
}

// Previous returns the keys of the secret's previous version (AWSPREVIOUS)
// while its rotation window lasts: from the current version's creation,
// for the store's window. The caller asks only after the current keys
// refused a signature, so an attacker's bad signatures cost at most one
// call per secret and TTL: the answer (keys, absence) is kept until the
// window ends or the current version is read again (the TTL), when the
// label is checked again — removing AWSPREVIOUS revokes the old secret
// within the TTL; a failed call is retried after a fifth of the TTL at
// the soonest. Outside a window it makes no
// call and returns ErrNoPrevious; an error wrapping inbox.ErrUnavailable
// when Secrets Manager cannot answer.
func (s *Store) Previous(ctx context.Context, id string) (source.Keys, error) {
	now := s.now()
	s.mu.Lock()
	cur, ok := s.cache[id]
	s.mu.Unlock()
	if !ok || cur.err != nil || !now.Before(cur.until) {
		// The current version first, fresh (a second rotation may have
		// made the one cached the previous); without one there is no
		// window.
		if _, err := s.Get(ctx, id); err != nil {
			return source.Keys{}, err
		}
		s.mu.Lock()
		cur = s.cache[id]
		s.mu.Unlock()
	}
	end := cur.created.Add(s.window)
	if s.window <= 0 || cur.created.IsZero() || !now.Before(end) {
		return source.Keys{}, ErrNoPrevious
	}
	s.mu.Lock()
	p, ok := s.prev[id]
	s.mu.Unlock()
	if ok && p.version == cur.version && now.Before(p.until) {
		return p.keys, p.err
	}
	stage := "AWSPREVIOUS"
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id, VersionStage: &stage})
	var nf *smtypes.ResourceNotFoundException
	// The answer holds until the window ends or the current version is
	// read again, whichever is first: the label is checked again with it,
	// so an operator who removes AWSPREVIOUS (a leaked old secret) is
	// obeyed by warm instances within the TTL, not a window later.
	if cur.until.Before(end) {
		end = cur.until
	}
	switch {
	case errors.As(err, &nf):
		p = entry{err: ErrNoPrevious, until: end, version: cur.version}
	case err != nil:
		err = awserr.Wrap("get previous secret "+id, err)
		s.putPrev(id, entry{err: err, until: now.Add(s.neg), version: cur.version})
		return source.Keys{}, err
	case out.SecretString == nil:
		p = entry{err: ErrNoPrevious, until: end, version: cur.version}
	default:
		keys, perr := source.ParseKeys(*out.SecretString)
		if perr != nil {
			// A previous version that does not parse is not a secret to
			// accept; the current one decides alone.
			p = entry{err: ErrNoPrevious, until: end, version: cur.version}
		} else {
			p = entry{keys: keys, until: end, version: cur.version}
		}
	}
	s.putPrev(id, p)
	return p.keys, p.err
}

func (s *Store) putPrev(id string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.prev) >= maxEntries {
		now := s.now()
		for k, old := range s.prev {
			if !now.Before(old.until) {
				delete(s.prev, k)
			}
		}
		// Still full (over a thousand secrets inside their windows): one
		// goes, so that every answer is still remembered and no secret
		// costs a call per request.
		for k := range s.prev {
			if len(s.prev) < maxEntries {
				break
			}
			delete(s.prev, k)
		}
	}
	s.prev[id] = e
}

// maxEntries bounds the cache: account names come from request paths, so
// an attacker could otherwise grow it with one made-up account per request.
const maxEntries = 1024

func (s *Store) put(id string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxEntries {
		now := s.now()
		for k, old := range s.cache {
			if !now.Before(old.until) || old.err != nil {
				delete(s.cache, k)
			}
		}
	}
	if len(s.cache) >= maxEntries && e.err != nil {
		return // full of found secrets: do not cache another absence
	}
	s.cache[id] = e
}

func (s *Store) isKnown(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[id]
}

// found remembers an id that had a secret, and gives its lookup back to
// the miss budget.
func (s *Store) found(id string) {
	s.mu.Lock()
	if len(s.known) < maxEntries {
		s.known[id] = true
	}
	s.mu.Unlock()
	s.refund()
}

// refund gives a lookup that found no absence back to the miss budget.
func (s *Store) refund() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = min(MissBurst, s.tokens+1)
}

// spend takes one lookup from the miss budget, refilled at MissRate up
// to MissBurst; false when none is left.
func (s *Store) spend(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.filled.IsZero() && now.After(s.filled) {
		s.tokens = min(MissBurst, s.tokens+now.Sub(s.filled).Seconds()*MissRate)
	}
	s.filled = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// IsNotFound reports whether err means the secret does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
