package obs

import (
	"strconv"
	"unicode/utf8"
)

// ClipBytes is how much of a client-chosen string (a path segment, an
// event id or key) a log line keeps: more than any valid source name (64),
// account (255) or real provider's key, so clipping only shows on values
// that are refused anyway.
const ClipBytes = 256

// Clip bounds a string a client chose before it goes into a log line. It
// returns s unchanged when s is at most limit bytes; otherwise the longest
// prefix of at most limit bytes that does not split a UTF-8 sequence,
// followed by "…(+N bytes)" where N counts the bytes left out, so the
// original length stays visible. The result is at most limit + 31 bytes.
// Clip only shortens: escaping is the log handler's.
func Clip(s string, limit int) string {
	limit = max(limit, 0)
	if len(s) <= limit {
		return s
	}
	n := limit
	// Back off to the start of the rune that straddles the cut; give up
	// after utf8.UTFMax bytes, as invalid input has no boundary to find.
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		n = limit
	}
	return s[:n] + "…(+" + strconv.Itoa(len(s)-n) + " bytes)"
}
