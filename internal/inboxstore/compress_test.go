package inboxstore

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// freshGzip is compress's work with a compressor made for the call: what
// compress did before it kept them, the baseline of BenchmarkCompress.
func freshGzip(p []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
	w.Write(p)
	w.Close()
	return b.Bytes()
}

func stripeInvoice(tb testing.TB) []byte {
	tb.Helper()
	p, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", "stripe", "invoice.paid.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestCompressKeptWriters: a kept compressor gives the bytes a new one
// gives, call after call and from many goroutines at once, whatever it
// compressed before.
func TestCompressKeptWriters(t *testing.T) {
	inputs := [][]byte{stripeInvoice(t), bytes.Repeat([]byte(`{"a":"b"},`), 300), []byte(`{"type":"ping","data":"` + string(bytes.Repeat([]byte("z"), 400)) + `"}`)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				p := inputs[(g+i)%len(inputs)]
				got, ok := compress(p, nil)
				if !ok {
					t.Errorf("input %d not compressed", (g+i)%len(inputs))
					return
				}
				if want := freshGzip(p); !bytes.Equal(got, want) {
					t.Errorf("input %d: a kept compressor gave %d bytes unlike a new one's %d", (g+i)%len(inputs), len(got), len(want))
					return
				}
				back, err := decompress(got)
				if err != nil || !bytes.Equal(back, p) {
					t.Errorf("input %d: round trip: %v", (g+i)%len(inputs), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkCompress: a 6.4 KB Stripe invoice.paid compressed with a kept
// compressor (compress) and, the baseline in the same run, with a new one
// each call. go test -run '^$' -bench Compress -benchmem ./internal/inboxstore
func BenchmarkCompress(b *testing.B) {
	p := stripeInvoice(b)
	b.Run("new-writer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			freshGzip(p)
		}
	})
	b.Run("kept-writer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			compress(p, nil)
		}
	})
}
