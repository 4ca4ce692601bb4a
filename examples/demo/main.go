// Command demo shows what a model sees when it drives real interactive
// programs through agentpty's tools: a Python REPL, an interactive bash
// (state kept across writes, Ctrl-C), vim editing a file, and a password
// prompt. Each step prints the tool call as a model would make it (tool name
// and JSON arguments, passed as they are to Manager.Call, as a host's tool
// dispatcher would) and the JSON result the model gets back, with its output
// printed as a block.
//
// Run it from the examples module:
//
//	go run ./demo                 # every scene
//	go run ./demo bash vim        # only these
//	go run ./demo --no-snapshot   # run the login profile for every start
//
// Sessions start from a snapshot of the login shell
// (agentpty.Options.ShellSnapshot) unless --no-snapshot is given.
// A scene whose program is missing is skipped; a scene that does not behave
// as it should (a wait_for that should match and does not) makes the demo
// exit 1.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/agentpty/agentpty"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	snapshot := true
	var only []string
	for _, a := range args {
		if a == "--no-snapshot" {
			snapshot = false
			continue
		}
		only = append(only, a)
	}
	var names []string
	for _, s := range scenes {
		names = append(names, s.name)
	}
	for _, name := range only {
		if !slices.Contains(names, name) {
			fmt.Fprintf(os.Stderr, "demo: no scene %q (have %s)\n", name, strings.Join(names, ", "))
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// A bound on the whole demo, so a scene that hangs fails instead.
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	// Sessions start from a snapshot of the login shell: its profile runs
	// once, not for every start.
	m := agentpty.NewManager(agentpty.Options{ShellSnapshot: snapshot})
	defer m.Close()
	c := &caller{m: m, out: os.Stdout}

	var ran, failed, skipped int
	for _, s := range scenes {
		if len(only) > 0 && !slices.Contains(only, s.name) {
			continue
		}
		fmt.Printf("\n━━ %s: %s ━━\n", s.name, s.title)
		if _, err := exec.LookPath(s.needs); err != nil {
			fmt.Printf("\n(skipped: %s is not installed)\n", s.needs)
			skipped++
			continue
		}
		ran++
		if err := runScene(ctx, c, s); err != nil {
			fmt.Printf("\nFAIL %s: %v\n", s.name, err)
			failed++
		}
	}
	if err := m.Close(); err != nil {
		fmt.Printf("\nFAIL close: %v\n", err)
		failed++
	}
	fmt.Printf("\ndemo: %d scenes ran, %d failed, %d skipped\n", ran, failed, skipped)
	if failed > 0 {
		return 1
	}
	return 0
}

// runScene runs s in a temporary directory of its own and kills whatever
// sessions a failed scene left behind.
func runScene(ctx context.Context, c *caller, s scene) error {
	dir, err := os.MkdirTemp("", "agentpty-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	err = s.run(ctx, c, dir)
	for _, info := range c.m.List() {
		_, _ = c.m.Kill(context.Background(), info.ID)
	}
	return err
}
