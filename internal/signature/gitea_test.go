package signature

import (
	"crypto/sha256"
	"testing"
)

// giteaPush is shaped like a Gitea push delivery (values made up here).
const giteaPush = `{"ref":"refs/heads/main","before":"28e1879d029cb852e4844d9c718537df08844e03","after":"bffeb74224043ba2feb48d137756c8a9331c449a","compare_url":"https://gitea.example.com/octo/app/compare/28e1879d029cb852e4844d9c718537df08844e03...bffeb74224043ba2feb48d137756c8a9331c449a","commits":[{"id":"bffeb74224043ba2feb48d137756c8a9331c449a","message":"Webhooks example\n","url":"https://gitea.example.com/octo/app/commit/bffeb74224043ba2feb48d137756c8a9331c449a","author":{"name":"Octo","email":"octo@example.com","username":"octo"},"timestamp":"2024-07-26T00:40:00Z"}],"repository":{"id":140,"name":"app","full_name":"octo/app","private":false},"pusher":{"id":1,"login":"octo"},"sender":{"id":1,"login":"octo"}}`

var giteaKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewGitea(o) },
	header:    GiteaSignatureHeader,
	enc:       encHex,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("gitea-webhook-secret-7Hq2Zp9Lx4"),
	secretOld: []byte("gitea-webhook-secret-old-1Vm6Rt"),
	headers: map[string][]string{
		GiteaDeliveryHeader:  {"f6266f16-1bf3-46a5-9ea4-602e06ead473"},
		GiteaEventHeader:     {"push"},
		GiteaEventTypeHeader: {"push"},
	},
	bodies: []identifyCase{{name: "push", body: giteaPush, want: Identity{
		ID: "f6266f16-1bf3-46a5-9ea4-602e06ead473", Type: "push", Attributes: map[string]string{"event_type": "push"}}}},
	identify: []identifyCase{
		{name: "any object", body: `{}`, want: Identity{ID: "f6266f16-1bf3-46a5-9ea4-602e06ead473", Type: "push", Attributes: map[string]string{"event_type": "push"}}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "array", body: `[{}]`},
		{name: "truncated", body: `{"ref":"x"`},
		{name: "form-encoded", body: `payload=%7B%7D`},
	},
}

func TestGitea(t *testing.T) { runBodyHMACKind(t, giteaKind) }

// TestGiteaHeaders: the id and the event must be there, once, printable.
func TestGiteaHeaders(t *testing.T) {
	g := giteaKind.scheme(t)
	for name, h := range map[string][2]string{
		"no delivery": {GiteaDeliveryHeader, ""}, "no event": {GiteaEventHeader, ""},
		"control char": {GiteaDeliveryHeader, "a\x01b"}, "trailing space": {GiteaEventHeader, "push "},
	} {
		r := giteaKind.request([]byte(giteaPush))
		r.Header.Del(h[0])
		if h[1] != "" {
			r.Header.Set(h[0], h[1])
		}
		if _, err := identifyNoPanic(t, g, r); err == nil {
			t.Errorf("%s: Identify accepted it", name)
		}
	}
}

func giteaMalformedRuns(tb testing.TB) []malformedRun { return bodyHMACMalformedRuns(tb, giteaKind) }

func TestGiteaVerifyMalformed(t *testing.T) { runMalformed(t, giteaMalformedRuns(t)) }

func FuzzGiteaVerify(f *testing.F) { fuzzBodyHMACVerify(f, giteaKind) }

func FuzzGiteaIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, giteaKind, func(body []byte, id Identity) bool {
		return id.ID == "f6266f16-1bf3-46a5-9ea4-602e06ead473" && id.Type == "push"
	})
}

func BenchmarkGitea(b *testing.B) { benchBodyHMAC(b, giteaKind) }
