package agentpty

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// snapshotProfile is a login profile that sets one of each thing a
// snapshot carries, counts its runs in a file, and takes a while.
const snapshotProfile = `echo run >>"$HOME/runs"
sleep 0.2
export SNAP_VAR='hello  world'
export PATH="$HOME/bin:$PATH"
snapfn() { echo "fn-$1"; }
export -f snapfn
snaplocal() { echo "local-$1"; }
alias snapal='echo alias-works'
shopt -s expand_aliases extglob
set -o noclobber
unset -v SNAP_GONE
`

// snapshotHome returns a HOME whose login profile is profile, with a
// program of its own on the PATH the profile adds.
func snapshotHome(t *testing.T, profile string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(home, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "snapbin"), []byte("#!/bin/sh\necho bin-works\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home
}

// runOnce starts command, waits for it to exit and returns its output.
func runOnce(t *testing.T, m *Manager, command string) StartResult {
	t.Helper()
	res := mustStart(t, m, StartRequest{Command: command + "; echo END-$?", WaitFor: "END-", WaitMS: ms(20000)})
	if _, err := m.Kill(context.Background(), res.ID); err != nil {
		t.Fatal(err)
	}
	return res
}

func profileRuns(t *testing.T, home string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "runs"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "run")
}

func TestShellSnapshotCarriesTheProfile(t *testing.T) {
	home := snapshotHome(t, snapshotProfile)
	m := newManager(t, Options{ShellSnapshot: true, Env: []string{"HOME=" + home, "SNAP_GONE=still-here"}})
	checks := []struct{ command, want string }{
		{`echo "var=$SNAP_VAR"`, "var=hello  world"},
		{"snapbin", "bin-works"},
		{"snapfn x", "fn-x"},
		{"snaplocal y", "local-y"},
		{"snapal", "alias-works"},
		{"bash -c 'snapfn exported'", "fn-exported"},
		{`shopt -q extglob && [[ -o noclobber ]] && echo opts-on`, "opts-on"},
		{`echo "gone=${SNAP_GONE-unset}"`, "gone=unset"},
		{`echo "bash_env=${BASH_ENV-unset}"`, "bash_env=unset"},
	}
	for _, c := range checks {
		res := runOnce(t, m, c.command)
		if !strings.Contains(res.Output, c.want) || !strings.Contains(res.Output, "END-0") {
			t.Errorf("%s: output %q, want %q and exit 0 (notice %q)", c.command, res.Output, c.want, res.Notice)
		}
		if res.Notice != "" {
			t.Errorf("%s: notice %q", c.command, res.Notice)
		}
	}
	if n := profileRuns(t, home); n != 1 {
		t.Errorf("the profile ran %d times for %d starts, want once", n, len(checks))
	}

	// A changed profile is read again at the next start.
	later := time.Now().Add(time.Second)
	p := filepath.Join(home, ".bash_profile")
	if err := os.WriteFile(p, []byte(snapshotProfile+"export SNAP_NEW=fresh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(p, later, later) // a change within the mtime's granularity still shows
	if res := runOnce(t, m, `echo "new=$SNAP_NEW"`); !strings.Contains(res.Output, "new=fresh") {
		t.Errorf("after the profile changed: output %q, want new=fresh", res.Output)
	}
	if n := profileRuns(t, home); n != 2 {
		t.Errorf("the profile ran %d times after it changed, want 2", n)
	}
}

// The environment a command sees from the snapshot is the login shell's.
func TestShellSnapshotEnvironmentEqualsLogin(t *testing.T) {
	home := snapshotHome(t, snapshotProfile)
	env := []string{"HOME=" + home, "SNAP_GONE=still-here"}
	envOf := func(m *Manager) map[string]string {
		res := runOnce(t, m, "env -0 | base64 -w0; echo")
		text := strings.TrimSpace(strings.ReplaceAll(res.Output, "\n", ""))
		text = text[:strings.Index(text, "END-")]
		raw, err := decodeB64(text)
		if err != nil {
			t.Fatalf("env output %q: %v", res.Output, err)
		}
		vars := map[string]string{}
		for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "_", "SHLVL", "PWD", "OLDPWD", testkit.SessionMarkEnv:
				continue
			case "PYTHONSTARTUP": // the manager's own file, in each manager's own directory
				v = filepath.Base(v)
			}
			vars[k] = v
		}
		return vars
	}
	login := envOf(newManager(t, Options{Env: env}))
	snap := envOf(newManager(t, Options{Env: env, ShellSnapshot: true}))
	var diff []string
	for k, v := range login {
		if w, ok := snap[k]; !ok || w != v {
			diff = append(diff, "login "+k+"="+v+", snapshot "+snap[k])
		}
	}
	for k, v := range snap {
		if _, ok := login[k]; !ok {
			diff = append(diff, "only in the snapshot: "+k+"="+v)
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("the environments differ:\n%s", strings.Join(diff, "\n"))
	}
	if login["SNAP_VAR"] != "hello  world" {
		t.Errorf("the login shell's SNAP_VAR is %q: the comparison saw no profile", login["SNAP_VAR"])
	}
}

// A profile that hangs or fails does not hang the start: the start runs
// the login shell and its notice says what happened.
func TestShellSnapshotProfileFails(t *testing.T) {
	// It reads the terminal, which no one types into while the snapshot
	// is made; the login shell it falls back to then waits the same way.
	home := snapshotHome(t, "trap 'echo ran >\"$HOME/exit-trap\"' EXIT\necho profile-says-hi; read -r line; export AFTER=$line\n")
	m := newManager(t, Options{ShellSnapshot: true, ShellSnapshotTimeout: 500 * time.Millisecond, Env: []string{"HOME=" + home}})
	began := time.Now()
	res, err := m.Start(context.Background(), StartRequest{Command: `echo "after=$AFTER"`, WaitFor: "profile-says-hi"})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the start took %v", took)
	}
	if !strings.Contains(res.Notice, "ran past") || !strings.Contains(res.Notice, "profile-says-hi") {
		t.Errorf("notice %q: want what happened and what the profile printed", res.Notice)
	}
	// It was ended as a Kill ends a session, TERM first: its exit trap ran
	// (pyenv's rehash releases its lock in one).
	if _, err := os.Stat(filepath.Join(home, "exit-trap")); err != nil {
		t.Errorf("the stopped profile's exit trap did not run: %v", err)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "typed", Submit: true, WaitFor: "after=typed"})
	if !w.Exited && !strings.Contains(w.Output, "after=typed") {
		t.Errorf("the login shell did not run the command: %q", w.Output)
	}

	home2 := snapshotHome(t, "echo broken-profile; exit 3\n")
	m2 := newManager(t, Options{ShellSnapshot: true, Env: []string{"HOME=" + home2}})
	res2 := mustStart(t, m2, StartRequest{Command: "echo ran", WaitMS: ms(2000)})
	if !strings.Contains(res2.Notice, "gave no state") || !strings.Contains(res2.Notice, "broken-profile") {
		t.Errorf("notice %q: want that the profile gave no state and its output", res2.Notice)
	}
}

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// A start that has printed nothing says how long it waited and what is in
// front, instead of an empty result.
func TestStartStallSaysSo(t *testing.T) {
	home := snapshotHome(t, "sleep 30\n") // a profile stuck on a lock
	m := newManager(t, Options{Env: []string{"HOME=" + home}})
	res := mustStart(t, m, StartRequest{Command: "echo hi", WaitMS: ms(300)})
	if res.Output != "" || !strings.Contains(res.Notice, "nothing printed yet after") || !strings.Contains(res.Notice, "in front") {
		t.Errorf("output %q, notice %q: want the wait and the program in front", res.Output, res.Notice)
	}
	if res3 := mustStart(t, m, StartRequest{Command: "echo printed", WaitFor: "printed", Env: []string{"HOME=/nonexistent"}}); res3.Notice != "" {
		t.Errorf("a start that printed has notice %q", res3.Notice)
	}
}

