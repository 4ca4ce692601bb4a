package rules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// The property test's sandbox: each command it runs goes through
// Manager.Start (or, typed, Manager.Write with ApproveWrites), whose
// approver is propRules, into bash under strace in the library's own
// sandbox, in a fresh scratch directory.

// propShellStart is the start of the typed cases' interactive bash,
// which the box's approver lets through: only the lines typed into it
// are the rules' to judge.
const propShellStart = "exec bash --norc --noprofile -i"

// propBox runs commands for the property: one manager whose sessions run
// Shell (strace, then bash -c) in the sandbox, a scratch root that is
// the sandbox's only writable root, and a watched directory beside it.
type propBox struct {
	m       *agentpty.Manager
	drive   *agentpty.Manager // runs propDriver, for batches (propbatch_test.go); made at the first
	t       string            // where a batch's commands, traces and snapshots go, in root
	control atomic.Bool       // approve everything: for the controls only
	sb      agentpty.Sandbox
	root    string // the writable root; each command gets root/c
	trace   string // strace's output, in root under a name no command knows
	outside string // a watched directory outside the root
	before  map[string]string
}

// newPropBox builds the box, skipping t without strace or the sandbox.
func newPropBox(t *testing.T) *propBox {
	t.Helper()
	testkit.Need(t, "strace", "bash")
	base := t.TempDir()
	b := &propBox{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{b.root, b.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"sentinel", ".bashrc", ".profile"} {
		if err := os.WriteFile(filepath.Join(b.outside, f), []byte("keep\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.trace = filepath.Join(b.root, ".trace-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	sb := newSandbox(t, agentpty.SandboxPolicy{WritableRoots: []string{b.root}, Env: append(slices.Clone(agentpty.DefaultSandboxEnv), "HISTFILE")})
	approver := agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
		if b.control.Load() || req.Tool == agentpty.ToolStart && req.Command == propShellStart {
			return nil
		}
		return propRules.Approve(ctx, req)
	})
	b.sb = sb
	b.m = newManager(t, agentpty.Options{Sandbox: sb, Approver: approver, ApproveWrites: true, Shell: []string{
		"strace", "-f", "-qq", "-v", "-s", "256", "-e", "trace=execve", "-e", "signal=none", "-o", b.trace,
		"bash", "--norc", "--noprofile", "-c"}})
	b.t = filepath.Join(b.root, ".batch-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Mkdir(b.t, 0o755); err != nil {
		t.Fatal(err)
	}
	b.before = snapshot(t, b.outside)
	return b
}

// plant makes the scratch directory a command runs in: d and keep, which
// a bypass tends to remove, and x.sh, which one tends to run.
func (b *propBox) plant(t *testing.T, name string) (work, home string) {
	t.Helper()
	c := filepath.Join(b.root, name)
	work, home = filepath.Join(c, "work"), filepath.Join(c, "home")
	for _, d := range []string{work, home, filepath.Join(work, "d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"keep": "keep\n", "x.sh": "rm -rf d\n", "d/f": "f\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work, home
}

// run runs c for real: a start through Start, typed lines through Write
// into an interactive bash, each asking the approver as a host's would.
// It returns what ran and changed, and the error of the first request
// the approver refused (nil when none).
func (b *propBox) run(t *testing.T, c propCase) (propRun, error) {
	t.Helper()
	work, home := b.plant(t, "c")
	defer os.RemoveAll(filepath.Join(b.root, "c"))
	before := snapshot(t, b.root, b.t, b.trace)
	_ = os.Remove(b.trace)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := agentpty.StartRequest{Command: c.start, Cwd: work, Env: []string{"HOME=" + home}, WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(5000)}
	if c.typed != nil {
		req.Command, req.Env = propShellStart, append(req.Env, "HISTFILE=/dev/null")
	}
	res, err := b.m.Start(ctx, req)
	if err != nil {
		return propRun{}, err
	}
	var r propRun
	if c.typed != nil {
		err = b.typeLines(ctx, res, c.typed)
	}
	if s, ok := b.m.Session(res.ID); ok {
		if c.typed == nil && res.State != agentpty.StateWaitingInput {
			// Still running, or gone: strace, in front, ends only when
			// every process it traces has ended, in the background too.
			wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
			_, _ = s.Wait(wctx)
			wcancel()
		}
		r.out = s.Scrollback()
	}
	if _, err := b.m.Kill(ctx, res.ID); err != nil && !errors.Is(err, agentpty.ErrNoSession) {
		t.Fatalf("Kill(%s): %v", res.ID, err)
	}
	r.execs = readTrace(t, b.trace)
	after := snapshot(t, b.root, b.t, b.trace)
	r.changed = append(diffSnap(before, after), diffSnap(b.before, snapshot(t, b.outside))...)
	return r, err
}

// typeLines types each line, then Enter, into the shell res started,
// waiting after each until a program waits for input again; it stops at
// the first the approver refuses and returns that refusal.
func (b *propBox) typeLines(ctx context.Context, res agentpty.StartResult, lines []string) error {
	for _, l := range lines {
		_, err := b.m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: strings.ReplaceAll(l, `\`, `\\`), Submit: true,
			WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(3000)})
		if errors.Is(err, agentpty.ErrDenied) {
			return err
		}
		if err != nil {
			return nil // the shell is gone (exit, exec): nothing reads the rest
		}
	}
	return nil
}

// snapshot lists every file under dir but those in skip, with its type,
// mode, size and modification time.
func snapshot(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if slices.Contains(skip, p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		mt := info.ModTime().UnixNano()
		if info.IsDir() {
			mt = 0 // a directory's time changes when bash only lists it
		}
		out[rel] = fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), mt)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// diffSnap names what differs between two snapshots.
func diffSnap(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if w, ok := before[p]; !ok {
			out = append(out, "created "+p)
		} else if w != v {
			out = append(out, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		}
	}
	slices.Sort(out)
	return out
}

// traceLine is an execve that succeeded in strace's output: the path and
// the argument list.
var traceLine = regexp.MustCompile(`execve\("((?:[^"\\]|\\.)*)", \[(.*?)\](?:, \[.*\])?\) = 0`)

// traceArg is one string of an argument list.
var traceArg = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// readTrace returns each program executed, but the first (bash itself):
// its path's base name, then its arguments (argv[1:]).
func readTrace(t *testing.T, file string) [][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("strace left no trace: %v", err)
	}
	var out [][]string
	for _, m := range traceLine.FindAllStringSubmatch(string(b), -1) {
		argv := []string{filepath.Base(unC(m[1]))}
		for i, a := range traceArg.FindAllStringSubmatch(m[2], -1) {
			if i > 0 {
				argv = append(argv, unC(a[1]))
			}
		}
		out = append(out, argv)
	}
	if len(out) == 0 || out[0][0] != "bash" {
		t.Fatalf("strace's trace does not start with bash: %q", b)
	}
	return out[1:]
}

// unC undoes strace's C escapes as well as strconv can.
func unC(s string) string {
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return u
	}
	return s
}
