package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Keys are an endpoint's secret material as stored in its secret.
type Keys struct {
	// Signing are the secrets (or, for asymmetric schemes, the public keys)
	// a signature may match: several while a secret is being rotated.
	Signing [][]byte
	// VerifyTokens are the shared tokens of a GET subscription handshake
	// (Meta's hub.verify_token).
	VerifyTokens [][]byte
}

// ParseKeys reads a SecretString: a JSON object
//
//	{"signing_secrets": ["current", "previous"], "verify_token": "…"}
//
// or, for anything that is not a JSON object, the trimmed string itself as
// the one signing secret.
func ParseKeys(v string) (Keys, error) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "{") {
		if t == "" {
			return Keys{}, errors.New("empty secret")
		}
		return Keys{Signing: [][]byte{[]byte(t)}}, nil
	}
	var doc struct {
		SigningSecrets []string `json:"signing_secrets"`
		VerifyToken    string   `json:"verify_token"`
		VerifyTokens   []string `json:"verify_tokens"`
	}
	// Unknown fields are allowed: rotation tooling may keep notes there.
	if err := json.Unmarshal([]byte(t), &doc); err != nil {
		return Keys{}, fmt.Errorf("secret JSON: %w", err)
	}
	var k Keys
	for _, s := range doc.SigningSecrets {
		if s != "" {
			k.Signing = append(k.Signing, []byte(s))
		}
	}
	for _, s := range append(doc.VerifyTokens, doc.VerifyToken) {
		if s != "" {
			k.VerifyTokens = append(k.VerifyTokens, []byte(s))
		}
	}
	if len(k.Signing) == 0 && len(k.VerifyTokens) == 0 {
		return Keys{}, errors.New(`secret JSON: "signing_secrets" is empty`)
	}
	return k, nil
}
