//go:build linux

package agentpty

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// TestShellSandboxKeepsCommandsReadOnly: a sandboxed shell whose writable
// root holds the manager's private directory can read its rcfile and run
// files but change none of them, nor plant the next run's file. The
// control: the same operations on a directory made alike beside it work.
func TestShellSandboxKeepsCommandsReadOnly(t *testing.T) {
	root, sb := sandboxHoldingPrivDirs(t)
	m := newManager(t, Options{Sandbox: sb})
	id := startShell(t, m)
	priv := m.priv.path
	if !strings.HasPrefix(priv, root+"/") {
		t.Fatalf("private directory %q is not inside the root %q", priv, root)
	}
	ctl := filepath.Join(root, "alike")
	if err := os.Mkdir(ctl, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctl, "rc"), []byte("PS1=x\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	try := `try() { if "${@:2}" 2>/dev/null; then echo "$1: done"; else echo "$1: refused"; fi; }; `
	// A run file is written anew each run (O_EXCL): replacing the rcfile
	// or planting the next run's file are the changes that would count.
	attack := func(dir string) string {
		return try + `d=` + cmdline.ShellQuote(dir) + `; try replace sh -c 'mv "$0"/rc "$0"/rc.old && echo "rm -rf /" > "$0"/rc' "$d"; ` +
			`try plant sh -c 'echo "rm -rf /" > "$0"/3' "$d"; try remove rm -f "$d"/rc`
	}
	res := mustRun(t, m, RunRequest{ID: id, Command: attack(ctl)})
	for _, w := range []string{"replace: done", "plant: done", "remove: done"} {
		if !strings.Contains(res.Output, w) {
			t.Fatalf("control: %q lacks %q: the root does not make a directory writable", res.Output, w)
		}
	}
	res = mustRun(t, m, RunRequest{ID: id, Command: attack(filepath.Join(priv, id))})
	if strings.Contains(res.Output, "done") || strings.Count(res.Output, "refused") != 3 {
		t.Fatalf("the sandboxed shell changed its own directory:\n%s", res.Output)
	}
	if res := mustRun(t, m, RunRequest{ID: id, Command: "echo still runs"}); res.Output != "still runs" {
		t.Fatalf("after the attack: %+v", res)
	}
}

// sandboxHoldingPrivDirs returns a sandbox whose writable root, a new
// directory, is where managers made from now on put their private
// directories (TMPDIR).
func sandboxHoldingPrivDirs(t *testing.T) (root string, sb Sandbox) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	return root, newTestSandbox(t, SandboxPolicy{WritableRoots: []string{root}})
}

// TestSandboxKeptPathsOutliveStarts: managers sharing one sandbox start
// and close at once, each with its private directory inside the writable
// root: every start binds the directories kept at that moment, and none
// fails because another manager's Close removed one of them meanwhile.
func TestSandboxKeptPathsOutliveStarts(t *testing.T) {
	_, sb := sandboxHoldingPrivDirs(t)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for range 4 {
				m, _, err := startSandboxed(sb, `echo "== ready"`, "== ready")
				m.Close()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
