package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkStripe/bare-hmac-2         	  197560	      5000 ns/op	1116.07 MB/s	     481 B/op	       6 allocs/op
BenchmarkStripe/verify+identify-2   	   56737	     20000 ns/op	 308.52 MB/s	     584 B/op	      11 allocs/op
BenchmarkStripe/verify+identify-2   	   56737	     10000 ns/op	 308.52 MB/s	     584 B/op	      11 allocs/op
BenchmarkStripe/verify+identify-2   	   56737	     15000 ns/op	 308.52 MB/s	     584 B/op	      11 allocs/op
BenchmarkStripe/verify+identify-2   	   56737	     14000 ns/op	 308.52 MB/s	     584 B/op	      11 allocs/op
BenchmarkStripe/verify+identify-2   	   56737	    900000 ns/op	 308.52 MB/s	     584 B/op	      11 allocs/op
BenchmarkGitHub/bare-hmac-2         	  197560	      4000 ns/op	     481 B/op	       6 allocs/op
BenchmarkGitHub/verify+identify-2   	   56737	      8000 ns/op	     584 B/op	      40 allocs/op
PASS
`

// TestReportPairsRounds: the ratio is the median of per-round ratios, so a
// round in which the whole machine ran at half speed does not count against
// the scheme, while a ratio of medians would.
func TestReportPairsRounds(t *testing.T) {
	const rounds = `BenchmarkLinear/bare-hmac-2 1 1000 ns/op 5 allocs/op
BenchmarkLinear/verify+identify-2 1 2900 ns/op 7 allocs/op
BenchmarkLinear/bare-hmac-2 1 2000 ns/op 5 allocs/op
BenchmarkLinear/verify+identify-2 1 5800 ns/op 7 allocs/op
BenchmarkLinear/bare-hmac-2 1 1000 ns/op 5 allocs/op
BenchmarkLinear/verify+identify-2 1 5000 ns/op 7 allocs/op
BenchmarkLinear/bare-hmac-2 1 2000 ns/op 5 allocs/op
BenchmarkLinear/verify+identify-2 1 5600 ns/op 7 allocs/op
`
	rows, err := parse(strings.NewReader(rounds))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, rows, 3, 30)
	// Per-round ratios 2.9, 2.9, 5.0, 2.8: median 2.9. The ratio of the
	// medians would be 5300/1500 = 3.53.
	want := "Linear                 verify+identify                            5300        7    2.90x\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

func TestReport(t *testing.T) {
	rows, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4 (repeats folded into their median)", len(rows))
	}
	var out bytes.Buffer
	report(&out, rows, 3, 30)
	got := out.String()
	for _, want := range []string{
		"Stripe                 verify+identify                           15000       11    3.00x\n",
		"GitHub                 verify+identify                            8000       40    2.00x  over target: 40 allocs over the 30 target (-max-allocs)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
