package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestCost runs every path a few times through the local stack: each
// prints a bill at or above its floor.
func TestCost(t *testing.T) {
	if testing.Short() {
		t.Skip("needs moto_server (and dynoxide for capacity)")
	}
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(3, &out); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^(\S.{39}) +([0-9.]+) +([0-9.]+) +([0-9.]+)x`).FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 7 {
		t.Fatalf("%d paths in:\n%s", len(rows), out.String())
	}
	for _, r := range rows {
		bill, _ := strconv.ParseFloat(r[2], 64)
		floor, _ := strconv.ParseFloat(r[3], 64)
		if floor <= 0 || bill < floor {
			t.Errorf("%s: bill %v under its floor %v", r[1], bill, floor)
		}
	}
}
