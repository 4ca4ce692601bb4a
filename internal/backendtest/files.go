package backendtest

import (
	"os"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
)

// Files: a backend's files land on its machine (here the same one),
// private to its user, byte for byte, never over an existing file, and
// go again.
func Files(t *testing.T, f agentpty.Files) {
	ctx := Ctx(t)
	dir, err := f.MkdirTemp(ctx, "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 || !strings.Contains(dir, "agentpty-test.") {
		t.Fatalf("MkdirTemp = %q: %v %v", dir, st, err)
	}
	text := "PS1='$ '\nprintf '%s\\n' \"it's\" # quotes, $vars, `cmd` and \\ stay\n\tno newline at the end"
	rc := dir + "/rc"
	if err := f.WriteFile(ctx, rc, []byte(text)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(rc)
	if fi, _ := os.Stat(rc); err != nil || string(got) != text || fi.Mode().Perm() != 0o600 {
		t.Fatalf("WriteFile wrote %q (%v), want %q mode 0600", got, err, text)
	}
	if err := f.WriteFile(ctx, rc, []byte("again")); err == nil {
		t.Error("WriteFile over an existing file succeeded")
	}
	// A symlink planted where the file goes is not written through.
	target := dir + "/target"
	if err := os.Symlink(target, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(ctx, dir+"/link", []byte("through")); err == nil {
		t.Error("WriteFile through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("WriteFile created the symlink's target")
	}
	if err := f.RemoveAll(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
	if err := f.RemoveAll(ctx, dir); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}

// FilesUnderTMPDIR: MkdirTemp makes its directory under $TMPDIR of the
// far side, tmp there.
func FilesUnderTMPDIR(t *testing.T, f agentpty.Files, tmp string) {
	dir, err := f.MkdirTemp(Ctx(t), "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	defer f.RemoveAll(Ctx(t), dir)
	if !strings.HasPrefix(dir, tmp+"/agentpty-test.") {
		t.Errorf("MkdirTemp with TMPDIR=%s made %s", tmp, dir)
	}
}
