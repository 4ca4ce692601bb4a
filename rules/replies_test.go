package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveWritesReplyAtPrompt: printf '\e[?2004$p' asks the terminal
// for a mode; the library's reply, typed while readline waits, stays on
// the prompt's line, and the next approved line ls -d zz_listed would run
// as 2004 and 0$yls -d zz_listed. The control, unconfined, shows the reply
// on the line and bash running the joined word; under ApproveWrites the
// line is emptied before the approved write, and ls runs as judged.
func TestApproveWritesReplyAtPrompt(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	rules := Rules{Allow: []string{promptCommand(""), "printf *", "ls *"}}
	for _, confined := range []bool{false, true} {
		m := promptManager(t, rules, confined)
		res, dir := promptSession(t, m, "")
		if err := os.Mkdir(filepath.Join(dir, "zz_listed"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The reply's echo at the prompt shows it typed and read.
		q, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: `printf '\e[?2004$p'`, Literal: true, Submit: true,
			WaitFor: "2004;0$y", WaitMS: ms(10000)})
		if err != nil || !q.Matched {
			t.Fatalf("the reply did not reach the prompt: %v %+v", err, q)
		}
		out, err := typeLine(ctx, m, res.ID, "ls -d zz_listed")
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Contains(out.Output, "2004: command not found")
		ran := strings.Contains(out.Output, "\nzz_listed\n")
		if !confined {
			if !joined || ran {
				t.Fatalf("control: the reply did not join the next line: %q", out.Output)
			}
			m.Close()
			continue
		}
		if joined || !ran {
			t.Errorf("the approved line did not run as judged: %q", out.Output)
		}
	}
}
