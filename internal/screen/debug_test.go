package screen

import (
	"os"
	"testing"
)

func TestDebugCase(t *testing.T) {
	name := os.Getenv("CASE")
	if name == "" {
		t.Skip()
	}
	in, _ := os.ReadFile(conformanceDir + "/" + name + ".in")
	s := New(80, 25)
	s.Write(nil, onlcr(in))
	for i, l := range s.Lines() {
		t.Logf("%2d|%s|", i, l)
	}
	r, c := s.Cursor()
	t.Logf("cursor %d,%d", r, c)
}
