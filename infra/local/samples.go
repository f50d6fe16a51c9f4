package local

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/signature"
)

// SamplesDir holds one sample delivery per local source, named after it.
const SamplesDir = "infra/local/samples"

// Sample is a delivery as a provider would send it, minus its signature.
// Header values and an inline Body may use placeholders, replaced afresh
// on every send: {uuid}, {int} (a random positive integer), {now} (unix
// seconds), {now_ms} and {now_rfc3339}.
type Sample struct {
	ContentType string            `json:"content_type"`
	Headers     map[string]string `json:"headers"`
	// Body is the payload inline; BodyFile names a payload file under the
	// repository (the corpus), sent byte for byte, without placeholders.
	Body     string `json:"body"`
	BodyFile string `json:"body_file"`
	// Raw, set by the caller, is sent in place of either, byte for byte
	// (make send -body).
	Raw []byte `json:"-"`
}

// LoadSample reads the sample of the named source.
func LoadSample(root, name string) (Sample, error) {
	b, err := os.ReadFile(filepath.Join(root, SamplesDir, name+".json"))
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Sample{}, fmt.Errorf("sample %s: %w", name, err)
	}
	if (s.Body == "") == (s.BodyFile == "") {
		return Sample{}, fmt.Errorf("sample %s: want exactly one of body and body_file", name)
	}
	return s, nil
}

// Signed renders the sample at now and signs it for src as its provider
// would, returning the request to POST.
func (s Sample) Signed(root string, src LocalSource, now time.Time) (signature.Request, error) {
	body := []byte(fill(s.Body, now))
	switch {
	case s.Raw != nil:
		body = s.Raw
	case s.BodyFile != "":
		b, err := os.ReadFile(filepath.Join(root, s.BodyFile))
		if err != nil {
			return signature.Request{}, err
		}
		body = b
	}
	r := signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
	if s.ContentType != "" {
		r.Header.Set("Content-Type", s.ContentType)
	}
	for k, v := range s.Headers {
		r.Header.Set(k, fill(v, now))
	}
	scheme, err := src.Scheme()
	if err != nil {
		return signature.Request{}, err
	}
	signer, ok := scheme.(signature.Signer)
	if !ok {
		return signature.Request{}, fmt.Errorf("source %s: kind %s cannot sign", src.Name, src.Kind)
	}
	key, err := src.SignWith()
	if err != nil {
		return signature.Request{}, err
	}
	if err := signer.Sign(&r, key, now); err != nil {
		return signature.Request{}, fmt.Errorf("sign for %s: %w", src.Name, err)
	}
	return r, nil
}

// fill replaces the placeholders, each occurrence with its own value.
func fill(s string, now time.Time) string {
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return s
		}
		var v string
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "{uuid}"):
			v = uuid()
		case strings.HasPrefix(rest, "{int}"):
			n, _ := rand.Int(rand.Reader, big.NewInt(1<<53))
			v = strconv.FormatInt(n.Int64()+1, 10)
		case strings.HasPrefix(rest, "{now}"):
			v = strconv.FormatInt(now.Unix(), 10)
		case strings.HasPrefix(rest, "{now_ms}"):
			v = strconv.FormatInt(now.UnixMilli(), 10)
		case strings.HasPrefix(rest, "{now_rfc3339}"):
			v = now.UTC().Format(time.RFC3339)
		default:
			// Not a placeholder (JSON braces): keep it and go on after it.
			j := strings.IndexByte(s[i+1:], '{')
			if j < 0 {
				return s
			}
			return s[:i+1] + fill(s[i+1:], now)
		}
		end := i + strings.IndexByte(rest, '}') + 1
		s = s[:i] + v + s[end:]
	}
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
