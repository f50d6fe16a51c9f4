package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awstest"
	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
	"github.com/webhook-inbox/webhook-inbox/internal/source"
)

// One moto serves the whole package; every test uses its own secret names.
var (
	moto    awstest.Shared
	secrets atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	moto.Stop()
	os.Exit(code)
}

// mustMoto returns the package's moto server, starting it on first use.
func mustMoto(tb testing.TB) *awstest.Server {
	tb.Helper()
	return moto.Get(tb)
}

func mustClient(tb testing.TB) *secretsmanager.Client {
	tb.Helper()
	return secretsmanager.NewFromConfig(mustMoto(tb).Config())
}

// mustSecret creates a secret with a fresh name holding value and returns
// the name.
func mustSecret(tb testing.TB, sm *secretsmanager.Client, value string) string {
	tb.Helper()
	name := fmt.Sprintf("webhook-inbox/stripe/acct_%d", secrets.Add(1))
	_, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String(name), SecretString: aws.String(value),
	})
	if err != nil {
		tb.Fatalf("create secret %s: %v", name, err)
	}
	return name
}

// clock is a settable time source for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var t0 = time.Date(2025, 11, 30, 12, 0, 0, 0, time.UTC)

// newTestStore returns a store over api whose cache runs on the returned clock.
func newTestStore(api API, ttl time.Duration) (*Store, *clock) {
	c := &clock{t: t0}
	s := NewStore(api, ttl)
	s.now = c.now
	return s, c
}

