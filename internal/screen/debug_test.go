package screen

import (
	"os"
	"testing"
)

// TestShowCase prints the screen one conformance case leaves, row by row:
//
//	CASE=t0084-CBT go test -run TestShowCase -v ./internal/screen
func TestShowCase(t *testing.T) {
	name := os.Getenv("CASE")
	if name == "" {
		t.Skip("set CASE to a conformance case name to print its screen")
	}
	in, err := os.ReadFile(conformanceDir + "/" + name + ".in")
	if err != nil {
		t.Fatal(err)
	}
	s := New(80, 25)
	s.Write(nil, onlcr(in))
	for i, l := range s.Lines() {
		t.Logf("%2d|%s|", i, l)
	}
	r, c := s.Cursor()
	t.Logf("cursor %d,%d", r, c)
}
