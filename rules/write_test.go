package rules

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/cmdline"
	"github.com/agentpty/agentpty/internal/testkit"
)

// pagerRepo makes a git repository of one commit and returns it with the
// start of a session running git log through less, which shows the line
// "rm -rf d" forty times: more than the terminal's rows, so less waits.
func pagerRepo(t *testing.T) (string, agentpty.StartRequest) {
	t.Helper()
	testkit.Need(t, "git", "less")
	dir := t.TempDir()
	git := exec.Command("sh", "-c", "git init -q && git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x")
	git.Dir = dir
	if b, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v: %s", err, b)
	}
	format := "--format=tformat:" + strings.Repeat("rm -rf d%n", 40)
	return dir, agentpty.StartRequest{Command: "git log -1 " + cmdline.ShellQuote(format), Cwd: dir, Rows: 10,
		Env: []string{"GIT_PAGER=less", "LESS=R"}, WaitUntil: agentpty.WaitUntilInput}
}

// writesManager returns a manager whose rules decide starts and, with
// ApproveWrites, writes; for the control, every write is approved.
func writesManager(t *testing.T, rules Rules, control bool) *agentpty.Manager {
	var approver agentpty.Approver = rules
	if control {
		approver = agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
			if req.Tool == agentpty.ToolWrite {
				return nil
			}
			return rules.Approve(ctx, req)
		})
	}
	return newManager(t, agentpty.Options{Approver: approver, ApproveWrites: true})
}

// With ApproveWrites, Rules judge typed lines as a shell reads them; a
// pager reads them as its own keys. "git log -o FILE" is a git log
// command to the rules and, typed into less, makes less copy its input
// (here forty lines of "rm -rf d") into FILE. The control, approving
// every write, shows the file written; the rules must refuse the write,
// naming the program that would read it.
func TestApproveRulesWriteIntoPager(t *testing.T) {
	ctx := waitCtx(t)
	for _, control := range []bool{true, false} {
		dir, start := pagerRepo(t)
		out := filepath.Join(dir, "written.sh")
		rules := Rules{Allow: []string{"git log *"}}
		m := writesManager(t, rules, control)
		res := mustStart(t, m, start)
		if !strings.Contains(res.Output, "rm -rf d") || res.Foreground != "less" {
			t.Fatalf("git log did not show its output in less: %+v", res)
		}
		line := "git log -o" + out
		if err := rules.Approve(ctx, agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: res.ID, Command: start.Command, Input: line + "\r", Foreground: "bash"}); err != nil {
			t.Fatalf("the rules refuse %q typed into bash: %v; the test would not show the fault", line, err)
		}
		_, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: line, Submit: true, WaitUntil: agentpty.WaitUntilInput})
		if control {
			if err != nil {
				t.Fatal(err)
			}
			// Quitting finishes the copy.
			mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "q", WaitMS: ms(10000)})
			b, err := os.ReadFile(out)
			if err != nil || strings.Count(string(b), "rm -rf d") != 40 {
				t.Fatalf("control: less did not write %s: %v %q", out, err, b)
			}
		} else {
			if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), `types into "less", which is not a shell the rules read`) {
				t.Errorf("write into less: %v; want ErrDenied naming less", err)
			}
			if _, err := m.Kill(ctx, res.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", out, err)
			}
		}
		m.Close()
	}
}

// Two lines in one write: bash reads the first, which starts less, and
// less reads the second as its keys. Typed while bash waits at its prompt,
// each line alone is one the rules approve. The control shows the file
// written; the rules must refuse the write.
func TestApproveRulesWriteLinesForTheNextProgram(t *testing.T) {
	ctx := waitCtx(t)
	for _, control := range []bool{true, false} {
		dir, start := pagerRepo(t)
		out := filepath.Join(dir, "written.sh")
		m := writesManager(t, Rules{Allow: []string{"git log *", "bash"}}, control)
		res := mustStart(t, m, agentpty.StartRequest{Command: "bash", Cwd: dir, Rows: 10, Env: start.Env, WaitUntil: agentpty.WaitUntilInput})
		input := start.Command + "\rgit log -o" + out + "\r"
		_, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: input, WaitUntil: agentpty.WaitUntilInput})
		if control {
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "rm -rf d") {
				t.Fatalf("control: less did not write %s: %v %q", out, err, b)
			}
		} else {
			if !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), "types 2 lines") {
				t.Errorf("two lines: %v; want ErrDenied", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written (%v)", out, err)
			}
			// One line into bash at its prompt is approved.
			if _, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: "git log -1 --oneline", Submit: true, WaitUntil: agentpty.WaitUntilInput}); err != nil {
				t.Errorf("one line into bash: %v", err)
			}
		}
		m.Close()
	}
}

// Rules approve a typed line only for a shell they read waiting at its
// prompt (bash, rbash, sh, dash, ash; a path to one counts by its name): the
// same line typed where another program, or none, waits is refused.
func TestApproveRulesWriteForeground(t *testing.T) {
	rules := Rules{Allow: []string{"echo *"}}
	judge := func(fg string) error {
		return rules.Approve(context.Background(), agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Command: "bash", Input: "echo hi\r", Foreground: fg})
	}
	for _, fg := range []string{"bash", "rbash", "sh", "dash", "ash", "/bin/bash", "/usr/bin/rbash"} {
		if err := judge(fg); err != nil {
			t.Errorf("typed into %s: %v", fg, err)
		}
	}
	for fg, want := range map[string]string{
		"zsh":     `"zsh", which is not a shell the rules read`,
		"python3": `"python3", which is not a shell the rules read`,
		"":        "a terminal where no program waits for input",
	} {
		if err := judge(fg); !errors.Is(err, agentpty.ErrDenied) || !strings.Contains(err.Error(), want) {
			t.Errorf("typed into %q: %v; want ErrDenied ...%s", fg, err, want)
		}
	}
}
