package ingest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/secrets"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// secretsManager is Secrets Manager holding the given secrets, counting
// the calls.
type secretsManager struct {
	values map[string]string
	calls  atomic.Int64
}

func (m *secretsManager) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	m.calls.Add(1)
	v, ok := m.values[aws.ToString(in.SecretId)]
	if !ok || in.VersionStage != nil {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("not found")}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v), VersionId: aws.String("v1")}, nil
}

// TestUnsignedFlood: 500 unsigned POSTs to made-up accounts cost no
// Secrets Manager call where the source declares its accounts (a list, a
// pattern, or none at all: then a path naming one is no endpoint, 404),
// and at most the miss budget (secrets.MissBurst and secrets.MissRate a
// second) where it serves any account; every one is answered as a bad
// signature on the real account is, status and body alike (also once the
// budget is spent and no lookup is made), and a real tenant's delivery in
// the middle of the flood is accepted.
func TestUnsignedFlood(t *testing.T) {
	for _, tt := range []struct {
		name, accounts string
		maxCalls       func(time.Duration) int64
	}{
		{"no accounts", ``, func(time.Duration) int64 { return 0 }},
		{"a list", `,"options":{"accounts":["acct_real"]}`, func(time.Duration) int64 { return 0 }},
		{"a pattern", `,"options":{"accounts":{"pattern":"acct_real|acct_[0-9]{4}"}}`, func(time.Duration) int64 { return 0 }},
		{"any", `,"options":{"accounts":"any"}`, func(d time.Duration) int64 {
			return secrets.MissBurst + int64(math.Ceil(d.Seconds()*secrets.MissRate))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, err := source.Parse(`[{"name":"stripe","kind":"stripe"`+tt.accounts+`}]`, "wi/")
			if err != nil {
				t.Fatal(err)
			}
			sm := &secretsManager{values: map[string]string{"wi/stripe": testSecret, "wi/stripe/acct_real": "whsec_real"}}
			store := &memStore{events: map[string]inbox.Event{}}
			h, err := New(Config{
				Sources: set, Secrets: secrets.NewStore(sm, 5*time.Minute), IsSecretNotFound: secrets.IsNotFound,
				Store: store, Queue: &fakeQueue{}, MaxBodyBytes: 4096,
				Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: func() time.Time { return testNow },
			})
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{h: h, store: store}
			real := func(id string) (int, map[string]string) {
				req := signedRequest(strings.Replace(invoiceBody, "evt_1", id, 1), "whsec_real", testNow)
				req.PathParameters = map[string]string{"source": "stripe", "account": "acct_real"}
				if tt.accounts == "" {
					req = signedRequest(strings.Replace(invoiceBody, "evt_1", id, 1), testSecret, testNow)
				}
				return do(t, f, req)
			}
			if status, body := real("evt_before"); status != http.StatusAccepted {
				t.Fatalf("before the flood: %d %v", status, body)
			}
			// A bad signature on the real account, for comparison.
			bad := signedRequest(invoiceBody, "whsec_wrong", testNow)
			bad.PathParameters = map[string]string{"source": "stripe", "account": "acct_real"}
			if tt.accounts == "" {
				bad.PathParameters = map[string]string{"source": "stripe"}
			}
			badStatus, badBody := do(t, f, bad)
			before := sm.calls.Load()
			start := time.Now()
			answers := map[string]int{}
			for i := range 500 {
				req := signedRequest(invoiceBody, "", testNow)
				delete(req.Headers, "stripe-signature")
				req.PathParameters = map[string]string{"source": "stripe", "account": fmt.Sprintf("acct_%08d", i)}
				status, body := do(t, f, req)
				answers[fmt.Sprint(status, " ", body["error"])]++
				if i == 250 {
					if status, body := real("evt_during"); status != http.StatusAccepted {
						t.Errorf("a real delivery during the flood: %d %v", status, body)
					}
				}
			}
			calls, bound := sm.calls.Load()-before, tt.maxCalls(time.Since(start))
			if calls > bound {
				t.Errorf("%d GetSecretValue calls for 500 made-up accounts, want at most %d", calls, bound)
			}
			want := fmt.Sprint(badStatus, " ", badBody["error"])
			if tt.accounts == "" {
				want = "404 not found"
			}
			if answers[want] != 500 {
				t.Errorf("answers %v, want 500 × %q", answers, want)
			}
		})
	}
}

