// Package source holds the configured webhook sources: which endpoint name
// uses which signature scheme with which options, and where its signing
// secret lives.
package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// ErrUnknown means no source is configured under the requested name, or the
// account part of the path is not a valid account name.
var ErrUnknown = errors.New("source: unknown")

// Source is one configured endpoint: POST /webhooks/{name}[/{account}].
type Source struct {
	Name   string
	Kind   string
	Scheme signature.Scheme
	// Tenants says one URL serves several accounts of the provider, each
	// with its own secret, and the delivery names its account (Stripe
	// Connect's "account", Slack's "team_id"): that name, unverified,
	// only chooses the secret (SecretID(name, account)); the event is
	// trusted, and keyed under that account, only once that secret
	// verified it. The scheme implements signature.Tenanter.
	Tenants bool
	// Accounts is which accounts the source serves, each under its own
	// secret (POST /webhooks/{name}/{account}, or named by the delivery
	// with Tenants); the endpoint without an account is the source's own.
	// A request naming any other account is refused before any secret is
	// looked up.
	Accounts Accounts
	// Livemode is, for a Stripe source, which mode its events must be
	// in: "live" (the default), "test", or "any" (option livemode); the
	// shipped Stripe handlers refuse the other. Empty for other kinds.
	Livemode string
	// EffectsScope names the key space of its events' business parts
	// (facts, entities, outbox rows), per account: its own name unless
	// the source opts into sharing another's (option effects_scope).
	// Unscoped (effects_scope "unscoped", for a source without accounts
	// only) keeps the one key space of the releases before scopes, which
	// every unscoped source shares: an upgraded single-tenant deployment
	// keeps its parts where they are.
	EffectsScope string
	Unscoped     bool
}

// Scope is the scope of the parts of an event of the source's under key k
// (see inbox.Event.PartScope): two sources, or two accounts of one
// source, never share one unless a source opted in with effects_scope,
// and then only account by account.
func (s *Source) Scope(k inbox.Key) string {
	name := s.EffectsScope
	if name == "" {
		name = s.Name
	}
	return inbox.ScopeOf(name, k)
}

// UnscopedParts is the effects_scope that keeps a source's parts in the
// key space of the releases before scopes (see Source.Unscoped).
const UnscopedParts = "unscoped"

// The values of a Stripe source's livemode option.
const (
	LivemodeLive = "live"
	LivemodeTest = "test"
	LivemodeAny  = "any"
)

// Set is the validated list of sources, looked up by name.
type Set struct {
	byName map[string]*Source
	prefix string
}

// config is the JSON shape of one entry of SOURCES.
type config struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Options struct {
		// Tolerance is a Go duration ("5m"); it cannot be zero.
		Tolerance string `json:"tolerance"`
		// URL is the public URL the provider calls, for schemes that sign it.
		URL  string      `json:"url"`
		HMAC hmacOptions `json:"hmac"`
		// AccountFrom "payload" makes the source per-tenant (Source.Tenants).
		AccountFrom string `json:"account_from"`
		// EffectsScope is Source.EffectsScope.
		EffectsScope string `json:"effects_scope"`
		// Accounts is Source.Accounts: "any", a list of names, or
		// {"pattern": RE2}; absent, the source has none.
		Accounts json.RawMessage `json:"accounts"`
		// Livemode is Source.Livemode.
		Livemode string `json:"livemode"`
	} `json:"options"`
}

// hmacOptions is the JSON shape of signature.HMACOptions.
type hmacOptions struct {
	Header          string `json:"header"`
	Algorithm       string `json:"algorithm"`
	Encoding        string `json:"encoding"`
	Prefix          string `json:"prefix"`
	TimestampHeader string `json:"timestamp_header"`
	Template        string `json:"template"`
	IDHeader        string `json:"id_header"`
	IDPath          string `json:"id_path"`
	TypeHeader      string `json:"type_header"`
	TypePath        string `json:"type_path"`
}

