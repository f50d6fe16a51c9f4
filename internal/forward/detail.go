package forward

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/webhook-inbox/webhook-inbox/internal/inbox"
)

// MaxEntryBytes bounds one PutEvents entry as EventBridge sizes it (14
// bytes for Time, then Source, DetailType, Detail and Resources as UTF-8).
// EventBridge's limit was 256 KB until AWS raised it to 1 MB for every
// event bus on 29 January 2026 (AWS Compute Blog, "More room to build:
// serverless services now support payloads up to 1 MB"); it bounds a
// whole PutEvents request as well. This is that 1 MB taken as 10^6 bytes,
// the stricter reading. moto (5.2.1) enforces no size at all.
const MaxEntryBytes = 1_000_000

// Meta is what every forwarded Detail carries under "webhook_inbox": the
// event's identity, so a consumer can dedupe on EventKey (EventBridge
// delivers to targets at least once, and an unknown put may be made
// again).
type Meta struct {
	EventKey   string `json:"event_key"`
	Source     string `json:"source"`
	Account    string `json:"account,omitempty"`
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	ReceivedAt string `json:"received_at,omitempty"`
	// PayloadOmitted, when set, says the payload is not in the Detail
	// (it would make the entry larger than EventBridge takes): it is in
	// the inbox, under EventKey (the replay function's inspect with
	// include_payload returns it), of PayloadBytes bytes and SHA-256
	// PayloadSHA256.
	PayloadOmitted string `json:"payload_omitted,omitempty"`
	PayloadBytes   int    `json:"payload_bytes,omitempty"`
	PayloadSHA256  string `json:"payload_sha256,omitempty"`
}

// MetaKey is the Detail's member holding Meta.
const MetaKey = "webhook_inbox"

// Size is EventBridge's size of an entry (see MaxEntryBytes).
func Size(r Row, detail []byte) int {
	n := len(r.Source) + len(r.DetailType) + len(detail)
	if r.Time != "" {
		n += 14
	}
	return n
}

// Detail returns the entry's Detail for an event's payload: a JSON object,
// as EventBridge requires.
//
//   - A payload that is a JSON object is itself the Detail, with Meta
//     added as its first member, so rules match the provider's own fields
//     (detail.data.object.status) — unless it has a webhook_inbox member
//     of its own, when it goes under "payload" instead.
//   - Any other JSON (an array) goes under "payload"; a payload that is
//     not JSON (a form-encoded body) under "payload_text", or
//     "payload_base64" if it is not UTF-8.
//   - If that makes the entry larger than MaxEntryBytes, the Detail is
//     Meta alone, saying where the payload is.
func Detail(r Row, m Meta, payload []byte) ([]byte, error) {
	meta, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	// Every Detail holds the payload's bytes at least (trimmed of spaces):
	// past the limit alone, it is not built to be thrown away.
	if len(bytes.TrimSpace(payload)) <= MaxEntryBytes {
		d, err := detail(meta, payload)
		if err != nil {
			return nil, err
		}
		if Size(r, d) <= MaxEntryBytes {
			return d, nil
		}
	}
	sum := sha256.Sum256(payload)
	m.PayloadOmitted = fmt.Sprintf("the entry would be over %d bytes", MaxEntryBytes)
	m.PayloadBytes, m.PayloadSHA256 = len(payload), hex.EncodeToString(sum[:])
	meta, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	d := wrap(meta, "", nil)
	if Size(r, d) > MaxEntryBytes {
		return nil, errors.New("forward: the entry's metadata alone is over the entry limit")
	}
	return d, nil
}

func detail(meta, payload []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(payload)
	valid := json.Valid(trimmed)
	switch {
	case valid && trimmed[0] == '{':
		has, err := hasMember(trimmed, MetaKey)
		if err != nil {
			return nil, err
		}
		if has {
			return wrap(meta, "payload", trimmed), nil
		}
		rest := bytes.TrimSpace(trimmed[1:])
		var b bytes.Buffer
		b.Grow(len(meta) + len(trimmed) + 20)
		b.WriteString(`{"` + MetaKey + `":`)
		b.Write(meta)
		if rest[0] != '}' {
			b.WriteByte(',')
		}
		b.Write(rest)
		return b.Bytes(), nil
	case valid:
		return wrap(meta, "payload", trimmed), nil
	case utf8.Valid(payload):
		s, _ := json.Marshal(string(payload))
		return wrap(meta, "payload_text", s), nil
	default:
		s, _ := json.Marshal(base64.StdEncoding.EncodeToString(payload))
		return wrap(meta, "payload_base64", s), nil
	}
}

// wrap is {"webhook_inbox": meta, name: value}, or Meta alone when name is
// empty.
func wrap(meta []byte, name string, value []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"` + MetaKey + `":`)
	b.Write(meta)
	if name != "" {
		b.WriteString(`,"` + name + `":`)
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// hasMember reports whether the JSON object obj has a top-level member
// named name.
func hasMember(obj []byte, name string) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return false, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false, err
		}
		if k, _ := t.(string); k == name {
			return true, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false, err
		}
	}
	return false, nil
}

// MetaOf is the Meta of an event.
func MetaOf(ev inbox.Event) Meta {
	m := Meta{EventKey: ev.Key.String(), Source: ev.Key.Source, Account: ev.Key.Account, EventID: ev.Key.EventID, Type: ev.Type}
	if !ev.ReceivedAt.IsZero() {
		m.ReceivedAt = ev.ReceivedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return m
}