func mustGet(tb testing.TB, s *Store, id string) []string {
	tb.Helper()
	got, err := s.Get(context.Background(), id)
	if err != nil {
		tb.Fatalf("get %s: %v", id, err)
	}
	return strs(got.Signing)
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestGetFromSecretsManager(t *testing.T) {
	sm := mustClient(t)
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{"plain", "  whsec_plain\n", []string{"whsec_plain"}},
		{"rotation list", `{"signing_secrets":["whsec_new","whsec_old"]}`, []string{"whsec_new", "whsec_old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := mustSecret(t, sm, tt.value)
			s, _ := newTestStore(sm, time.Minute)
			if got := mustGet(t, s, id); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRotationAfterTTL(t *testing.T) {
	sm := mustClient(t)
	ctx := context.Background()
	id := mustSecret(t, sm, "whsec_old")
	const ttl = 5 * time.Minute
	s, c := newTestStore(sm, ttl)

	if got, want := mustGet(t, s, id), []string{"whsec_old"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("before rotation: got %q, want %q", got, want)
	}
	_, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId: aws.String(id), SecretString: aws.String(`{"signing_secrets":["whsec_new","whsec_old"]}`),
	})
	if err != nil {
		t.Fatalf("put secret value: %v", err)
	}

	c.set(t0.Add(ttl - time.Nanosecond))
	if got, want := mustGet(t, s, id), []string{"whsec_old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("within ttl: got %q, want the cached %q", got, want)
	}
	c.set(t0.Add(ttl))
	if got, want := mustGet(t, s, id), []string{"whsec_new", "whsec_old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after ttl: got %q, want %q", got, want)
	}
}

func TestMissingSecret(t *testing.T) {
	s, _ := newTestStore(mustClient(t), time.Minute)
	got, err := s.Get(context.Background(), "webhook-inbox/stripe/acct_unknown")
	if !errors.Is(err, ErrNotFound) || !IsNotFound(err) {
		t.Errorf("got %q, %v; want ErrNotFound", got, err)
	}
	if errors.Is(err, inbox.ErrUnavailable) {
		t.Errorf("got %v, which also wraps inbox.ErrUnavailable", err)
	}
}

func TestUnreachable(t *testing.T) {
	port, err := awstest.FreePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	closed := &awstest.Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// One attempt: retrying a closed port only repeats the refusal.
	s, _ := newTestStore(secretsmanager.NewFromConfig(closed.NoRetryConfig()), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := s.Get(ctx, "webhook-inbox/stripe/acct_1")
	if !errors.Is(err, inbox.ErrUnavailable) {
		t.Errorf("got %q, %v; want inbox.ErrUnavailable", got, err)
	}
	if IsNotFound(err) {
		t.Errorf("got %v, which IsNotFound reports as missing", err)
	}
}

// fakeAPI answers GetSecretValue with respond and counts the calls.
type fakeAPI struct {
	respond func(id string) (*secretsmanager.GetSecretValueOutput, error)
	calls   atomic.Int64
}

func (f *fakeAPI) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.calls.Add(1)
	return f.respond(aws.ToString(in.SecretId))
}

func secretString(v string) func(string) (*secretsmanager.GetSecretValueOutput, error) {
	return func(string) (*secretsmanager.GetSecretValueOutput, error) {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
	}
}

func TestCache(t *testing.T) {
	const ttl = 10 * time.Minute // the negative TTL is a fifth: 2 minutes
	type lookup struct {
		at        time.Duration // clock offset of the Get
		wantCalls int64         // API calls made so far, after the Get
	}
	tests := []struct {
		name    string
		respond func(id string) (*secretsmanager.GetSecretValueOutput, error)
		lookups []lookup
		check   func(t *testing.T, got source.Keys, err error)
	}{
		{
			name:    "found is cached for the ttl",
			respond: secretString("whsec_1"),
			lookups: []lookup{{0, 1}, {ttl - time.Nanosecond, 1}, {ttl, 2}, {ttl + time.Second, 2}},
			check: func(t *testing.T, got source.Keys, err error) {
				if want := []string{"whsec_1"}; err != nil || !reflect.DeepEqual(strs(got.Signing), want) {
					t.Errorf("got %q, %v; want %q", got, err, want)
				}
			},
		},
		{
			name: "absence is cached for a fifth of the ttl",
			respond: func(string) (*secretsmanager.GetSecretValueOutput, error) {
				return nil, &smtypes.ResourceNotFoundException{Message: aws.String("Secrets Manager can't find the specified secret.")}
			},
			lookups: []lookup{{0, 1}, {0, 1}, {ttl/5 - time.Nanosecond, 1}, {ttl / 5, 2}},
			check: func(t *testing.T, got source.Keys, err error) {
				if !IsNotFound(err) || errors.Is(err, inbox.ErrUnavailable) || got.Signing != nil {
					t.Errorf("got %q, %v; want ErrNotFound only", got, err)
				}
			},
		},
		{
			name: "outage is not cached",
			respond: func(string) (*secretsmanager.GetSecretValueOutput, error) {
				return nil, errors.New("dial tcp 127.0.0.1:443: connect: connection refused")
			},
			lookups: []lookup{{0, 1}, {0, 2}, {time.Second, 3}},
			check: func(t *testing.T, got source.Keys, err error) {
				if !errors.Is(err, inbox.ErrUnavailable) || IsNotFound(err) || got.Signing != nil {
					t.Errorf("got %q, %v; want inbox.ErrUnavailable only", got, err)
				}
			},
		},
		{
			name: "binary secret is not cached",
			respond: func(string) (*secretsmanager.GetSecretValueOutput, error) {
				return &secretsmanager.GetSecretValueOutput{SecretBinary: []byte("whsec_1")}, nil
			},
			lookups: []lookup{{0, 1}, {0, 2}},
			check: func(t *testing.T, got source.Keys, err error) {
				if err == nil || IsNotFound(err) || errors.Is(err, inbox.ErrUnavailable) {
					t.Errorf("got %q, %v; want a plain error", got, err)
				}
			},
		},
		{
			name:    "unusable secret is not cached",
			respond: secretString(`{"signing_secrets":[]}`),
			lookups: []lookup{{0, 1}, {0, 2}},
			check: func(t *testing.T, got source.Keys, err error) {
				if err == nil || IsNotFound(err) || errors.Is(err, inbox.ErrUnavailable) {
					t.Errorf("got %q, %v; want a plain error", got, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{respond: tt.respond}
			s, c := newTestStore(api, ttl)
			for i, l := range tt.lookups {
				c.set(t0.Add(l.at))
				got, err := s.Get(context.Background(), "webhook-inbox/stripe/acct_1")
				tt.check(t, got, err)
				if calls := api.calls.Load(); calls != l.wantCalls {
					t.Errorf("lookup %d at +%v: got %d calls, want %d", i, l.at, calls, l.wantCalls)
				}
			}
		})
	}
}

func TestCachePerID(t *testing.T) {
	api := &fakeAPI{respond: func(id string) (*secretsmanager.GetSecretValueOutput, error) {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("secret-of-" + id)}, nil
	}}
	s, _ := newTestStore(api, time.Minute)
	for range 2 {
		for _, id := range []string{"a", "b"} {
			if got, want := mustGet(t, s, id), []string{"secret-of-" + id}; !reflect.DeepEqual(got, want) {
				t.Errorf("get %s: got %q, want %q", id, got, want)
			}
		}
	}
	if got := api.calls.Load(); got != 2 {
		t.Errorf("got %d calls, want 2", got)
	}
}

func TestConcurrentGet(t *testing.T) {
	api := &fakeAPI{respond: secretString("whsec_1")}
	s, c := newTestStore(api, time.Minute)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if i%4 == 0 {
				c.set(t0.Add(time.Duration(i) * time.Minute))
			}
			if _, err := s.Get(context.Background(), "webhook-inbox/stripe/acct_1"); err != nil {
				t.Errorf("get: %v", err)
			}
		})
	}
	wg.Wait()
}

