package inboxstore

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync"
)

// An event's payload is stored gzip-compressed (payload_z) when that makes
// it smaller, else as it came (payload). Every status change rewrites the
// whole item and DynamoDB bills a write unit per KB of it, so the payload's
// size is paid on each write of an event's life (store, claim, commit —
// twice, inside a transaction — and any failure). On the corpus in
// testdata/corpus (298 real deliveries, 3.3 MB) gzip makes payloads 6.6
// times smaller; a 6.4 KB Stripe invoice.paid becomes about 1.4 KB. The
// standard library's gzip needs no new dependency; zstd would gain little
// at these sizes.
//
// Measured (processor's TestUnitsPerPath, a 6,374-byte Stripe
// invoice.paid, table and index units): ingest 8 → 4 write units, its
// processing 45 → 26.
//
// The other design, the payload in an immutable item of its own written
// before a small status item, would make each later write cost a unit or
// two. It is not taken, for what it costs back: a second item written at
// ingest (the payload's units, compressed too) and read at every claim
// (the status write no longer brings the payload); a crash between the
// two writes leaves an orphan payload, harmless only if it expires; and
// its expiry cannot follow the event's: the event expires a retention
// after it finishes, which is known only then, and moving the payload's
// expiry then is a write of the whole payload again (twice, inside the
// commit's transaction). A payload expiring at a fixed time instead would
// be lost under an event still unfinished or dead past it, which replay
// must be able to run. On the Stripe event above the split would save
// about 2 of 30 write units and add a read per claim: not worth a window
// where an event can lose its payload.
//
// A payload whose gzip is over claimcheck.InlineMax is not in the item at
// all: package claimcheck keeps it in S3, where it is cheaper past a few
// KB, and renews its object before every write that sets the item's
// expiry — the expiry problem above, solved by a copy of the object where
// a split item would rewrite the payload in a transaction.
//
// Bodies the client sent compressed are not special: the payload is the
// verified body as received, byte for byte, and decompression gives back
// exactly those bytes.

// minCompress is the smallest payload worth compressing: below it the
// gzip header and footer eat the gain.
const minCompress = 256

// maxPayload bounds what decompression may produce: more than any body
// ingest accepts (API Gateway's 10 MB), so a corrupt item cannot exhaust
// memory.
const maxPayload = 16 << 20

// Gzip compresses a payload: the one gzip of the project, for the item's
// payload_z and for the claim check's objects (which decide on it whether
// a payload fits the item, and pass it on to InsertGzipped rather than
// compress twice).
func Gzip(p []byte) []byte {
	var b bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&b)
	_, _ = w.Write(p) // a bytes.Buffer does not fail
	_ = w.Close()
	return b.Bytes()
}

// compress returns z, the gzip of p (made now when z is nil), when it is
// smaller than p by a tenth at least; ok is false when p is to be stored
// as it is.
func compress(p, z []byte) ([]byte, bool) {
	if len(p) < minCompress {
		return nil, false
	}
	if z == nil {
		z = Gzip(p)
	}
	if len(z) > len(p)*9/10 {
		return nil, false
	}
	return z, true
}

// gzipWriters keeps compressors for reuse: a new one allocates and clears
// about 800 KB of state (BenchmarkCompress), more than the work of
// compressing a few KB, and ingest compresses every stored payload. Reset
// makes a kept one exactly a new one: the same bytes come out.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	return w
}}

var errPayloadTooLarge = errors.New("stored payload decompresses to more than the largest accepted body")

// decompress returns the payload p_z was made from.
func decompress(z []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("stored payload: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("stored payload: %w", err)
	}
	if len(out) > maxPayload {
		return nil, errPayloadTooLarge
	}
	return out, nil
}
