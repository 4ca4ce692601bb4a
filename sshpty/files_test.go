//go:build linux

package sshpty

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session's files land on the host (here the same machine), private to
// the user, and go again.
func TestFiles(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	ctx := context.Background()
	dir, err := b.MkdirTemp(ctx, "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 || !strings.Contains(dir, "agentpty-test.") {
		t.Fatalf("MkdirTemp = %q: %v %v", dir, st, err)
	}
	text := "PS1='$ '\nprintf '%s\\n' \"it's\" # quotes, $vars and \\ stay\n"
	rc := filepath.Join(dir, "rc")
	if err := b.WriteFile(ctx, rc, []byte(text)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(rc)
	if fi, _ := os.Stat(rc); err != nil || string(got) != text || fi.Mode().Perm() != 0o600 {
		t.Fatalf("WriteFile wrote %q (%v), want %q mode 0600", got, err, text)
	}
	if err := b.WriteFile(ctx, rc, []byte("again")); err == nil {
		t.Error("WriteFile over an existing file succeeded")
	}
	if err := b.RemoveAll(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
}
