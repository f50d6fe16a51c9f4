package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Accounts is which accounts a source serves: none (the zero value), a
// list, the names a pattern matches, or any valid name. Only "any" makes
// a request for an account that has no secret cost a Secrets Manager
// call (a miss, which package secrets remembers and rate-limits); a list
// or a pattern refuses the others first.
type Accounts struct {
	any     bool
	list    map[string]bool
	pattern *regexp.Regexp
}

// AnyAccount is the Accounts that serves every valid account name.
var AnyAccount = Accounts{any: true}

// AccountList is the Accounts that serves the names given.
func AccountList(names ...string) Accounts {
	a := Accounts{list: make(map[string]bool, len(names))}
	for _, n := range names {
		a.list[n] = true
	}
	return a
}

// None reports whether the source has no accounts.
func (a Accounts) None() bool { return !a.any && a.list == nil && a.pattern == nil }

// Any reports whether every valid account name is served.
func (a Accounts) Any() bool { return a.any }

func (a Accounts) allows(account string) bool {
	switch {
	case a.any:
		return true
	case a.pattern != nil:
		return a.pattern.MatchString(account)
	}
	return a.list[account]
}

// maxAccounts bounds a listed source's accounts: a longer list belongs
// in a pattern.
const maxAccounts = 1000

// parseAccounts reads the accounts option: absent or null (none), "any",
// a list of account names, or {"pattern": RE2 matched against the whole
// name}.
func parseAccounts(raw json.RawMessage) (Accounts, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Accounts{}, nil
	}
	var word string
	if err := json.Unmarshal(raw, &word); err == nil {
		if word != "any" {
			return Accounts{}, fmt.Errorf("%q: want \"any\", a list of names or {\"pattern\": …}", word)
		}
		return AnyAccount, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		switch {
		case len(list) == 0:
			return Accounts{}, errors.New("an empty list: leave accounts out for a source without accounts")
		case len(list) > maxAccounts:
			return Accounts{}, fmt.Errorf("%d names, over %d: use a pattern", len(list), maxAccounts)
		}
		for _, n := range list {
			if !validAccount(n) {
				return Accounts{}, fmt.Errorf("account %q: want 1-128 of [A-Za-z0-9._-], not starting with '.'", n)
			}
		}
		return AccountList(list...), nil
	}
	var p struct {
		Pattern string `json:"pattern"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Pattern == "" {
		return Accounts{}, errors.New(`want "any", a list of names or {"pattern": …}`)
	}
	re, err := regexp.Compile(`^(?:` + p.Pattern + `)$`)
	if err != nil {
		return Accounts{}, fmt.Errorf("pattern: %w", err)
	}
	return Accounts{pattern: re}, nil
}