// A shell session starts from the snapshot too, its marks intact: runs
// have their exit codes, aliases expand as in any interactive shell, and
// line editing and job control stay on.
func TestShellSnapshotShellSession(t *testing.T) {
	home := snapshotHome(t, snapshotProfile)
	m := newManager(t, Options{ShellSnapshot: true, Env: []string{"HOME=" + home}})
	res, err := m.Start(context.Background(), StartRequest{Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command, want string
		code          int
	}{
		{`echo "var=$SNAP_VAR"; snapfn z`, "var=hello  world\nfn-z", 0},
		{"snapal", "alias-works", 0},
		{"snapbin; false", "bin-works", 1},
		{`[[ -o emacs && -o monitor ]] && shopt -q extglob && echo interactive-opts`, "interactive-opts", 0},
	} {
		r, err := m.Run(context.Background(), RunRequest{ID: res.ID, Command: c.command})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Output, c.want) || r.ExitCode == nil || *r.ExitCode != c.code {
			t.Errorf("%s: output %q exit %v, want %q and %d", c.command, r.Output, r.ExitCode, c.want, c.code)
		}
	}
	if n := profileRuns(t, home); n != 1 {
		t.Errorf("the profile ran %d times, want once", n)
	}
}

// The snapshot lives in a private directory that Close removes.
func TestShellSnapshotRemovedAtClose(t *testing.T) {
	home := snapshotHome(t, snapshotProfile)
	m := NewManager(Options{ShellSnapshot: true, Env: []string{"HOME=" + home}})
	runOnce(t, m, "true")
	m.snap.mu.Lock()
	dir, path := m.snap.dir, m.snap.path
	m.snap.mu.Unlock()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot %q: %v %v, want a file of mode 0600", path, fi, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the snapshot directory %q is still there after Close: %v", dir, err)
	}
}

