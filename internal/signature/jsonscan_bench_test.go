package signature

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkJSONScan measures the validating scanner alone over every JSON
// body of the corpus and the local samples, beside encoding/json.Valid over
// the same bytes; the ratio is the scanner's share of identity extraction.
func BenchmarkJSONScan(b *testing.B) {
	var bodies [][]byte
	var total int64
	for _, pattern := range []string{"../../testdata/corpus/*/*.json", "../../testdata/corpus/*/*/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, p := range files {
			body, err := os.ReadFile(p)
			if err != nil || !json.Valid(body) || len(body) == 0 || body[0] != '{' {
				continue
			}
			bodies = append(bodies, body)
			total += int64(len(body))
		}
	}
	if len(bodies) == 0 {
		b.Fatal("no corpus bodies")
	}
	b.Run("encoding-json-valid", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			for _, body := range bodies {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		}
	})
	b.Run("jsonFields", func(b *testing.B) { benchJSONFields(b, bodies, total) })
	// The same bodies without indentation, as most providers send them:
	// more tokens per byte.
	var compact [][]byte
	var compactTotal int64
	for _, body := range bodies {
		var buf bytes.Buffer
		if err := json.Compact(&buf, body); err != nil {
			b.Fatal(err)
		}
		compact = append(compact, buf.Bytes())
		compactTotal += int64(buf.Len())
	}
	b.Run("jsonFields-compact", func(b *testing.B) { benchJSONFields(b, compact, compactTotal) })
}

func benchJSONFields(b *testing.B, bodies [][]byte, total int64) {
	b.SetBytes(total)
	b.ReportAllocs()
	keys := []string{"id", "type"}
	var out [2][]byte
	for b.Loop() {
		for _, body := range bodies {
			if err := jsonFields(body, keys, out[:]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkJSONScanSmall is the scanner over one small compact body with
// many short values (the Shopify order sample), where per-token costs show.
func BenchmarkJSONScanSmall(b *testing.B) {
	body := []byte(shopifyOrder)
	benchJSONFields(b, [][]byte{body}, int64(len(body)))
}
