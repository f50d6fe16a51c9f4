package signature

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseStripeHeader is the test's own reading of a header: the t value and
// every v1 value, in order.
func parseStripeHeader(header string) (t string, v1 []string) {
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = append(v1, v)
		}
	}
	return t, v1
}

// Placeholders in a fuzzed header stand for the v1 signature of the fuzzed
// body at the line's own t: sigCur under stripeSecret, sigOld under
// stripeSecretOld, sigUpper as sigCur in upper-case hex. They let the fuzzer
// reach the accepted path with any body and header shape. Seeds carry no
// literal valid signature: one would pin every byte of a 6 KB body, and the
// fuzzer's byte-by-byte minimizer would spend its whole 60 s budget on it.
const (
	sigCur   = "{sig}"
	sigOld   = "{old}"
	sigUpper = "{SIG}"
)

// expandSigs replaces the placeholders in each line of header.
func expandSigs(header string, body []byte) string {
	if !strings.Contains(header, "{") {
		return header
	}
	lines := strings.Split(header, "\n")
	for i, line := range lines {
		ts, _ := parseStripeHeader(line)
		cur := stripeHex(body, stripeSecret, ts)
		lines[i] = strings.NewReplacer(
			sigCur, cur,
			sigOld, stripeHex(body, stripeSecretOld, ts),
			sigUpper, strings.ToUpper(cur),
		).Replace(line)
	}
	return strings.Join(lines, "\n")
}

// placehold is the inverse of expandSigs, for seeds.
func placehold(header string, body []byte) string {
	lines := strings.Split(header, "\n")
	for i, line := range lines {
		ts, _ := parseStripeHeader(line)
		cur := stripeHex(body, stripeSecret, ts)
		lines[i] = strings.NewReplacer(
			cur, sigCur,
			strings.ToUpper(cur), sigUpper,
			stripeHex(body, stripeSecretOld, ts), sigOld,
		).Replace(line)
	}
	return strings.Join(lines, "\n")
}

func FuzzStripeVerify(f *testing.F) {
	wrong := stripeHex([]byte("other body"), stripeSecret, testTS)
	for _, c := range loadStripeCorpus(f) {
		f.Add("t="+testTS+",v1="+sigCur, c.body)
		f.Add("t="+testTS+",v1="+wrong+",v1="+sigOld, c.body)
		f.Add(placehold(SignStripe(c.body, stripeSecretOld, testNow.Add(-time.Minute)), c.body), c.body)
	}
	body := invoicePaid(f)
	for _, tc := range stripeMalformedCases(body) {
		h := strings.Join(tc.headers, "\n")
		if len(h) > 8<<10 {
			continue // a 1 MiB seed makes every mutation crawl
		}
		b := changed(body, tc.body)
		f.Add(placehold(h, b), b)
	}

	s := mustNewStripe(f, Options{})
	secrets := [][]byte{stripeSecret, stripeSecretOld}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		header = expandSigs(header, body)
		r := stripeRequest(body, fuzzHeaders(header)...)

		if !fuzzVerify(t, s, r, secrets, testNow) {
			return
		}

		// Accepted: the header must be exactly what SignStripe produces for
		// its timestamp and one of the secrets.
		if strings.Contains(header, "\n") {
			t.Fatalf("Verify(%q): accepted several Stripe-Signature headers", header)
		}
		tsRaw, v1 := parseStripeHeader(header)
		n, perr := strconv.ParseInt(tsRaw, 10, 64)
		if perr != nil {
			t.Fatalf("Verify(%q): accepted timestamp %q: %v", header, tsRaw, perr)
		}
		ts := time.Unix(n, 0)
		if d := testNow.Sub(ts); d > DefaultTolerance || d < -DefaultTolerance {
			t.Fatalf("Verify(%q): accepted a timestamp %s away from now", header, d)
		}
		for _, secret := range secrets {
			wantT, wantV1 := parseStripeHeader(SignStripe(body, secret, ts))
			if tsRaw != wantT {
				continue
			}
			for _, v := range v1 {
				if strings.EqualFold(v, wantV1[0]) {
					return
				}
			}
		}
		t.Fatalf("Verify(%q): got nil, but no v1 equals SignStripe for t=%s and a configured secret", header, tsRaw)
	})
}

func FuzzStripeIdentify(f *testing.F) {
	for _, c := range loadStripeCorpus(f) {
		f.Add(c.body)
	}
	for _, tc := range stripeIdentifyCases {
		f.Add([]byte(tc.body))
	}

	s := mustNewStripe(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := fuzzIdentify(t, s, stripeRequest(body))
		if !ok {
			return
		}
		if id.ID == "" || id.Type == "" {
			t.Fatalf("Identify(%q): got %+v with an empty id or type, want an error", body, id)
		}
	})
}