// countingAPI counts the calls by the version stage they ask for.
type countingAPI struct {
	API
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingAPI) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.mu.Lock()
	c.calls[aws.ToString(in.VersionStage)]++
	c.mu.Unlock()
	return c.API.GetSecretValue(ctx, in, optFns...)
}

func (c *countingAPI) count(stage string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[stage]
}

// rotated creates a secret whose "whsec_old" was rotated to "whsec_new"
// in Secrets Manager, and a store over it with a rotation window, counting
// its calls, its clock at the real now (the versions' creation times are
// Secrets Manager's).
func rotated(t *testing.T, sm *secretsmanager.Client, window time.Duration) (string, *countingAPI, *Store, *clock) {
	t.Helper()
	id := mustSecret(t, sm, "whsec_old")
	if _, err := sm.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String("whsec_new")}); err != nil {
		t.Fatal(err)
	}
	api := &countingAPI{API: sm, calls: map[string]int{}}
	s, c := newTestStore(api, 5*time.Minute)
	s.WithRotationWindow(window)
	c.set(time.Now())
	return id, api, s, c
}

// TestPreviousDuringRotationWindow: after a Secrets Manager rotation the
// previous version is served for the window from the current version's
// creation, with one call per secret and rotation however often it is
// asked; after the window, none, and no call.
func TestPreviousDuringRotationWindow(t *testing.T) {
	sm := mustClient(t)
	ctx := context.Background()
	const window = time.Hour
	id, api, s, c := rotated(t, sm, window)
	if got := mustGet(t, s, id); !reflect.DeepEqual(got, []string{"whsec_new"}) {
		t.Fatalf("current: %q", got)
	}
	for range 50 {
		prev, err := s.Previous(ctx, id)
		if err != nil || !reflect.DeepEqual(strs(prev.Signing), []string{"whsec_old"}) {
			t.Fatalf("previous: %q, %v", strs(prev.Signing), err)
		}
	}
	if n := api.count("AWSPREVIOUS"); n != 1 {
		t.Errorf("%d AWSPREVIOUS calls for 50 asks, want 1", n)
	}
	// The current version is read again after its TTL, and the label
	// with it: one more call.
	c.set(time.Now().Add(10 * time.Minute))
	if _, err := s.Previous(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := api.count("AWSPREVIOUS"); n != 2 {
		t.Errorf("%d AWSPREVIOUS calls after the TTL, want 2", n)
	}
	// After the window: no previous, and no call.
	c.set(time.Now().Add(window + time.Minute))
	for range 10 {
		if _, err := s.Previous(ctx, id); !errors.Is(err, ErrNoPrevious) {
			t.Fatalf("after the window: got %v, want ErrNoPrevious", err)
		}
	}
	if n := api.count("AWSPREVIOUS"); n != 2 {
		t.Errorf("%d AWSPREVIOUS calls after the window, want still 2", n)
	}

	// A secret never rotated has no previous: one call, remembered.
	fresh := mustSecret(t, sm, "whsec_only")
	s2, c2 := newTestStore(api, 5*time.Minute)
	s2.WithRotationWindow(window)
	c2.set(time.Now())
	for range 5 {
		if _, err := s2.Previous(ctx, fresh); !errors.Is(err, ErrNoPrevious) {
			t.Fatalf("never rotated: got %v, want ErrNoPrevious", err)
		}
	}
	if n := api.count("AWSPREVIOUS"); n != 3 {
		t.Errorf("%d AWSPREVIOUS calls, want 3 (one more for the new secret)", n)
	}
	// With no window configured, never a call.
	s3, c3 := newTestStore(api, 5*time.Minute)
	c3.set(time.Now())
	if _, err := s3.Previous(ctx, id); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("no window: got %v", err)
	}
	if n := api.count("AWSPREVIOUS"); n != 3 {
		t.Errorf("%d AWSPREVIOUS calls with no window, want still 3", n)
	}
}

