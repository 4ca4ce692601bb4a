package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"github.com/agentpty/agentpty"
)

// demoSessions are what --demo starts: a REPL, a shell running a program
// that redraws every second, and a full-screen editor.
var demoSessions = []struct {
	program string
	req     agentpty.StartRequest
	input   string // typed once it is ready, as a model would
}{
	{"python3", agentpty.StartRequest{Command: "python3 -q", Cols: 100, Rows: 24, WaitFor: ">>> "}, "print('hello from the model')"},
	// top never ends: its start waits briefly for it to draw, not for its end.
	{"top", agentpty.StartRequest{Shell: true, Command: "top -d 1", Cols: 120, Rows: 32, WaitMS: agentpty.Millis(1500)}, ""},
	// vim waits for the login profile: one killed midway can leave a lock
	// that stalls the next login shells.
	{"vim", agentpty.StartRequest{Command: "vim", Cols: 100, Rows: 30, WaitUntil: agentpty.WaitUntilInput}, ""},
}

// startDemo starts the demo sessions whose programs are installed, and
// says which it left out.
func startDemo(ctx context.Context, m *agentpty.Manager, out io.Writer) error {
	for _, d := range demoSessions {
		if _, err := exec.LookPath(d.program); err != nil {
			fmt.Fprintf(out, "demo: %s is not installed; left out\n", d.program)
			continue
		}
		res, err := m.Start(ctx, d.req)
		if err != nil {
			return err
		}
		if d.input != "" {
			if _, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: d.input, Submit: true, WaitMS: agentpty.Millis(0)}); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "demo: %s runs %s\n", res.ID, d.req.Command)
	}
	return nil
}
