package source

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

func mustParse(tb testing.TB, sourcesJSON, prefix string) *Set {
	tb.Helper()
	s, err := Parse(sourcesJSON, prefix)
	if err != nil {
		tb.Fatalf("Parse(%s): %v", sourcesJSON, err)
	}
	return s
}

func TestParse(t *testing.T) {
	name64 := strings.Repeat("a", 64)
	name65 := strings.Repeat("a", 65)
	tests := []struct {
		name      string
		json      string
		wantNames []string
		// wantErr lists substrings the error must contain; nil means success.
		wantErr []string
	}{
		{"single", `[{"name":"stripe","kind":"stripe"}]`, []string{"stripe"}, nil},
		{"multiple", `[{"name":"stripe","kind":"stripe"},{"name":"stripe-eu_2","kind":"stripe","options":{"tolerance":"10m"}}]`, []string{"stripe", "stripe-eu_2"}, nil},
		{"tolerance 10m", `[{"name":"s","kind":"stripe","options":{"tolerance":"10m"}}]`, []string{"s"}, nil},
		{"empty options", `[{"name":"s","kind":"stripe","options":{}}]`, []string{"s"}, nil},
		{"name 64 chars", `[{"name":"` + name64 + `","kind":"stripe"}]`, []string{name64}, nil},

		{"empty string", ``, nil, []string{"SOURCES"}},
		{"bad json", `[{"name":"s",`, nil, []string{"SOURCES"}},
		{"object not list", `{"name":"s","kind":"stripe"}`, nil, []string{"SOURCES"}},
		{"unknown field", `[{"name":"s","kind":"stripe","secret":"whsec_x"}]`, nil, []string{"SOURCES", "secret"}},
		{"unknown option", `[{"name":"s","kind":"stripe","options":{"tolerence":"1m"}}]`, nil, []string{"SOURCES", "tolerence"}},
		{"trailing data", `[{"name":"s","kind":"stripe"}] [{"name":"t","kind":"nope"}]`, nil, []string{"SOURCES"}},
		{"empty list", `[]`, nil, []string{"SOURCES", "no sources"}},
		{"null", `null`, nil, []string{"SOURCES", "no sources"}},
		{"uppercase name", `[{"name":"Stripe","kind":"stripe"}]`, nil, []string{"SOURCES[0]", `"Stripe"`}},
		{"name with space", `[{"name":"my stripe","kind":"stripe"}]`, nil, []string{"SOURCES[0]", `"my stripe"`}},
		{"name with slash", `[{"name":"a/b","kind":"stripe"}]`, nil, []string{"SOURCES[0]"}},
		{"name with hash", `[{"name":"a#b","kind":"stripe"}]`, nil, []string{"SOURCES[0]"}},
		{"name 65 chars", `[{"name":"` + name65 + `","kind":"stripe"}]`, nil, []string{"SOURCES[0]", name65}},
		{"empty name", `[{"name":"","kind":"stripe"}]`, nil, []string{"SOURCES[0]", `""`}},
		{"missing name", `[{"kind":"stripe"}]`, nil, []string{"SOURCES[0]"}},
		{"duplicate name", `[{"name":"s","kind":"stripe"},{"name":"s","kind":"stripe"}]`, nil, []string{"SOURCES[1]", "duplicate", `"s"`}},
		{"unknown kind", `[{"name":"s","kind":"ebay"}]`, nil, []string{"SOURCES[0] s", "ebay"}},
		{"empty kind", `[{"name":"s","kind":""}]`, nil, []string{"SOURCES[0] s"}},
		{"tolerance 0s", `[{"name":"s","kind":"stripe","options":{"tolerance":"0s"}}]`, nil, []string{"SOURCES[0] s", "tolerance"}},
		{"tolerance 0", `[{"name":"s","kind":"stripe","options":{"tolerance":"0"}}]`, nil, []string{"SOURCES[0] s", "tolerance"}},
		{"tolerance negative", `[{"name":"s","kind":"stripe","options":{"tolerance":"-1m"}}]`, nil, []string{"SOURCES[0] s", "tolerance"}},
		{"tolerance not a duration", `[{"name":"s","kind":"stripe","options":{"tolerance":"abc"}}]`, nil, []string{"SOURCES[0] s", "tolerance"}},
		{"tolerance a number", `[{"name":"s","kind":"stripe","options":{"tolerance":300}}]`, nil, []string{"SOURCES"}},
		{"second entry bad", `[{"name":"ok","kind":"stripe"},{"name":"bad","kind":"stripe","options":{"tolerance":"-5s"}}]`, nil, []string{"SOURCES[1] bad", "tolerance"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.json, "webhook-inbox/")
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Parse(%s) = %v, want an error", tt.json, s.Names())
				}
				if s != nil {
					t.Errorf("Parse(%s) returned a set with its error", tt.json)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.json, err)
			}
			got := s.Names()
			slices.Sort(got)
			if !slices.Equal(got, tt.wantNames) {
				t.Errorf("Names() = %v, want %v", got, tt.wantNames)
			}
			for _, n := range tt.wantNames {
				src, err := s.Lookup(n, "")
				if err != nil {
					t.Fatalf("Lookup(%q): %v", n, err)
				}
				if src.Name != n || src.Kind != "stripe" || src.Scheme == nil {
					t.Errorf("Lookup(%q) = %+v, want name %q kind stripe and a scheme", n, src, n)
				}
			}
		})
	}
}

