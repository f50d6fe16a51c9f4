package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"
)

// Headers of a Slack request. Slack signs every request it sends to an app
// (Events API, slash commands, interactivity) the same way.
const (
	// SlackSignatureHeader carries "v0=" + hex(HMAC-SHA256(signing secret,
	// "v0:" + timestamp + ":" + body)).
	SlackSignatureHeader = "X-Slack-Signature"
	// SlackTimestampHeader carries the unix seconds the signature covers.
	SlackTimestampHeader = "X-Slack-Request-Timestamp"
	// SlackRetryNumHeader numbers an Events API redelivery (1, 2, 3). It is
	// not signed and never part of the dedupe key; Identify keeps it as the
	// attribute "retry_num".
	SlackRetryNumHeader = "X-Slack-Retry-Num"
	// SlackRetryReasonHeader says why Slack redelivered (http_timeout,
	// http_error, …); Identify keeps it as the attribute "retry_reason".
	SlackRetryReasonHeader = "X-Slack-Retry-Reason"
)

// Slack verifies Slack's v0 request signatures and reads the identity of
// Events API envelopes, slash commands and interactivity payloads.
//
// Identity rules, per body:
//   - Events API JSON (type "event_callback"): ID is the body's event_id,
//     which Slack keeps across its retries; Type is event.type (else the
//     top-level type); Created is event_time. An event_callback without an
//     event_id is refused: Slack has sent one for years, and no field set
//     without it is stable and unique. Any other envelope type that carries
//     an event_id is keyed the same way.
//   - "app_rate_limited" carries no event id: ID is "app_rate_limited:" +
//     team_id + ":" + minute_rate_limited (Created is that minute). The
//     notice is about one team and one minute, so a repeat of it is the
//     same fact and may collapse into one event.
//   - "url_verification" is a handshake (see Handshake), never stored:
//     Identify refuses it.
//   - Form-encoded slash commands: ID is trigger_id (unique per invocation),
//     Type is the command ("/deploy").
//   - Form-encoded interactivity (payload=<JSON>): ID is the payload's
//     trigger_id; payloads without one (view_closed, block_suggestion) use
//     "sha256:" + hex SHA-256 of the raw body. Slack never retries
//     interactive or slash-command requests, so the only possible repeat of
//     such a request is a byte-identical replay, which the hash catches.
//     Type is the payload's type ("block_actions").
//
// Retry headers become the attributes "retry_num" and "retry_reason".
type Slack struct {
	v0 slackV0
}

var (
	_ Scheme     = (*Slack)(nil)
	_ Handshaker = (*Slack)(nil)
	_ Signer     = (*Slack)(nil)
)

// NewSlack returns the Slack scheme. The tolerance defaults to Slack's
// documented five minutes; a URL or generic-HMAC settings are refused.
func NewSlack(o Options) (*Slack, error) {
	if err := checkOptions("slack", o, usesTolerance); err != nil {
		return nil, err
	}
	return &Slack{v0: slackV0{
		sigHeader: SlackSignatureHeader,
		tsHeader:  SlackTimestampHeader,
		tolerance: toleranceOr(o, DefaultTolerance),
	}}, nil
}

// Verify implements Scheme: the v0 signature over the raw body must match
// one of secrets, and X-Slack-Request-Timestamp must lie within the
// tolerance around now in either direction.
func (s *Slack) Verify(r Request, secrets [][]byte, now time.Time) error {
	return s.v0.verify(r, secrets, now)
}

// Handshake implements Handshaker: a url_verification body is answered
// with 200 and its challenge as text/plain, the first form Slack's
// url_verification page documents. Other bodies are not handshakes (ok is
// false). The signature is checked again (without the clock, which
// Handshake does not receive), so a wiring mistake cannot turn the
// endpoint into an echo of unsigned challenges; it is checked only for
// handshakes, so ordinary events are not hashed twice. Nor are they
// scanned: a body without "verification" in any string is not a handshake.
func (s *Slack) Handshake(r Request, secrets [][]byte) (Reply, bool, error) {
	if !slackIsJSON(r.Body) || !jsonMayHold(r.Body, "verification") {
		return Reply{}, false, nil
	}
	var f [2][]byte
	if err := jsonFields(r.Body, slackHandshakeFields, f[:]); err != nil {
		return Reply{}, false, nil // not JSON: Identify reports it
	}
	if !jsonStringIs(f[0], "url_verification") {
		return Reply{}, false, nil
	}
	if err := s.v0.recheck(r, secrets); err != nil {
		return Reply{}, false, err
	}
	challenge, ok := jsonString(f[1])
	if !ok || challenge == "" {
		return Reply{}, false, fmt.Errorf("%w: slack: url_verification without a challenge", ErrInvalidPayload)
	}
	return Reply{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}, true, nil
}

var slackHandshakeFields = []string{"type", "challenge"}

