package proc

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestIgnores reads SIG_IGN from the kernel: a bash whose trap on TERM is
// empty ignores it, one without the trap does not.
func TestIgnores(t *testing.T) {
	for _, c := range []struct {
		script string
		want   bool
	}{
		{`trap '' TERM; echo ready; read -r _`, true},
		{`echo ready; read -r _`, false},
	} {
		cmd := exec.Command("bash", "-c", c.script)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		n, _ := out.Read(buf) // the trap is set once it speaks
		if !strings.HasPrefix(string(buf[:n]), "ready") {
			t.Fatalf("%q: got %q", c.script, buf[:n])
		}
		if got := Ignores(cmd.Process.Pid, syscall.SIGTERM); got != c.want {
			t.Errorf("%q: Ignores(TERM) = %v, want %v", c.script, got, c.want)
		}
		in.Close()
		_ = cmd.Wait()
	}
}
