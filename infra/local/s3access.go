package local

import (
	"net/http"
	"strings"
)

// WithoutListBucket answers S3 as real S3 answers a caller whose role has
// s3:GetObject but not s3:ListBucket: a read of a missing key is 403 —
// AccessDenied for a GET, a bare 403 (the SDK's "Forbidden") for a HEAD —
// not 404. The emulators ignore IAM; this shows what the claim check does
// where a role lacks the grant (the template's roles have it, scoped to
// the payload prefix).
func WithoutListBucket(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if signedService(r) != "s3" || (r.Method != http.MethodGet && r.Method != http.MethodHead) || !isObjectPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.status != http.StatusNotFound {
			rec.flush()
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
		}
	})
}

// isObjectPath reports whether a path-style S3 path names an object
// (/bucket/key), not a bucket.
func isObjectPath(p string) bool {
	_, key, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return ok && key != ""
}

// statusRecorder holds an answer back until its status is known.
type statusRecorder struct {
	http.ResponseWriter
	header http.Header
	status int
	body   []byte
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.body = append(s.body, p...)
	return len(p), nil
}

// flush passes the held answer on.
func (s *statusRecorder) flush() {
	for k, v := range s.header {
		s.ResponseWriter.Header()[k] = v
	}
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.ResponseWriter.WriteHeader(s.status)
	_, _ = s.ResponseWriter.Write(s.body)
}
