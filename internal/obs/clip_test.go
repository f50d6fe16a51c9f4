package obs

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"empty", "", 8, ""},
		{"shorter", "stripe", 8, "stripe"},
		{"exactly max", "acct_123", 8, "acct_123"},
		{"one over", "acct_1234", 8, "acct_123…(+1 bytes)"},
		{"long", strings.Repeat("a", 100000), 4, "aaaa…(+99996 bytes)"},
		{"cut inside a 2-byte rune backs off", "abcé", 4, "abc…(+2 bytes)"},
		{"cut after a whole rune", "abcé!", 5, "abcé…(+1 bytes)"},
		{"cut inside a 4-byte rune backs off", "a🚀b", 3, "a…(+5 bytes)"},
		{"cut inside the first rune keeps nothing", "日本", 2, "…(+6 bytes)"},
		{"invalid UTF-8 is cut at max", strings.Repeat("\x80", 10), 4, "\x80\x80\x80\x80…(+6 bytes)"},
		{"zero max", "abc", 0, "…(+3 bytes)"},
		{"negative max", "abc", -1, "…(+3 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clip(tt.s, tt.max); got != tt.want {
				t.Errorf("Clip(%.20q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
			}
		})
	}
}

// FuzzClip holds Clip to its contract: unchanged when short enough, else a
// prefix of at most limit bytes, whole runes where the input was valid
// UTF-8, and a suffix counting exactly the bytes left out.
func FuzzClip(f *testing.F) {
	f.Add("acct_1234", 8)
	f.Add("a🚀b", 3)
	f.Add("\x80\x80\x80", 1)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		got := Clip(s, limit)
		bound := max(limit, 0) // a negative limit is 0
		if len(s) <= bound {
			if got != s {
				t.Fatalf("Clip(%q, %d) = %q, want it unchanged", s, limit, got)
			}
			return
		}
		prefix, suffix, ok := strings.Cut(got, "…(+")
		if !ok || !strings.HasPrefix(s, prefix) || len(prefix) > bound {
			t.Fatalf("Clip(%q, %d) = %q: not a prefix of at most %d bytes", s, limit, got, bound)
		}
		if want := strconv.Itoa(len(s)-len(prefix)) + " bytes)"; suffix != want {
			t.Fatalf("Clip(%q, %d) = %q: suffix %q, want %q", s, limit, got, suffix, want)
		}
		if utf8.ValidString(s) && !utf8.ValidString(prefix) {
			t.Fatalf("Clip(%q, %d) = %q splits a rune", s, limit, got)
		}
		if len(got) > bound+31 {
			t.Fatalf("Clip(%q, %d) is %d bytes, over the bound + 31", s, limit, len(got))
		}
	})
}
