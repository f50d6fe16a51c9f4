// Command bench reads `go test -bench` output on stdin and prints, for each
// benchmark, every sub-benchmark's time and allocations beside its ratio to
// the baseline measured in the same run (the sub-benchmark whose name
// starts with "bare": the bare primitive over the same bytes). It marks the
// rows that miss the targets. `make bench` pipes the signature benchmarks
// through it.
//
// The input may hold several rounds: the n-th line of a sub-benchmark pairs
// with the n-th line of its baseline. `make bench` runs the test binary
// once per round, so the two lines of a pair are measured seconds apart,
// and the ratio printed is the median of the per-round ratios: a slow phase
// of a shared machine moves both sides of a pair, not one side of the
// ratio.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type row struct {
	group, name string
	ns, allocs  float64
	samples     []float64 // ns/op of each round, in input order
}

func main() {
	maxRatio := flag.Float64("max-ratio", 3, "target: verify+identify time over the baseline")
	maxAllocs := flag.Float64("max-allocs", 30, "target: allocations of verify+identify")
	flag.Parse()
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "bench: no benchmark lines on stdin")
		os.Exit(1)
	}
	report(os.Stdout, rows, *maxRatio, *maxAllocs)
}

// parse reads lines like
//
//	BenchmarkStripe/verify+identify-2  45754  25029 ns/op  254.66 MB/s  584 B/op  11 allocs/op
//
// taking the median of repeated runs of one sub-benchmark, so that one run
// disturbed by the machine does not move the figure.
func parse(r io.Reader) ([]row, error) {
	type acc struct {
		ns, allocs []float64
	}
	sums := map[[2]string]*acc{}
	var order [][2]string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		full := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(full, '-'); i > 0 {
			if _, err := strconv.Atoi(full[i+1:]); err == nil {
				full = full[:i] // the GOMAXPROCS suffix
			}
		}
		group, name, ok := strings.Cut(full, "/")
		if !ok {
			group, name = full, ""
		}
		var ns, allocs float64 = -1, -1
		for i := 1; i+1 < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				ns = v
			case "allocs/op":
				allocs = v
			}
		}
		if ns < 0 {
			continue
		}
		k := [2]string{group, name}
		a, seen := sums[k]
		if !seen {
			a = &acc{}
			sums[k] = a
			order = append(order, k)
		}
		a.ns = append(a.ns, ns)
		a.allocs = append(a.allocs, max(allocs, 0))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	rows := make([]row, 0, len(order))
	for _, k := range order {
		a := sums[k]
		rows = append(rows, row{group: k[0], name: k[1], ns: median(a.ns), allocs: median(a.allocs), samples: a.ns})
	}
	return rows, nil
}

// median returns the middle value of xs (the mean of the two middle ones
// for an even count); xs is not empty.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func report(w io.Writer, rows []row, maxRatio, maxAllocs float64) {
	groups := map[string][]row{}
	var names []string
	for _, r := range rows {
		if _, ok := groups[r.group]; !ok {
			names = append(names, r.group)
		}
		groups[r.group] = append(groups[r.group], r)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-22s %-34s %12s %8s %8s\n", "benchmark", "case", "ns/op", "allocs", "ratio")
	for _, g := range names {
		var base *row
		for i, r := range groups[g] {
			if strings.HasPrefix(r.name, "bare") {
				base = &groups[g][i]
				break
			}
		}
		for _, r := range groups[g] {
			ratio, mark := "-", ""
			if q, ok := pairedRatio(r, base); ok {
				ratio = fmt.Sprintf("%.2fx", q)
				var over []string
				if r.name == "verify+identify" && q > maxRatio {
					over = append(over, fmt.Sprintf("%.2fx over the %gx target (-max-ratio)", q, maxRatio))
				}
				if r.name == "verify+identify" && r.allocs > maxAllocs {
					over = append(over, fmt.Sprintf("%.0f allocs over the %g target (-max-allocs)", r.allocs, maxAllocs))
				}
				if len(over) > 0 {
					mark = "  over target: " + strings.Join(over, ", ")
				}
			}
			fmt.Fprintf(w, "%-22s %-34s %12.0f %8.0f %8s%s\n", g, r.name, r.ns, r.allocs, ratio, mark)
		}
	}
}

// pairedRatio is the median over rounds of r's time over base's time in
// the same round. When the two were not run the same number of times there
// are no rounds to pair, and it is the ratio of their medians.
func pairedRatio(r row, base *row) (float64, bool) {
	if base == nil || base.ns <= 0 {
		return 0, false
	}
	if len(r.samples) != len(base.samples) {
		return r.ns / base.ns, true
	}
	qs := make([]float64, 0, len(r.samples))
	for i := range r.samples {
		if base.samples[i] > 0 {
			qs = append(qs, r.samples[i]/base.samples[i])
		}
	}
	if len(qs) == 0 {
		return 0, false
	}
	return median(qs), true
}
