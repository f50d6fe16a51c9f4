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
// it smaller, else as it came (payload), in the event's body item, which
// is written once (see body.go): DynamoDB bills a write unit per KB, so
// the smaller body costs less to write and to read. On the corpus in
// testdata/corpus (298 real deliveries, 3.3 MB) gzip makes payloads 6.6
// times smaller; a 6.4 KB Stripe invoice.paid becomes about 1.4 KB. The
// standard library's gzip needs no new dependency; zstd would gain little
// at these sizes.
//
// Releases before the split layout kept the payload in the one item every
// status change rewrote; compression took a Stripe invoice.paid's ingest
// from 8 to 4 write units and its processing from 45 to 26 then, and the
// split took them to 4 and 16 (processor's TestUnitsPerPath). The split
// was first set aside for its expiry: the event expires a retention after
// it finishes, known only then, and moving a payload item's expiry then is
// a write of the whole payload. body.go answers it with a grace: the body
// is written to last a day longer than the event could need if it
// finished at once, and is extended, rarely, only by an event that
// finishes or waits past that.
//
// A payload whose gzip is over claimcheck.InlineMax is not in the body at
// all: package claimcheck keeps it in S3, where it is cheaper past a few
// KB, and renews its object before every write that sets the status
// item's expiry (the status item keeps the object's reference).
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