// TestRevokePrevious: an operator who removes the AWSPREVIOUS label from a
// leaked old version is obeyed by a warm instance once the current version
// is read again (the TTL), not at the end of the rotation window. (Over a
// fake: kumo has no UpdateSecretVersionStage.)
func TestRevokePrevious(t *testing.T) {
	var revoked atomic.Bool
	api := &fakeAPI{respond: func(string) (*secretsmanager.GetSecretValueOutput, error) {
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("whsec_new"), VersionId: aws.String("v2"), CreatedDate: aws.Time(t0)}, nil
	}}
	stage := &stagedAPI{fakeAPI: api, previous: func() (*secretsmanager.GetSecretValueOutput, error) {
		if revoked.Load() {
			return nil, &smtypes.ResourceNotFoundException{}
		}
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("whsec_old"), VersionId: aws.String("v1")}, nil
	}}
	s, c := newTestStore(stage, 5*time.Minute)
	s.WithRotationWindow(24 * time.Hour)
	ctx := context.Background()
	mustGet(t, s, "id")
	if _, err := s.Previous(ctx, "id"); err != nil {
		t.Fatalf("previous before the revocation: %v", err)
	}
	revoked.Store(true)
	c.set(t0.Add(4 * time.Minute))
	if _, err := s.Previous(ctx, "id"); err != nil {
		t.Errorf("within the TTL: %v, want the cached previous still", err)
	}
	c.set(t0.Add(6 * time.Minute))
	if _, err := s.Previous(ctx, "id"); !errors.Is(err, ErrNoPrevious) {
		t.Errorf("after the TTL: got %v, want ErrNoPrevious (the window runs a day)", err)
	}
}

// stagedAPI answers AWSPREVIOUS with previous, other reads as fakeAPI.
type stagedAPI struct {
	*fakeAPI
	previous func() (*secretsmanager.GetSecretValueOutput, error)
}

func (s *stagedAPI) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opt ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if aws.ToString(in.VersionStage) == "AWSPREVIOUS" {
		return s.previous()
	}
	return s.fakeAPI.GetSecretValue(ctx, in, opt...)
}