// Parse validates SOURCES (a JSON list of {"name","kind","options"}) and the
// secrets prefix. Every problem is reported, never silently defaulted.
func Parse(sourcesJSON, secretsPrefix string) (*Set, error) {
	var list []config
	dec := json.NewDecoder(strings.NewReader(sourcesJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("SOURCES: %w", err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return nil, errors.New("SOURCES: data after the list")
	}
	if len(list) == 0 {
		return nil, errors.New("SOURCES: no sources configured")
	}
	s := &Set{byName: make(map[string]*Source, len(list)), prefix: secretsPrefix}
	for i, c := range list {
		if !validName(c.Name, 64) {
			return nil, fmt.Errorf("SOURCES[%d]: name %q: want 1-64 of [a-z0-9_-]", i, c.Name)
		}
		if _, dup := s.byName[c.Name]; dup {
			return nil, fmt.Errorf("SOURCES[%d]: duplicate name %q", i, c.Name)
		}
		var o signature.Options
		if c.Options.Tolerance != "" {
			d, err := time.ParseDuration(c.Options.Tolerance)
			if err != nil {
				return nil, fmt.Errorf("SOURCES[%d] %s: tolerance: %w", i, c.Name, err)
			}
			if d <= 0 {
				return nil, fmt.Errorf("SOURCES[%d] %s: tolerance %s: must be positive (timestamp checks cannot be disabled)", i, c.Name, c.Options.Tolerance)
			}
			o.Tolerance = d
		}
		o.URL = c.Options.URL
		o.HMAC = signature.HMACOptions(c.Options.HMAC)
		scheme, err := signature.New(c.Kind, o)
		if err != nil {
			return nil, fmt.Errorf("SOURCES[%d] %s: %w", i, c.Name, err)
		}
		src := &Source{Name: c.Name, Kind: c.Kind, Scheme: scheme, EffectsScope: c.Options.EffectsScope}
		if src.EffectsScope == UnscopedParts {
			src.EffectsScope, src.Unscoped = "", true
		}
		if sc := src.EffectsScope; sc != "" && !validName(sc, 64) {
			return nil, fmt.Errorf("SOURCES[%d] %s: effects_scope %q: want 1-64 of [a-z0-9_-], the name of the key space it shares", i, c.Name, sc)
		}
		switch lm := c.Options.Livemode; {
		case c.Kind != "stripe" && lm != "":
			return nil, fmt.Errorf("SOURCES[%d] %s: livemode: only Stripe events have a mode", i, c.Name)
		case c.Kind != "stripe":
		case lm == "":
			src.Livemode = LivemodeLive
		case lm == LivemodeLive || lm == LivemodeTest || lm == LivemodeAny:
			src.Livemode = lm
		default:
			return nil, fmt.Errorf("SOURCES[%d] %s: livemode %q: want %q (the default), %q or %q", i, c.Name, lm, LivemodeLive, LivemodeTest, LivemodeAny)
		}
		if src.Accounts, err = parseAccounts(c.Options.Accounts); err != nil {
			return nil, fmt.Errorf("SOURCES[%d] %s: accounts: %w", i, c.Name, err)
		}
		switch c.Options.AccountFrom {
		case "":
		case "payload":
			if _, ok := scheme.(signature.Tenanter); !ok {
				return nil, fmt.Errorf("SOURCES[%d] %s: account_from payload: %s deliveries name no account (it works for %s)", i, c.Name, c.Kind, strings.Join(tenantKinds(), ", "))
			}
			if src.Accounts.None() {
				return nil, fmt.Errorf("SOURCES[%d] %s: account_from payload: the source declares no accounts (give it \"accounts\": a list, {\"pattern\": …} or \"any\")", i, c.Name)
			}
			src.Tenants = true
		default:
			return nil, fmt.Errorf("SOURCES[%d] %s: account_from %q: want \"payload\" or nothing", i, c.Name, c.Options.AccountFrom)
		}
		if src.Unscoped && !src.Accounts.None() {
			return nil, fmt.Errorf("SOURCES[%d] %s: effects_scope %q: only for a source without accounts (one key space for several tenants is what scopes prevent)", i, c.Name, UnscopedParts)
		}
		s.byName[c.Name] = src
	}
	return s, nil
}

// tenantKinds lists the kinds whose deliveries name their account.
func tenantKinds() []string {
	var out []string
	for _, k := range signature.Kinds() {
		if sc, err := signature.New(k, signature.Options{}); err == nil {
			if _, ok := sc.(signature.Tenanter); ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// Tenant is the account a per-tenant source's unverified delivery names,
// when it names a valid one: it only chooses the secret to verify with.
func (s *Source) Tenant(r signature.Request) (string, bool) {
	t, ok := s.Scheme.(signature.Tenanter)
	if !s.Tenants || !ok {
		return "", false
	}
	a, ok := t.Tenant(r)
	if !ok || !validAccount(a) {
		return "", false
	}
	return a, true
}

// ErrNotLookedUp means a secret store refused to look an endpoint's
// secret up at all (a budget of lookups that find nothing is spent):
// ingest answers a request for an account as it answers a bad signature,
// so that whether a lookup was made says nothing of the account.
var ErrNotLookedUp = errors.New("source: secret not looked up")

// ErrNoAccount means a request names an account the source does not
// serve: the answer is the one for a bad signature, and no secret is
// looked up for it.
var ErrNoAccount = errors.New("source: no such account")

// Serves reports whether the source serves account: the source's own
// endpoint ("") always, another account when Accounts allows it.
func (s *Source) Serves(account string) bool {
	return account == "" || validAccount(account) && s.Accounts.allows(account)
}

// NewSet returns a set of already built sources, for programmatic
// configuration and tests; names are validated as Parse validates them.
func NewSet(secretsPrefix string, sources ...*Source) (*Set, error) {
	s := &Set{byName: make(map[string]*Source, len(sources)), prefix: secretsPrefix}
	for _, src := range sources {
		if !validName(src.Name, 64) || src.Scheme == nil {
			return nil, fmt.Errorf("source %q: invalid name or no scheme", src.Name)
		}
		if src.EffectsScope != "" && !validName(src.EffectsScope, 64) {
			return nil, fmt.Errorf("source %q: invalid effects scope %q", src.Name, src.EffectsScope)
		}
		if _, dup := s.byName[src.Name]; dup {
			return nil, fmt.Errorf("duplicate source %q", src.Name)
		}
		s.byName[src.Name] = src
	}
	return s, nil
}

// Lookup returns the source for a request path's {source} and {account}
// parameters: ErrUnknown for an unconfigured name, or an account on a
// source that has none (no such endpoint); ErrNoAccount, with the source,
// for an account the source does not serve.
func (s *Set) Lookup(name, account string) (*Source, error) {
	src, ok := s.byName[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	case account != "" && src.Accounts.None():
		return nil, fmt.Errorf("%w: %q has no accounts", ErrUnknown, name)
	case !src.Serves(account):
		return src, fmt.Errorf("%w: %q", ErrNoAccount, account)
	}
	return src, nil
}

// SecretID names the Secrets Manager secret of an endpoint: prefix + source
// name, plus "/" + account for per-account endpoints.
func (s *Set) SecretID(name, account string) string {
	if account == "" {
		return s.prefix + name
	}
	return s.prefix + name + "/" + account
}

// ScopeOf is the scope the parts of events of key k are stored in, by
// the source's configuration now: its Scope, or the source's own for a
// source not configured (any more). For an unscoped source it is the
// scope of its own name, where no part of its is ever written.
func (s *Set) ScopeOf(k inbox.Key) string {
	if src, ok := s.byName[k.Source]; ok {
		return src.Scope(k)
	}
	return inbox.ScopeOf(k.Source, k)
}

// Members lists the sources whose events of k's account are stored in
// scope: those whose effects scope it is.
func (s *Set) Members(scope string, k inbox.Key) []string {
	var out []string
	for n, src := range s.byName {
		if !src.Unscoped && src.Scope(inbox.Key{Source: n, Account: k.Account}) == scope {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Livemodes maps each Stripe source's name to its Livemode.
func (s *Set) Livemodes() map[string]string {
	out := map[string]string{}
	for n, src := range s.byName {
		if src.Livemode != "" {
			out[n] = src.Livemode
		}
	}
	return out
}

// Names lists the configured source names.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	return out
}

func validName(n string, max int) bool {
	if n == "" || len(n) > max {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validAccount allows what account identifiers look like in practice (shop
// domains, numeric ids, slugs) and nothing that could escape a key or a
// secret name.
func validAccount(a string) bool {
	if a == "" || len(a) > 128 || a[0] == '.' {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
