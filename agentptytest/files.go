package agentptytest

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
)

// files: a backend's Files land on the machine where its commands run,
// private to its user, byte for byte, never over an existing file, and
// go again.
func files(t *testing.T, s *suite) {
	f, ok := s.b.(agentpty.Files)
	if !ok {
		s.skipNoFiles(t)
	}
	dir, err := f.MkdirTemp(Ctx(t), "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	if mode := s.far(t, "ls -ld '"+dir+"' | cut -c1-10"); mode != "drwx------" || !strings.Contains(dir, "agentpty-test.") {
		t.Fatalf("MkdirTemp = %q, mode %q; want drwx------", dir, mode)
	}
	text := "PS1='$ '\nprintf '%s\\n' \"it's\" # quotes, $vars, `cmd` and \\ stay\n\tno newline at the end"
	rc := dir + "/rc"
	if err := f.WriteFile(Ctx(t), rc, []byte(text)); err != nil {
		t.Fatal(err)
	}
	// Through base64, as the terminal would expand the tab.
	b64, mode, _ := strings.Cut(s.far(t, "base64 < '"+rc+"' | tr -d '\\n'; echo; ls -l '"+rc+"' | cut -c1-10"), "\n")
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil || string(got) != text || strings.TrimSpace(mode) != "-rw-------" {
		t.Fatalf("WriteFile wrote %q (%v), mode %q; want %q mode -rw-------", got, err, mode, text)
	}
	if err := f.WriteFile(Ctx(t), rc, []byte("again")); err == nil {
		t.Error("WriteFile over an existing file succeeded")
	}
	// A symlink planted where the file goes is not written through.
	target := dir + "/target"
	s.far(t, "ln -s '"+target+"' '"+dir+"/link'")
	if err := f.WriteFile(Ctx(t), dir+"/link", []byte("through")); err == nil {
		t.Error("WriteFile through a dangling symlink succeeded")
	}
	if s.exists(t, target) {
		t.Error("WriteFile created the symlink's target")
	}
	if err := f.RemoveAll(Ctx(t), dir); err != nil {
		t.Fatal(err)
	}
	if s.exists(t, dir) {
		t.Error("the directory is still there after RemoveAll")
	}
	if err := f.RemoveAll(Ctx(t), dir); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}