// TestPreviousCacheFull: with more secrets inside their windows than the
// cache holds, each answer is still remembered: a secret costs one call,
// not one per request.
func TestPreviousCacheFull(t *testing.T) {
	ctx := context.Background()
	id, api, s, _ := rotated(t, mustClient(t), time.Hour)
	for i := range maxEntries {
		s.prev[fmt.Sprintf("filler-%d", i)] = entry{until: time.Now().Add(time.Hour)}
	}
	for range 20 {
		if _, err := s.Previous(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := api.count("AWSPREVIOUS"); n != 1 {
		t.Errorf("%d AWSPREVIOUS calls with the cache full, want 1", n)
	}
}

// TestMissBudget: lookups of made-up ids (a flood of unsigned requests to
// random accounts) call Secrets Manager at most MissBurst times at once
// and MissRate a second after, each refused one wrapping
// inbox.ErrUnavailable; an id found before is read again whenever its
// entry ends, budget or not, and a new real id is found once the budget
// refills.
func TestMissBudget(t *testing.T) {
	api := &fakeAPI{respond: func(id string) (*secretsmanager.GetSecretValueOutput, error) {
		if strings.HasPrefix(id, "p/s/real") {
			return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("whsec_real")}, nil
		}
		return nil, &smtypes.ResourceNotFoundException{}
	}}
	s, c := newTestStore(api, 5*time.Minute)
	mustGet(t, s, "p/s/real")
	refused := 0
	for i := range 500 {
		_, err := s.Get(context.Background(), fmt.Sprintf("p/s/random-%d", i))
		switch {
		case errors.Is(err, ErrMissBudget) && errors.Is(err, inbox.ErrUnavailable):
			refused++
		case !errors.Is(err, ErrNotFound):
			t.Fatalf("random-%d: %v", i, err)
		}
	}
	if got := api.calls.Load(); got != 1+MissBurst || refused != 500-MissBurst {
		t.Errorf("flood: %d calls, %d refused; want %d calls (the real id and the burst), %d refused", got, refused, 1+MissBurst, 500-MissBurst)
	}
	// The real id's entry ends while the budget is spent: read again.
	c.set(t0.Add(6 * time.Minute))
	before := api.calls.Load()
	for i := range 20 {
		_, _ = s.Get(context.Background(), fmt.Sprintf("p/s/random-b%d", i))
	}
	mustGet(t, s, "p/s/real")
	// 6 minutes refilled the burst: 10 misses, then nothing until the
	// next second; the known id costs its one call.
	if got := api.calls.Load() - before; got != MissBurst+1 {
		t.Errorf("after 6 minutes: %d calls, want %d", got, MissBurst+1)
	}
	if _, err := s.Get(context.Background(), "p/s/real-2"); !errors.Is(err, ErrMissBudget) {
		t.Errorf("a new real id with the budget spent: got %v, want ErrMissBudget", err)
	}
	c.set(t0.Add(6*time.Minute + time.Second))
	if got := mustGet(t, s, "p/s/real-2"); len(got) != 1 {
		t.Errorf("a new real id a second later: %v", got)
	}
}

// TestMissBudgetSpentOnlyByMisses: a burst of concurrent first requests
// for one real secret (a cold start) is one call and refuses none, and
// lookups that fail for an outage give their budget back: only lookups
// that find no secret spend it.
func TestMissBudgetSpentOnlyByMisses(t *testing.T) {
	var down atomic.Bool
	release := make(chan struct{})
	api := &fakeAPI{respond: func(id string) (*secretsmanager.GetSecretValueOutput, error) {
		<-release
		if down.Load() {
			return nil, errors.New("connection reset")
		}
		return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("whsec_" + id)}, nil
	}}
	s, c := newTestStore(api, 5*time.Minute)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 50 {
		wg.Go(func() {
			if _, err := s.Get(context.Background(), "p/s/acct_1"); err != nil {
				refused.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let them all wait on the one call
	close(release)
	wg.Wait()
	if n := api.calls.Load(); n != 1 || refused.Load() != 0 {
		t.Errorf("50 concurrent first requests: %d calls, %d refused; want 1 call, none refused", n, refused.Load())
	}
	down.Store(true)
	for i := range 3 * MissBurst {
		if _, err := s.Get(context.Background(), fmt.Sprintf("p/s/acct_down_%d", i)); errors.Is(err, ErrMissBudget) {
			t.Fatalf("lookup %d during an outage: %v; an outage spends no budget", i, err)
		}
	}
	c.set(t0) // no refill
	down.Store(false)
	if _, err := s.Get(context.Background(), "p/s/acct_2"); err != nil {
		t.Errorf("after the outage: %v", err)
	}
}