// Identify implements Scheme, following the rules in the type's comment.
func (s *Slack) Identify(r Request) (Identity, error) {
	var (
		id  Identity
		err error
	)
	if slackIsJSON(r.Body) {
		id, err = slackIdentifyJSON(r.Body)
	} else {
		id, err = slackIdentifyForm(r.Body)
	}
	if err != nil {
		return Identity{}, err
	}
	if !validID(id.ID) || !validID(id.Type) {
		return Identity{}, fmt.Errorf("%w: slack: id or type empty, too long or not UTF-8", ErrInvalidPayload)
	}
	id.Attributes = slackRetryAttributes(r.Header)
	return id, nil
}

var slackFields = []string{"type", "event_id", "event_time", "event", "team_id", "minute_rate_limited"}

var slackTypeField = []string{"type"}

func slackIdentifyJSON(body []byte) (Identity, error) {
	var f [6][]byte
	var inner [1][]byte // event.type, read in the same pass
	if err := jsonFieldsNested(body, slackFields, f[:], &nested{parent: "event", keys: slackTypeField, out: inner[:]}); err != nil {
		return Identity{}, fmt.Errorf("%w: slack: body is not a JSON object", ErrInvalidPayload)
	}
	// Nearly every body is an event_callback: recognize it without copying.
	typ := "event_callback"
	if string(f[0]) != `"event_callback"` {
		t, ok := jsonString(f[0])
		if !ok || t == "" {
			return Identity{}, fmt.Errorf("%w: slack: missing type", ErrInvalidPayload)
		}
		typ = t
	}
	switch typ {
	case "url_verification":
		return Identity{}, fmt.Errorf("%w: slack: url_verification is a handshake, not an event", ErrInvalidPayload)
	case "app_rate_limited":
		team, ok := jsonString(f[4])
		minute, okMin := jsonInt(f[5])
		if !ok || team == "" || !okMin || minute < 0 {
			return Identity{}, fmt.Errorf("%w: slack: app_rate_limited without team_id or minute_rate_limited", ErrInvalidPayload)
		}
		return Identity{
			ID:      "app_rate_limited:" + team + ":" + strconv.FormatInt(minute, 10),
			Type:    typ,
			Created: time.Unix(minute, 0),
		}, nil
	}
	eventID, ok := jsonString(f[1])
	if !ok || eventID == "" {
		return Identity{}, fmt.Errorf("%w: slack: %s without event_id", ErrInvalidPayload, typ)
	}
	out := Identity{ID: eventID, Type: typ}
	if t, ok := jsonString(inner[0]); ok && t != "" {
		out.Type = t
	}
	if raw := f[2]; raw != nil && string(raw) != "null" {
		sec, ok := jsonInt(raw)
		if !ok || sec < 0 {
			return Identity{}, fmt.Errorf("%w: slack: event_time is not unix seconds", ErrInvalidPayload)
		}
		out.Created = time.Unix(sec, 0)
	}
	return out, nil
}

var slackPayloadFields = []string{"type", "trigger_id"}

// slackIdentifyForm reads slash commands and interactivity payloads. Every
// field it uses must appear exactly once: a repeated key is ambiguous.
func slackIdentifyForm(body []byte) (Identity, error) {
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: slack: body is neither JSON nor a form", ErrInvalidPayload)
	}
	if p, ok := q["payload"]; ok {
		if len(p) != 1 {
			return Identity{}, fmt.Errorf("%w: slack: %d payload fields", ErrInvalidPayload, len(p))
		}
		var f [2][]byte
		if err := jsonFields([]byte(p[0]), slackPayloadFields, f[:]); err != nil {
			return Identity{}, fmt.Errorf("%w: slack: interactivity payload is not a JSON object", ErrInvalidPayload)
		}
		typ, ok := jsonString(f[0])
		if !ok || typ == "" {
			return Identity{}, fmt.Errorf("%w: slack: interactivity payload without type", ErrInvalidPayload)
		}
		if trigger, ok := jsonString(f[1]); ok && trigger != "" {
			return Identity{ID: trigger, Type: typ}, nil
		}
		sum := sha256.Sum256(body)
		return Identity{ID: "sha256:" + hex.EncodeToString(sum[:]), Type: typ}, nil
	}
	cmd, trigger := q["command"], q["trigger_id"]
	if len(cmd) != 1 || len(trigger) != 1 || cmd[0] == "" || trigger[0] == "" {
		return Identity{}, fmt.Errorf("%w: slack: form is neither a slash command nor an interactivity payload", ErrInvalidPayload)
	}
	return Identity{ID: trigger[0], Type: cmd[0]}, nil
}

// slackRetryAttributes keeps Slack's retry headers; they are not signed, so
// only short UTF-8 values are kept, and nil is returned when there are none
// (most deliveries), which costs no allocation.
func slackRetryAttributes(h http.Header) map[string]string {
	// Request.Header holds canonical names, so the map is read directly.
	num, reason := hget(h, SlackRetryNumHeader), hget(h, SlackRetryReasonHeader)
	if num == "" && reason == "" {
		return nil
	}
	var m map[string]string
	for _, kv := range [2][2]string{{"retry_num", num}, {"retry_reason", reason}} {
		if v := kv[1]; v != "" && len(v) <= 64 && utf8.ValidString(v) {
			if m == nil {
				m = make(map[string]string, 2)
			}
			m[kv[0]] = v
		}
	}
	return m
}

