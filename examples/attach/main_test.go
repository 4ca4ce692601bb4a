package main

import (
	"io"
	"strings"
	"testing"
)

// Ctrl-] ends the person's input: what came before it is typed, nothing
// after it.
func TestUntilDetach(t *testing.T) {
	u := &untilDetach{r: strings.NewReader("ls\r\x1dnot typed")}
	got, err := io.ReadAll(u)
	if err != nil || string(got) != "ls\r" {
		t.Errorf("read %q, %v; want \"ls\\r\"", got, err)
	}
	if n, err := u.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("after the detach key: %d, %v", n, err)
	}
}
