package signature

import (
	"crypto/sha256"
	"testing"
)

// bitbucketPush is shaped like a Bitbucket Cloud repo:push payload
// (values made up here).
const bitbucketPush = `{"push":{"changes":[{"new":{"type":"branch","name":"main","target":{"type":"commit","hash":"709d658dc5b6d6afcd46049c2f332ee3f515a67d","date":"2024-07-26T00:40:00+00:00","message":"Webhooks example\n"}},"old":{"type":"branch","name":"main","target":{"type":"commit","hash":"1e65c05c1d5171631d92438a13901ca7dae9618c"}},"created":false,"forced":false,"closed":false}]},"repository":{"type":"repository","full_name":"octo/app","name":"app","uuid":"{39ad3cbd-0f5a-4a2b-8d0e-7e0c9c3f1a11}"},"actor":{"type":"user","display_name":"Octo","uuid":"{d301aafa-d676-4ee0-88be-962be7417567}"}}`

var bitbucketKind = bodyHMACKind{
	newScheme: func(o Options) (Scheme, error) { return NewBitbucket(o) },
	header:    BitbucketSignatureHeader,
	prefix:    "sha256=",
	enc:       encHex,
	hash:      sha256.New,
	size:      sha256.Size,
	secret:    []byte("bitbucket-webhook-secret-4Kt8Wq2Zn"),
	secretOld: []byte("bitbucket-webhook-secret-old-6Hp3"),
	headers: map[string][]string{
		BitbucketRequestHeader: {"8a4b2c6d-0e1f-4a3b-9c5d-7e8f9a0b1c2d"},
		BitbucketEventHeader:   {"repo:push"},
		BitbucketHookHeader:    {"cb1d4e8a-2f3b-4c5d-8e9f-0a1b2c3d4e5f"},
	},
	bodies: []identifyCase{{name: "repo:push", body: bitbucketPush, want: Identity{
		ID: "8a4b2c6d-0e1f-4a3b-9c5d-7e8f9a0b1c2d", Type: "repo:push", Attributes: map[string]string{"hook_uuid": "cb1d4e8a-2f3b-4c5d-8e9f-0a1b2c3d4e5f"}}}},
	identify: []identifyCase{
		{name: "any object", body: `{"push":{}}`, want: Identity{ID: "8a4b2c6d-0e1f-4a3b-9c5d-7e8f9a0b1c2d", Type: "repo:push", Attributes: map[string]string{"hook_uuid": "cb1d4e8a-2f3b-4c5d-8e9f-0a1b2c3d4e5f"}}},
		{name: "empty", body: ``},
		{name: "null", body: `null`},
		{name: "array", body: `[]`},
		{name: "truncated", body: `{"push":{}`},
	},
}

func TestBitbucket(t *testing.T) { runBodyHMACKind(t, bitbucketKind) }

func bitbucketMalformedRuns(tb testing.TB) []malformedRun {
	return bodyHMACMalformedRuns(tb, bitbucketKind)
}

func TestBitbucketVerifyMalformed(t *testing.T) { runMalformed(t, bitbucketMalformedRuns(t)) }

func FuzzBitbucketVerify(f *testing.F) { fuzzBodyHMACVerify(f, bitbucketKind) }

func FuzzBitbucketIdentify(f *testing.F) {
	fuzzBodyHMACIdentify(f, bitbucketKind, func(body []byte, id Identity) bool { return id.Type == "repo:push" })
}

func BenchmarkBitbucket(b *testing.B) { benchBodyHMAC(b, bitbucketKind) }
