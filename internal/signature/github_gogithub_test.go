package signature

// Cross-checks of the GitHub scheme against go-github v74. This file needs
// github.com/google/go-querystring v1.1.0 (a dependency of go-github) in
// go.mod and go.sum; see github_test.go for the tests that need no SDK.

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v74/github"
)

// TestGitHubCrossCheckGoGitHub checks the scheme against go-github. go-github
// only verifies (it has no signer), so the other direction is an agreement
// table: both sides accept and refuse the same headers, except where this
// scheme is stricter by design.
func TestGitHubCrossCheckGoGitHub(t *testing.T) {
	g := githubNew(t)
	for _, f := range githubLoadCorpus(t) {
		t.Run(f.name, func(t *testing.T) {
			for _, enc := range []struct {
				name, contentType string
				body              []byte
			}{
				{"json", "application/json", f.body},
				{"form", "application/x-www-form-urlencoded; charset=utf-8", githubForm(f.body)},
			} {
				t.Run(enc.name, func(t *testing.T) {
					r := githubRequest(enc.body, f.event, githubGUID(f.name))
					r.Header.Set("Content-Type", enc.contentType)
					if err := g.Sign(&r, githubSecret, testNow); err != nil {
						t.Fatal(err)
					}
					sig := r.Header.Get(GitHubSignatureHeader)
					if err := github.ValidateSignature(sig, enc.body, githubSecret); err != nil {
						t.Errorf("github.ValidateSignature(our %s): %v", GitHubSignatureHeader, err)
					}
					if err := github.ValidateSignature(r.Header.Get(GitHubLegacySignatureHeader), enc.body, githubSecret); err != nil {
						t.Errorf("github.ValidateSignature(our %s): %v", GitHubLegacySignatureHeader, err)
					}
					if err := github.ValidateSignature(sig, enc.body, githubSecretOld); err == nil {
						t.Errorf("github.ValidateSignature(other secret): got nil, want an error")
					}

					hr, err := http.NewRequest(http.MethodPost, "https://hooks.example.com/github", bytes.NewReader(enc.body))
					if err != nil {
						t.Fatal(err)
					}
					hr.Header = r.Header.Clone()
					payload, err := github.ValidatePayload(hr, githubSecret)
					if err != nil {
						t.Fatalf("github.ValidatePayload: %v", err)
					}
					if !bytes.Equal(payload, f.body) {
						t.Errorf("github.ValidatePayload: got a payload of %d bytes, want the corpus file (%d bytes)", len(payload), len(f.body))
					}

					got, err := g.Identify(r)
					if err != nil {
						t.Fatalf("Identify: %v", err)
					}
					if want := github.DeliveryID(hr); got.ID != want {
						t.Errorf("Identify: got id %q, want %q (go-github)", got.ID, want)
					}
					if want := github.WebHookType(hr); got.Type != want {
						t.Errorf("Identify: got type %q, want %q (go-github)", got.Type, want)
					}
					if github.EventForType(got.Type) == nil {
						return // classic projects events: go-github no longer models them
					}
					ev, err := github.ParseWebHook(got.Type, payload)
					if why, ok := githubGoGitHubMisfits[f.name]; ok {
						if err == nil {
							t.Errorf("github.ParseWebHook(%q): got nil, want its known error (%s); drop the entry", got.Type, why)
						}
						return
					}
					if err != nil {
						t.Fatalf("github.ParseWebHook(%q): %v", got.Type, err)
					}
					if a, ok := ev.(interface{ GetAction() string }); ok && a.GetAction() != got.Attributes["action"] {
						t.Errorf("Identify: got action %q, want %q (go-github)", got.Attributes["action"], a.GetAction())
					}
				})
			}
		})
	}
}

// githubGoGitHubMisfits are corpus payloads go-github v74's structs cannot
// decode. They are go-github's model, not the payloads, that are out of
// date; Identify, which decodes no more than it needs, accepts them.
var githubGoGitHubMisfits = map[string]string{
	"check_run/rerequested.payload.json":                   "timestamps without a T",
	"check_run/rerequested.with-organization.payload.json": "timestamps without a T",
	"discussion/answered.payload.json":                     "answer_chosen_by is a user object",
	"sponsorship/downgraded.payload.json":                  "changes.tier.from is a tier object",
}

// TestGitHubAgreesWithGoGitHub runs both verifiers over the same header
// values. The only disagreements allowed are the ones this scheme makes on
// purpose: it refuses go-github's sha1= and sha512= signatures.
func TestGitHubAgreesWithGoGitHub(t *testing.T) {
	body := githubPROpened(t)
	g := githubNew(t)
	valid := githubHex(body, githubSecret)
	sha1Sig := "sha1=" + hex.EncodeToString(macOf(sha1.New, githubSecret, body))
	sha512Sig := "sha512=" + hex.EncodeToString(macOf(sha512.New, githubSecret, body))
	tests := []struct {
		name     string
		sig      string
		stricter bool // we refuse what go-github accepts
	}{
		{"valid", valid, false},
		{"upper-case hex", "sha256=" + strings.ToUpper(strings.TrimPrefix(valid, "sha256=")), false},
		{"other secret", githubHex(body, githubSecretOld), false},
		{"other body", githubHex([]byte("{}"), githubSecret), false},
		{"no prefix", strings.TrimPrefix(valid, "sha256="), false},
		{"truncated", valid[:len(valid)-2], false},
		{"extended", valid + "00", false},
		{"non-hex", valid[:len(valid)-1] + "g", false},
		{"upper-case prefix", "SHA256=" + strings.TrimPrefix(valid, "sha256="), false},
		{"empty", "", false},
		{"sha1", sha1Sig, true},
		{"sha512", sha512Sig, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sdk := github.ValidateSignature(tt.sig, body, githubSecret) == nil
			var sigs []string
			if tt.sig != "" {
				sigs = []string{tt.sig}
			}
			ours := g.Verify(githubRequest(body, "pull_request", "d1", sigs...), githubSecrets, testNow) == nil
			want := sdk && !tt.stricter
			if ours != want {
				t.Errorf("Verify accepted: got %v, want %v (go-github accepted: %v)", ours, want, sdk)
			}
		})
	}
}

// BenchmarkGitHubGoGitHub is go-github's verify-and-parse path over the
// body BenchmarkGitHub uses, for comparison with its sub-benchmarks.
func BenchmarkGitHubGoGitHub(b *testing.B) {
	body := githubPROpened(b)
	sig := githubHex(body, githubSecret)
	benchRun(b, "ValidatePayloadFromBody+ParseWebHook", len(body), func(b *testing.B) {
		payload, err := github.ValidatePayloadFromBody("application/json", bytes.NewReader(body), sig, githubSecret)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := github.ParseWebHook("pull_request", payload); err != nil {
			b.Fatal(err)
		}
	})
}