// Sign implements Signer: it sets X-Slack-Request-Timestamp to now and
// X-Slack-Signature for r's body under key.
func (s *Slack) Sign(r *Request, key []byte, now time.Time) error {
	return s.v0.sign(r, key, now)
}

// slackIsJSON reports whether body is meant as JSON (its first non-space
// byte opens an object); anything else is read as a form. Slack's
// Content-Type is not needed, and a wrong one cannot make a JSON body
// parse as a form.
func slackIsJSON(body []byte) bool {
	for _, c := range body {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c == '{'
		}
	}
	return false
}

// slackV0 is the "v0" scheme Slack introduced and Zoom adopted unchanged:
// sigHeader = "v0=" + hex(HMAC-SHA256(secret, "v0:" + ts + ":" + body)),
// ts being the unix seconds in tsHeader.
type slackV0 struct {
	sigHeader, tsHeader string
	tolerance           time.Duration
}

// parse reads the timestamp (raw, as the MAC covers it, and as a time) and
// the signature. A version other than v0 is ErrNoMatch: no other version
// exists, and none is ever tried instead.
func (v *slackV0) parse(h http.Header, sig *[sha256.Size]byte) (tsRaw string, ts time.Time, err error) {
	sigRaw, err := header(h, v.sigHeader)
	if err != nil {
		return "", time.Time{}, err
	}
	tsRaw, err = header(h, v.tsHeader)
	if err != nil {
		if errors.Is(err, ErrNotSigned) {
			return "", time.Time{}, fmt.Errorf("%w: %s without %s", ErrMalformedHeader, v.sigHeader, v.tsHeader)
		}
		return "", time.Time{}, err
	}
	ts, ok := canonicalUnix(tsRaw)
	if !ok {
		return "", time.Time{}, fmt.Errorf("%w: bad %s", ErrMalformedHeader, v.tsHeader)
	}
	ver, hexSig, ok := cutByte(sigRaw, '=')
	if !ok || ver == "" {
		return "", time.Time{}, fmt.Errorf("%w: %s has no version", ErrMalformedHeader, v.sigHeader)
	}
	if ver != "v0" {
		return "", time.Time{}, fmt.Errorf("%w: %s version is not v0", ErrNoMatch, v.sigHeader)
	}
	if !unhex(sig[:], hexSig) {
		return "", time.Time{}, fmt.Errorf("%w: %s is not 64 hex digits", ErrMalformedHeader, v.sigHeader)
	}
	return tsRaw, ts, nil
}

func (v *slackV0) verify(r Request, secrets [][]byte, now time.Time) error {
	var sig [sha256.Size]byte
	tsRaw, ts, err := v.parse(r.Header, &sig)
	if err != nil {
		return err
	}
	if err := checkTimestamp(ts, now, v.tolerance); err != nil {
		return err
	}
	return v.match(tsRaw, &sig, r.Body, secrets)
}

// recheck is verify without the clock, for handshakes.
func (v *slackV0) recheck(r Request, secrets [][]byte) error {
	var sig [sha256.Size]byte
	tsRaw, _, err := v.parse(r.Header, &sig)
	if err != nil {
		return err
	}
	return v.match(tsRaw, &sig, r.Body, secrets)
}

func (v *slackV0) match(tsRaw string, sig *[sha256.Size]byte, body []byte, secrets [][]byte) error {
	// The prefix "v0:" + at most 12 digits (canonicalUnix) + ":".
	var pre [16]byte
	n := copy(pre[:], "v0:")
	n += copy(pre[n:], tsRaw)
	pre[n] = ':'
	return matchSHA256(secrets, [][sha256.Size]byte{*sig}, pre[:n+1], body)
}

func (v *slackV0) sign(r *Request, key []byte, now time.Time) error {
	if len(key) == 0 {
		return ErrNoSecret
	}
	ts, err := formatCanonicalUnix(now)
	if err != nil {
		return err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(r.Body)
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(v.tsHeader, ts)
	r.Header.Set(v.sigHeader, "v0="+hex.EncodeToString(m.Sum(nil)))
	return nil
}

// KeptHeaders lists the delivery headers kept with the event (see
// HeaderKeeper).
func (s *Slack) KeptHeaders() []string {
	return []string{SlackSignatureHeader, SlackTimestampHeader, SlackRetryNumHeader, SlackRetryReasonHeader}
}

var slackTenantFields = []string{"team_id"}

// Tenant returns the workspace an Events API delivery (top-level
// "team_id") or a slash command (form field team_id) names; see Tenanter.
func (s *Slack) Tenant(r Request) (string, bool) {
	if slackIsJSON(r.Body) {
		var f [1][]byte
		if err := jsonFields(r.Body, slackTenantFields, f[:]); err != nil || !jsonPresent(f[0]) {
			return "", false
		}
		a, ok := jsonString(f[0])
		return a, ok && a != ""
	}
	q, err := url.ParseQuery(string(r.Body))
	if err != nil || len(q["team_id"]) != 1 || q.Get("team_id") == "" {
		return "", false
	}
	return q.Get("team_id"), true
}
