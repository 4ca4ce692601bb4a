package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/cmdline"
)

// Running approved commands in batches: one sandboxed session runs a
// driver that runs each command, as bash -c runs it, under strace in a
// scratch directory of its own, and lists the whole writable root after
// each, so that what each command ran and changed is its own. A start
// costs a sandbox and a terminal; a batch shares them, and the property
// tries many more commands in its budget. Each command is judged first by
// propRules exactly as Manager.Start asks (propApproved); one that breaks
// the property is run again alone through Start (propBox.run).

// propDriver runs the commands of a batch: the file n holds their count,
// cmdI the command I; tI gets its trace, outI its output, snapI the
// listing of the root after it (snap-1 before the first).
const propDriver = `set -u
T=%s R=%s
list() { find "$R" -path "$T" -prune -o -printf '%%P\t%%y\t%%m\t%%s\t%%T@\n' > "$T/snap$1"; }
n=$(cat "$T/n")
list -1
for ((i = 0; i < n; i++)); do
	cd "$R/c$i/work" || exit 1
	HOME="$R/c$i/home" timeout -s KILL 5 strace -f -qq -v -s 256 -e trace=execve -e signal=none -o "$T/t$i" \
		bash --norc --noprofile -c "$(cat "$T/cmd$i")" < /dev/null > "$T/out$i" 2>&1
	list $i
done
echo batch-done
`

// driverCommand is the start that runs propDriver: the only one the
// batch manager approves.
func (b *propBox) driverCommand() string {
	return "exec bash " + cmdline.ShellQuote(filepath.Join(b.t, "driver.sh"))
}

// runBatch runs cmds, each already approved, and returns what each did.
func (b *propBox) runBatch(t *testing.T, cmds []string) []propRun {
	t.Helper()
	if b.drive == nil {
		// Made after m has run sessions, which open descriptors it keeps:
		// each manager's leak check counts from its own making.
		b.drive = newManager(t, agentpty.Options{Sandbox: b.sb, Shell: []string{"bash", "--norc", "--noprofile", "-c"},
			Approver: agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
				if req.Command != b.driverCommand() {
					return errors.New("the batch manager runs only the driver")
				}
				return nil
			})})
	}
	if err := os.RemoveAll(b.t); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"n": strconv.Itoa(len(cmds)), "driver.sh": fmt.Sprintf(propDriver, cmdline.ShellQuote(b.t), cmdline.ShellQuote(b.root))}
	for i, c := range cmds {
		files["cmd"+strconv.Itoa(i)] = c
		b.plant(t, "c"+strconv.Itoa(i))
	}
	if err := os.Mkdir(b.t, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(b.t, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for i := range cmds {
			os.RemoveAll(filepath.Join(b.root, "c"+strconv.Itoa(i)))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(cmds))*10*time.Second+time.Minute)
	defer cancel()
	res, err := b.drive.Start(ctx, agentpty.StartRequest{Command: b.driverCommand(), WaitFor: "batch-done", WaitMS: ms(30000)})
	if err != nil {
		t.Fatalf("the batch driver: %v", err)
	}
	s, _ := b.drive.Session(res.ID)
	st, err := s.Wait(ctx)
	if err != nil || st.Code != 0 {
		t.Fatalf("the batch driver ended with %+v, %v; output:\n%s", st, err, s.Scrollback())
	}
	_, _ = b.drive.Kill(ctx, res.ID)
	outside := diffSnap(b.before, snapshot(t, b.outside))
	out := make([]propRun, len(cmds))
	prev := b.listing(t, -1)
	for i := range out {
		cur := b.listing(t, i)
		text, _ := os.ReadFile(filepath.Join(b.t, "out"+strconv.Itoa(i)))
		out[i] = propRun{execs: readTrace(t, filepath.Join(b.t, "t"+strconv.Itoa(i))), out: string(text),
			changed: append(diffSnap(prev, cur), outside...)}
		prev = cur
	}
	return out
}

// listing reads the driver's listing of the root after command i: each
// file with its type, mode, size and, but for a directory, its time.
func (b *propBox) listing(t *testing.T, i int) map[string]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(b.t, "snap"+strconv.Itoa(i)))
	if err != nil {
		t.Fatalf("the batch driver listed nothing after command %d: %v", i, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 || f[0] == filepath.Base(b.trace) {
			continue
		}
		if f[1] == "d" {
			f[4] = ""
		}
		out[f[0]] = strings.Join(f[1:], " ")
	}
	return out
}