// ShellSnapshot applies on this machine only: with another backend no
// snapshot is made (the backend starts the command alone) and the start's
// notice says so. The control, without ShellSnapshot, has no such notice.
func TestShellSnapshotOtherBackend(t *testing.T) {
	testkit.Parallel(t)
	for _, snap := range []bool{false, true} {
		t.Run(fmt.Sprint("ShellSnapshot=", snap), func(t *testing.T) {
			m, b := memManager(t, Options{ShellSnapshot: snap})
			res := mustStart(t, m, StartRequest{Command: "prog", WaitFor: "ready"})
			if said := strings.Contains(res.Notice, "applies on this machine only"); said != snap {
				t.Errorf("notice %q", res.Notice)
			}
			if n := b.starts.Load(); n != 1 {
				t.Errorf("the backend started %d commands, want 1", n)
			}
		})
	}
}

// A profile slower than ShellSnapshotTimeout costs one failed snapshot,
// not one per start, and its notice is said once; a change to the profile
// makes the next start try again.
func TestShellSnapshotSlowProfileFailsOnce(t *testing.T) {
	home := snapshotHome(t, "echo run >>\"$HOME/runs\"\nsleep 2\nexport SLOW=done\n")
	m := newManager(t, Options{ShellSnapshot: true, ShellSnapshotTimeout: time.Second, Env: []string{"HOME=" + home}})
	start := func() StartResult {
		t.Helper()
		res := mustStart(t, m, StartRequest{Command: `echo "slow=$SLOW"`, WaitFor: "slow=done", WaitMS: ms(20000)})
		if _, err := m.Kill(context.Background(), res.ID); err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := start() // the snapshot's attempt, then the login shell
	if !strings.Contains(first.Notice, "ran past 1s") || profileRuns(t, home) != 2 {
		t.Fatalf("the first start: notice %q, %d profile runs (want the attempt and the login shell)", first.Notice, profileRuns(t, home))
	}
	second := start()
	if second.Notice != "" || profileRuns(t, home) != 3 {
		t.Fatalf("the second start: notice %q, %d profile runs (want the login shell alone, no notice)", second.Notice, profileRuns(t, home))
	}
	later := time.Now().Add(2 * time.Second) // a new mtime, whatever the file system's resolution
	if err := os.Chtimes(filepath.Join(home, ".bash_profile"), later, later); err != nil {
		t.Fatal(err)
	}
	third := start()
	if !strings.Contains(third.Notice, "ran past") || profileRuns(t, home) != 5 {
		t.Fatalf("after the profile changed: notice %q, %d profile runs (want a new attempt and the login shell)", third.Notice, profileRuns(t, home))
	}
}

// The login shell is the one session that reads the user's profile, slow
// as some are (a version manager's init): a start waits it out and its
// command sees what the profile set. A shell session reads none of it.
func TestLoginShellReadsASlowProfile(t *testing.T) {
	home := snapshotHome(t, "echo run >>\"$HOME/runs\"\nsleep 1\nexport LOGIN_VAR=from-profile\n")
	m := newManager(t, Options{Env: []string{"HOME=" + home}})
	res := runOnce(t, m, `echo "var=$LOGIN_VAR"`)
	if !strings.Contains(res.Output, "var=from-profile") {
		t.Errorf("output %q: want the profile's LOGIN_VAR", res.Output)
	}
	if n := profileRuns(t, home); n != 1 {
		t.Errorf("the profile ran %d times for one start, want once", n)
	}
	// Control: the same start with a HOME that holds no profile.
	bare := mustStart(t, m, StartRequest{Command: `echo "var=$LOGIN_VAR."`, WaitFor: "var=", WaitMS: ms(20000), Env: []string{"HOME=/nonexistent"}})
	if !strings.Contains(bare.Output, "var=.") {
		t.Errorf("without the profile: output %q, want LOGIN_VAR empty", bare.Output)
	}
	sh, err := m.Start(context.Background(), StartRequest{Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Run(context.Background(), RunRequest{ID: sh.ID, Command: `echo "var=${LOGIN_VAR-unset}"`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "var=unset") || profileRuns(t, home) != 1 {
		t.Errorf("shell session: output %q, %d profile runs: want no profile read", r.Output, profileRuns(t, home))
	}
}
