package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

func TestPrintResult(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{
			"fields in order, output as a block",
			`{"output":">>> 2**64\n18446744073709551616\n>>> ","exited":false,"matched":true,"id":"pty-1"}`,
			`← {"id": "pty-1", "matched": true, "exited": false}
  output:
  │ >>> 2**64
  │ 18446744073709551616
  │ >>> 
`,
		},
		{
			"empty output, fields a later version adds",
			`{"id":"pty-2","output":"","signal":"SIGHUP","zeta":1,"alpha":"x"}`,
			`← {"id": "pty-2", "signal": "SIGHUP", "alpha": "x", "zeta": 1}
  output: ""
`,
		},
		{
			"control bytes are shown, not sent to the reader's terminal",
			`{"id":"pty-3","output":"\u001b[31mred\r"}`,
			`← {"id": "pty-3"}
  output:
  │ \x1b[31mred\x0d
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			(&caller{out: &b}).printResult([]byte(tc.json))
			if got := b.String(); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The password scene types the password the way the README says a host
// does, with WriteSecret, never as a tool call's input.
func TestPasswordSceneUsesWriteSecret(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := password(ctx, &caller{m: m, out: &b}, t.TempDir()); err != nil {
		t.Fatalf("the password scene: %v\n%s", err, b.String())
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "→ pty-") && strings.Contains(line, demoPassword) {
			t.Errorf("a tool call types the password: %s", line)
		}
	}
	if !strings.Contains(out, "→ host: WriteSecret") || strings.Contains(out, demoPassword) {
		t.Errorf("the scene does not type the password with WriteSecret, or shows it:\n%s", out)
	}
}
