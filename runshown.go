package agentpty

import (
	"strconv"
	"strings"
	"sync"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// runShownKept is how many pty-run commands a session remembers for its
// text; an older run's source line shows as runShownOld.
const runShownKept = 64

// runShownOld stands for a run's source line whose command is forgotten.
const runShownOld = "# (an earlier pty-run command)"

// runShown puts each pty-run's command back in the text a result, an event
// or a host reads, where the shell echoed the line that sources its run
// file (see handOver): the model sees what it ran, as a recording's "m"
// marker names it, never the session's private path. Its own lock, taken
// without mu or files held.
type runShown struct {
	mu     sync.Mutex
	prefix string         // " . '<dir>/": how every source line starts as typed
	cmds   map[int]string // run number → command, the newest runShownKept
}

// add remembers run number n's command, typed as line (handOver's).
func (r *runShown) add(dir string, n int, command string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmds == nil {
		q := cmdline.ShellQuote(dir + "/")
		r.prefix, r.cmds = " . "+q[:len(q)-1], map[int]string{}
	}
	r.cmds[n] = command
	delete(r.cmds, n-runShownKept)
}

// text returns t with each source line's typed part replaced by its
// command, as readline echoed " . '<file>'" after the prompt.
func (r *runShown) text(t string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prefix == "" || !strings.Contains(t, r.prefix) {
		return t
	}
	var b strings.Builder
	for {
		i := strings.Index(t, r.prefix)
		if i < 0 {
			break
		}
		b.WriteString(t[:i])
		rest := t[i+len(r.prefix):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(rest[:j])
		if err != nil || j >= len(rest) || rest[j] != '\'' {
			b.WriteString(r.prefix) // not a source line after all
			t = rest
			continue
		}
		if cmd, ok := r.cmds[n]; ok {
			b.WriteString(cmd)
		} else {
			b.WriteString(runShownOld)
		}
		t = rest[j+1:]
	}
	b.WriteString(t)
	return b.String()
}

// lines is text applied to each of ls, in place.
func (r *runShown) lines(ls []string) []string {
	for i, l := range ls {
		ls[i] = r.text(l)
	}
	return ls
}
