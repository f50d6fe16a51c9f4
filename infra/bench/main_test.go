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
		"GitHub                 verify+identify                            8000       40    2.00x  over target",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