// TestEventsKeepTheirScope: ingest gives each event the scope its parts
// will be stored in — its source's and account's, a shared one a source
// opts into, or none for a source kept unscoped — so that the processor
// never decides it from the handler's plan.
func TestEventsKeepTheirScope(t *testing.T) {
	set, err := source.Parse(`[
		{"name":"stripe","kind":"stripe","options":{"accounts":"any"}},
		{"name":"stripe-eu","kind":"stripe","options":{"effects_scope":"billing"}},
		{"name":"legacy","kind":"stripe","options":{"effects_scope":"unscoped"}}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	store := &memStore{events: map[string]inbox.Event{}}
	h, err := New(Config{
		Sources: set, IsSecretNotFound: func(error) bool { return false }, Store: store, Queue: &fakeQueue{}, MaxBodyBytes: 4096,
		Secrets: fakeSecrets{"wi/stripe": {[]byte(testSecret)}, "wi/stripe/acct_1": {[]byte(testSecret)}, "wi/stripe-eu": {[]byte(testSecret)}, "wi/legacy": {[]byte(testSecret)}},
		Logger:  slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{h: h, store: store}
	for _, tt := range []struct {
		params   map[string]string
		key      string
		scope    string
		unscoped bool
	}{
		{map[string]string{"source": "stripe"}, "stripe##evt_1", "stripe#", false},
		{map[string]string{"source": "stripe", "account": "acct_1"}, "stripe#acct_1#evt_1", "stripe#acct_1", false},
		{map[string]string{"source": "stripe-eu"}, "stripe-eu##evt_1", "billing#", false},
		{map[string]string{"source": "legacy"}, "legacy##evt_1", "", true},
	} {
		req := signedRequest(invoiceBody, testSecret, testNow)
		req.PathParameters = tt.params
		if status, body := do(t, f, req); status != http.StatusAccepted {
			t.Fatalf("%v: %d %v", tt.params, status, body)
		}
		ev := store.events[tt.key]
		if ev.PartScope() != tt.scope || ev.Unscoped != tt.unscoped {
			t.Errorf("%s: scope %q (unscoped %t), want %q (%t)", tt.key, ev.PartScope(), ev.Unscoped, tt.scope, tt.unscoped)
		}
	}
}

// TestTenantNamedOnAnotherPath: on a per-tenant source with listed
// accounts, an unsigned delivery posted to one account's path naming
// another is answered as a bad signature whether the other is listed or
// not: the answer lists no accounts.
func TestTenantNamedOnAnotherPath(t *testing.T) {
	f := newFixture(t)
	set, err := source.Parse(`[{"name":"stripe","kind":"stripe","options":{"account_from":"payload","accounts":["acct_A","acct_B"]}}]`, "wi/")
	if err != nil {
		t.Fatal(err)
	}
	f.h.cfg.Sources = set
	answers := map[string]bool{}
	for _, named := range []string{"acct_B", "acct_zzz"} {
		req := signedRequest(fmt.Sprintf(`{"id":"evt_x","object":"event","account":%q,"type":"invoice.paid"}`, named), "whsec_nobody", testNow)
		req.PathParameters = map[string]string{"source": "stripe", "account": "acct_A"}
		status, body := do(t, f, req)
		answers[fmt.Sprint(status, body["error"])] = true
	}
	if len(answers) != 1 || !answers["401invalid signature"] {
		t.Errorf("answers %v, want one: 401 invalid signature", answers)
	}
}
