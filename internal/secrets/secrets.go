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

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awserr"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// ErrNotFound means no secret exists under the id (the endpoint does not exist).
var ErrNotFound = errors.New("secrets: not found")

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
	now func() time.Time

	mu    sync.Mutex
	cache map[string]entry
}

type entry struct {
	keys  source.Keys
	err   error
	until time.Time
}

// NewStore returns a store that caches found secrets for ttl and absent ones
// for a fifth of it (a new secret is picked up within that time).
func NewStore(api API, ttl time.Duration) *Store {
	return &Store{api: api, ttl: ttl, neg: ttl / 5, now: time.Now, cache: map[string]entry{}}
}

// Get returns the keys stored under id (see source.ParseKeys: the
// SecretString itself, or {"signing_secrets":[…]} with several secrets
// during rotation). It returns ErrNotFound when the secret does not exist
// and an error wrapping inbox.ErrUnavailable when Secrets Manager cannot
// answer.
func (s *Store) Get(ctx context.Context, id string) (source.Keys, error) {
	now := s.now()
	s.mu.Lock()
	e, ok := s.cache[id]
	s.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.keys, e.err
	}
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	var nf *smtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		s.put(id, entry{err: ErrNotFound, until: now.Add(s.neg)})
		return source.Keys{}, ErrNotFound
	case err != nil:
		return source.Keys{}, awserr.Wrap("get secret "+id, err)
	}
	if out.SecretString == nil {
		return source.Keys{}, fmt.Errorf("secret %s: no SecretString", id)
	}
	keys, err := source.ParseKeys(*out.SecretString)
	if err != nil {
		return source.Keys{}, fmt.Errorf("secret %s: %w", id, err)
	}
	s.put(id, entry{keys: keys, until: now.Add(s.ttl)})
	return keys, nil
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

// IsNotFound reports whether err means the secret does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
