package rules

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestApproveRulesHistoryWritesFile: "history *" approved history -s
// LINE and history -w FILE, which write a file of the model's choosing
// (a login profile, run by the next start). The control types both
// unconfined and the file holds the line; under the rules both are
// refused, naming the option, and no file is written.
func TestApproveRulesHistoryWritesFile(t *testing.T) {
	testkit.Parallel(t)
	ctx := waitCtx(t)
	rules := Rules{Allow: []string{promptCommand(""), "history *"}}
	for _, confined := range []bool{false, true} {
		m := promptManager(t, rules, confined)
		res, dir := promptSession(t, m, "")
		out := filepath.Join(dir, "profile")
		_, errS := typeLine(ctx, m, res.ID, "history -s 'rm -rf d'")
		_, errW := typeLine(ctx, m, res.ID, "history -w "+out)
		b, _ := os.ReadFile(out)
		if !confined {
			if errS != nil || errW != nil || !strings.Contains(string(b), "rm -rf d") {
				t.Fatalf("control: history wrote %q to %s (%v, %v)", b, out, errS, errW)
			}
			m.Close()
			continue
		}
		for _, e := range []struct {
			err  error
			want string
		}{{errS, "history -s"}, {errW, "history -w"}} {
			if !errors.Is(e.err, agentpty.ErrDenied) || !strings.Contains(e.err.Error(), e.want+", which reads or writes a file it names") {
				t.Errorf("%v; want ErrDenied naming %s", e.err, e.want)
			}
		}
		if b != nil {
			t.Errorf("%s was written: %q", out, b)
		}
	}
	all := Rules{Allow: []string{"*"}}
	for _, c := range []string{"history", "history 10", "history -c", "history -d 3", "history -d5"} {
		if err := all.Approve(context.Background(), agentpty.ApprovalRequest{Command: c}); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	for _, c := range []string{"history -a f", "history -r f", "history -n", "history -p x", "history -cw f", "history f", "history 1 2"} {
		if err := all.Approve(context.Background(), agentpty.ApprovalRequest{Command: c}); !errors.Is(err, agentpty.ErrDenied) {
			t.Errorf("%q: %v; want ErrDenied", c, err)
		}
	}
}