// TestParseTolerance proves the configured tolerance reaches the scheme: a
// signature 8 minutes old fails the 5 minute default and passes "10m".
func TestParseTolerance(t *testing.T) {
	now := time.Date(2024, 7, 26, 12, 0, 0, 0, time.UTC)
	secret := []byte("whsec_test")
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	req := signature.Request{
		Method: http.MethodPost,
		Header: http.Header{signature.StripeHeader: {signature.SignStripe(body, secret, now.Add(-8*time.Minute))}},
		Body:   body,
	}
	tests := []struct {
		name    string
		json    string
		wantErr error
	}{
		{"default", `[{"name":"s","kind":"stripe"}]`, signature.ErrTooOld},
		{"10m", `[{"name":"s","kind":"stripe","options":{"tolerance":"10m"}}]`, nil},
		{"7m", `[{"name":"s","kind":"stripe","options":{"tolerance":"7m"}}]`, signature.ErrTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := mustParse(t, tt.json, "").Lookup("s", "")
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Scheme.Verify(req, [][]byte{secret}, now); !errors.Is(err, tt.wantErr) {
				t.Errorf("Verify: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	s := mustParse(t, `[{"name":"stripe","kind":"stripe","options":{"accounts":"any"}},{"name":"shopify-like","kind":"stripe","options":{"accounts":"any"}}]`, "")
	tests := []struct {
		name    string
		source  string
		account string
		wantErr bool
	}{
		{"no account", "stripe", "", false},
		{"shop domain", "shopify-like", "shop.myshopify.com", false},
		{"slug", "stripe", "acct_1", false},
		{"numeric", "stripe", "12345", false},
		{"mixed case and dash", "stripe", "Acct-1", false},
		{"128 chars", "stripe", strings.Repeat("a", 128), false},

		{"unknown source", "paypal", "", true},
		{"unknown source with account", "paypal", "acct_1", true},
		{"empty source", "", "", true},
		{"case differs", "Stripe", "", true},
		{"dot dot slash", "stripe", "../x", true},
		{"dot dot", "stripe", "..", true},
		{"hidden", "stripe", ".hidden", true},
		{"129 chars", "stripe", strings.Repeat("a", 129), true},
		{"slash", "stripe", "a/b", true},
		{"hash", "stripe", "a#b", true},
		{"space", "stripe", "a b", true},
		{"backslash", "stripe", `a\b`, true},
		{"percent", "stripe", "a%2Fb", true},
		{"non-ascii", "stripe", "café", true},
		{"nul", "stripe", "a\x00b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := s.Lookup(tt.source, tt.account)
			if tt.wantErr {
				if !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrNoAccount) {
					t.Fatalf("Lookup(%q, %q): got %v, want ErrUnknown or ErrNoAccount", tt.source, tt.account, err)
				}
				if errors.Is(err, ErrUnknown) && src != nil {
					t.Errorf("Lookup(%q, %q) returned %+v with its error", tt.source, tt.account, src)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup(%q, %q): %v", tt.source, tt.account, err)
			}
			if src.Name != tt.source {
				t.Errorf("got source %q, want %q", src.Name, tt.source)
			}
		})
	}
}

func TestSecretID(t *testing.T) {
	tests := []struct {
		name, prefix, source, account, want string
	}{
		{"no account", "webhook-inbox/prod/", "stripe", "", "webhook-inbox/prod/stripe"},
		{"account", "webhook-inbox/prod/", "shopify", "shop.myshopify.com", "webhook-inbox/prod/shopify/shop.myshopify.com"},
		{"empty prefix", "", "stripe", "acct_1", "stripe/acct_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, `[{"name":"`+tt.source+`","kind":"stripe"}]`, tt.prefix)
			if got := s.SecretID(tt.source, tt.account); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzLookup(f *testing.F) {
	for _, a := range []string{"", "acct_1", "shop.myshopify.com", "../x", ".hidden", "a/b", "a#b", strings.Repeat("a", 129)} {
		f.Add(a)
	}
	s := mustParse(f, `[{"name":"s","kind":"stripe","options":{"accounts":"any"}}]`, "p/")
	f.Fuzz(func(t *testing.T, account string) {
		src, err := s.Lookup("s", account)
		if err != nil {
			if !errors.Is(err, ErrNoAccount) {
				t.Fatalf("Lookup(%q): got %v, want ErrNoAccount", account, err)
			}
			return
		}
		if src == nil {
			t.Fatalf("Lookup(%q) returned neither a source nor an error", account)
		}
		if account == "" {
			return
		}
		if strings.ContainsAny(account, "/#\\") || strings.HasPrefix(account, ".") || len(account) > 128 {
			t.Fatalf("Lookup accepted account %q", account)
		}
		if got, want := s.SecretID("s", account), "p/s/"+account; got != want {
			t.Fatalf("SecretID: got %q, want %q", got, want)
		}
	})
}

func TestAccountFromPayload(t *testing.T) {
	set, err := Parse(`[{"name":"stripe","kind":"stripe","options":{"account_from":"payload","accounts":"any"}},{"name":"slack","kind":"slack","options":{"account_from":"payload","accounts":{"pattern":"T[A-Z0-9]+"}}}]`, "p/")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"stripe", "slack"} {
		if s, _ := set.Lookup(n, ""); !s.Tenants {
			t.Errorf("%s: not per-tenant", n)
		}
	}
	for cfg, want := range map[string]string{
		`[{"name":"gh","kind":"github","options":{"account_from":"payload"}}]`: "github deliveries name no account (it works for slack, stripe)",
		`[{"name":"s","kind":"stripe","options":{"account_from":"header"}}]`:   `account_from "header"`,
		`[{"name":"s","kind":"stripe","options":{"account_from":"payload"}}]`:  "the source declares no accounts",
	} {
		if _, err := Parse(cfg, "p/"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", cfg, err, want)
		}
	}
}

// TestAccounts: a source serves its own endpoint and the accounts it
// declares, and no other: without accounts a path naming one is no
// endpoint (ErrUnknown); with them, any other is ErrNoAccount, returned
// with the source so that ingest answers it as a bad signature.
func TestAccounts(t *testing.T) {
	set := mustParse(t, `[
		{"name":"none","kind":"stripe"},
		{"name":"list","kind":"stripe","options":{"accounts":["acct_a","acct_b"]}},
		{"name":"pattern","kind":"stripe","options":{"accounts":{"pattern":"acct_[a-z]+"}}},
		{"name":"any","kind":"stripe","options":{"accounts":"any"}}]`, "p/")
	for _, tt := range []struct {
		source, account string
		want            error
	}{
		{"none", "", nil},
		{"none", "acct_a", ErrUnknown},
		{"list", "", nil},
		{"list", "acct_a", nil},
		{"list", "acct_c", ErrNoAccount},
		{"pattern", "acct_zz", nil},
		{"pattern", "acct_1", ErrNoAccount},
		{"pattern", "xacct_a", ErrNoAccount},
		{"pattern", "acct_ax", nil},
		{"any", "whatever.example", nil},
		{"any", "../x", ErrNoAccount},
	} {
		src, err := set.Lookup(tt.source, tt.account)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s/%s: %v", tt.source, tt.account, err)
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("%s/%s: got %v, want %v", tt.source, tt.account, err, tt.want)
		case errors.Is(tt.want, ErrNoAccount) && src == nil:
			t.Errorf("%s/%s: no source with ErrNoAccount", tt.source, tt.account)
		}
	}
	for cfg, want := range map[string]string{
		`[{"name":"s","kind":"stripe","options":{"accounts":"some"}}]`:                           `"some": want "any"`,
		`[{"name":"s","kind":"stripe","options":{"accounts":[]}}]`:                               "an empty list",
		`[{"name":"s","kind":"stripe","options":{"accounts":["a/b"]}}]`:                          `account "a/b"`,
		`[{"name":"s","kind":"stripe","options":{"accounts":{"pattern":"("}}}]`:                  "pattern: error parsing regexp",
		`[{"name":"s","kind":"stripe","options":{"accounts":{"regexp":"a"}}}]`:                   `want "any"`,
		`[{"name":"s","kind":"stripe","options":{"accounts":7}}]`:                                `want "any"`,
		`[{"name":"s","kind":"stripe","options":{"effects_scope":"Bad#"}}]`:                      "effects_scope",
		`[{"name":"s","kind":"stripe","options":{"livemode":"prod"}}]`:                           `livemode "prod": want "live"`,
		`[{"name":"s","kind":"stripe","options":{"effects_scope":"unscoped","accounts":"any"}}]`: "only for a source without accounts",
		`[{"name":"s","kind":"github","options":{"livemode":"test"}}]`:                           "only Stripe events have a mode",
	} {
		if _, err := Parse(cfg, "p/"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", cfg, err, want)
		}
	}
}

// TestLivemode: a Stripe source takes live events unless it says
// otherwise; other kinds have no mode.
func TestLivemode(t *testing.T) {
	set := mustParse(t, `[{"name":"live","kind":"stripe"},{"name":"test","kind":"stripe","options":{"livemode":"test"}},{"name":"both","kind":"stripe","options":{"livemode":"any"}},{"name":"gh","kind":"github"}]`, "p/")
	if got, want := set.Livemodes(), map[string]string{"live": "live", "test": "test", "both": "any"}; !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestScopes: a source's scope is its own name, or the one it shares,
// account by account; the members of a scope are the sources in it.
func TestScopes(t *testing.T) {
	set := mustParse(t, `[{"name":"stripe","kind":"stripe","options":{"accounts":"any"}},{"name":"stripe-eu","kind":"stripe","options":{"accounts":"any","effects_scope":"stripe"}},{"name":"old","kind":"stripe","options":{"effects_scope":"unscoped"}},{"name":"gh","kind":"github"}]`, "p/")
	k := func(src string) inbox.Key { return inbox.Key{Source: src, Account: "acct_1", EventID: "e"} }
	for src, want := range map[string]string{"stripe": "stripe#acct_1", "stripe-eu": "stripe#acct_1", "gh": "gh#acct_1", "gone": "gone#acct_1"} {
		if got := set.ScopeOf(k(src)); got != want {
			t.Errorf("ScopeOf(%s): got %q, want %q", src, got, want)
		}
	}
	if got := set.Members("stripe#acct_1", k("stripe")); !slices.Equal(got, []string{"stripe", "stripe-eu"}) {
		t.Errorf("Members: got %v", got)
	}
}
