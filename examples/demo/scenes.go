package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentpty/agentpty"
)

// scene is one program driven through the tools, as a model would.
type scene struct {
	name  string
	title string
	needs string // the program the scene cannot run without
	run   func(ctx context.Context, c *caller, dir string) error
}

var scenes = []scene{
	{"python3", "a Python REPL: each call returns once it waits for input", "python3", python},
	{"bash", "a shell session: each command's output and exit code; Ctrl-C interrupts", "bash", shell},
	{"vim", "a full-screen editor: the model reads the screen", "vim", vim},
	{"password", "a password prompt: input_hidden tells the model, the host types the password", "bash", password},
}

func python(ctx context.Context, c *caller, _ string) error {
	c.note(`Start the REPL; wait_until "input" returns once it waits for input, no prompt to guess.`)
	r, err := c.call(ctx, agentpty.ToolStart, agentpty.StartRequest{Command: "python3 -q", WaitUntil: agentpty.WaitUntilInput})
	if err := check(r, err, state(agentpty.StateWaitingInput, "python3"), contains(">>> ")); err != nil {
		return err
	}
	id := r.ID
	c.note("Each write returns the moment python3 has answered and waits again.")
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: "sum(i*i for i in range(10))", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if err := check(r, err, state(agentpty.StateWaitingInput, "python3"), contains("285")); err != nil {
		return err
	}
	c.note("A computation that takes a while: the wait lasts exactly as long.")
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: "import time; time.sleep(0.5); 2**64", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if err := check(r, err, state(agentpty.StateWaitingInput, "python3"), contains("18446744073709551616")); err != nil {
		return err
	}
	c.note(`Ctrl-D (\x04) at the prompt ends the REPL; the wait ends when it exits.`)
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: `\x04`, WaitMS: agentpty.Millis(5000)})
	if err := check(r, err, exitCode(0)); err != nil {
		return err
	}
	c.note("An exited session keeps its id and output until pty-kill frees it.")
	_, err = c.call(ctx, agentpty.ToolKill, agentpty.KillRequest{ID: id})
	return err
}

func shell(ctx context.Context, c *caller, dir string) error {
	c.note("A shell session: its prompt marks where each command's output starts and ends, and its exit code.")
	r, err := c.call(ctx, agentpty.ToolStart, agentpty.StartRequest{Shell: true, Cwd: dir})
	if err := check(r, err, state(agentpty.StateWaitingInput, "bash")); err != nil {
		return err
	}
	id := r.ID
	c.note("pty-run returns the command's own output (no echo, no prompt) and exit code; state carries over.")
	r, err = c.call(ctx, agentpty.ToolRun, agentpty.RunRequest{ID: id, Command: "greeting=hello; mkdir -p sub && cd sub"})
	if err := check(r, err, ranWith(0), output("")); err != nil {
		return err
	}
	r, err = c.call(ctx, agentpty.ToolRun, agentpty.RunRequest{ID: id, Command: `echo "$greeting from $PWD"`})
	if err := check(r, err, ranWith(0), output("hello from "+filepath.Join(dir, "sub"))); err != nil {
		return err
	}
	r, err = c.call(ctx, agentpty.ToolRun, agentpty.RunRequest{ID: id, Command: "ls no-such-file"})
	if err := check(r, err, ranWith(2)); err != nil {
		return err
	}
	c.note("A command that does not end in time: prompt_after false, and state says it is still running.")
	r, err = c.call(ctx, agentpty.ToolRun, agentpty.RunRequest{ID: id, Command: "sleep 30", TimeoutMS: agentpty.Millis(300)})
	if err := check(r, err, state(agentpty.StateRunning, "sleep")); err != nil {
		return err
	}
	c.note(`Ctrl-C (\x03) interrupts it; the write during which the prompt returns carries its exit code, 130 (128 + SIGINT).`)
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: `\x03`, WaitUntil: agentpty.WaitUntilInput})
	if err := check(r, err, ranWith(130)); err != nil {
		return err
	}
	c.note("pty-kill ends the shell and everything it started.")
	_, err = c.call(ctx, agentpty.ToolKill, agentpty.KillRequest{ID: id})
	return err
}

func vim(ctx context.Context, c *caller, dir string) error {
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("line one\nline two\n"), 0o644); err != nil {
		return err
	}
	// -u NONE -N: no vimrc and no plugins, so the screen is the same on
	// every machine.
	c.note("vim shows the alternate screen, so the output is the screen as a person sees it. Wait for the file's last line.")
	r, err := c.call(ctx, agentpty.ToolStart, agentpty.StartRequest{Command: "vim -u NONE -N notes.txt", Cols: 60, Rows: 8, Cwd: dir, WaitFor: "line two"})
	if err := check(r, err, matched("line two")); err != nil {
		return err
	}
	id := r.ID
	c.note(`gg O opens a line above the first, Esc (\x1b) leaves insert mode, :w saves; vim says "written" when it is on disk.`)
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: `ggOhello from the model\x1b:w\r`, WaitFor: "written"})
	if err := check(r, err, matched("written"), contains("hello from the model")); err != nil {
		return err
	}
	c.note("Quit; the wait ends when vim exits.")
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, Input: `:q\r`, WaitMS: agentpty.Millis(5000)})
	if err := check(r, err, exitCode(0)); err != nil {
		return err
	}
	if _, err := c.call(ctx, agentpty.ToolKill, agentpty.KillRequest{ID: id}); err != nil {
		return err
	}
	c.note("A new session shows what vim saved; wait_ms bounds the wait, which ends when cat exits.")
	r, err = c.call(ctx, agentpty.ToolStart, agentpty.StartRequest{Command: "cat notes.txt", Cwd: dir, WaitMS: agentpty.Millis(10000)})
	if err := check(r, err, exitCode(0), contains("hello from the model\nline one\nline two")); err != nil {
		return err
	}
	if _, err := c.call(ctx, agentpty.ToolKill, agentpty.KillRequest{ID: r.ID}); err != nil {
		return err
	}
	got, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if want := "hello from the model\nline one\nline two\n"; string(got) != want {
		return fmt.Errorf("%s holds %q, want %q", file, got, want)
	}
	return nil
}

// demoPassword is what the demo's user answers at the password prompt.
const demoPassword = "hunter2"

func password(ctx context.Context, c *caller, _ string) error {
	// read -s turns echo off before it prints its prompt, as sudo, ssh and
	// getpass do, so once the prompt shows what is typed is not echoed.
	c.note("A program asks for a password.")
	const cmd = `read -s -p 'Password: ' pw; echo; echo "got ${#pw} characters"`
	r, err := c.call(ctx, agentpty.ToolStart, agentpty.StartRequest{Command: cmd, WaitFor: "Password: "})
	if err := check(r, err, matched("Password: ")); err != nil {
		return err
	}
	id := r.ID
	c.note("An empty write just reads; input_hidden says the terminal is not echoing: a password prompt.")
	r, err = c.call(ctx, agentpty.ToolWrite, agentpty.WriteRequest{ID: id, WaitMS: agentpty.Millis(0)})
	if err := check(r, err, hidden(true)); err != nil {
		return err
	}
	c.note("The model never types a password: the host asks its user and types the answer with WriteSecret, outside the tools.")
	r, err = c.secret(ctx, agentpty.SecretRequest{ID: id, Secret: []byte(demoPassword), WaitFor: "characters"})
	if err := check(r, err, matched("characters"), contains("got 7 characters"), lacks(demoPassword)); err != nil {
		return err
	}
	_, err = c.call(ctx, agentpty.ToolKill, agentpty.KillRequest{ID: id})
	return err
}

// A want checks one thing about a result and says what was wrong.
type want func(result) error

// check returns the call's error, or the first failed want.
func check(r result, err error, wants ...want) error {
	if err != nil {
		return err
	}
	for _, w := range wants {
		if err := w(r); err != nil {
			return fmt.Errorf("%s: %w", r.ID, err)
		}
	}
	return nil
}

func matched(lit string) want {
	return func(r result) error {
		if !r.Matched {
			return fmt.Errorf("wait_for %q did not match; output was %q", lit, r.Output)
		}
		return nil
	}
}

func contains(s string) want {
	return func(r result) error {
		if !strings.Contains(r.Output, s) {
			return fmt.Errorf("output %q does not contain %q", r.Output, s)
		}
		return nil
	}
}

func lacks(s string) want {
	return func(r result) error {
		if strings.Contains(r.Output, s) {
			return fmt.Errorf("output %q shows %q", r.Output, s)
		}
		return nil
	}
}

func exitCode(code int) want {
	return func(r result) error {
		switch {
		case !r.Exited:
			return fmt.Errorf("still running, want exit code %d; output was %q", code, r.Output)
		case r.ExitCode == nil:
			return fmt.Errorf("ended by %s, want exit code %d", r.Signal, code)
		case *r.ExitCode != code:
			return fmt.Errorf("exit code %d, want %d", *r.ExitCode, code)
		}
		return nil
	}
}

func hidden(h bool) want {
	return func(r result) error {
		if r.InputHidden != h {
			return fmt.Errorf("input_hidden is %t, want %t", r.InputHidden, h)
		}
		return nil
	}
}

// ranWith wants the prompt back after a command that exited with code.
func ranWith(code int) want {
	return func(r result) error {
		switch {
		case !r.PromptAfter:
			return fmt.Errorf("the prompt did not come back; output was %q", r.Output)
		case r.ExitCode == nil || *r.ExitCode != code:
			return fmt.Errorf("exit code %v, want %d", r.ExitCode, code)
		}
		return nil
	}
}

func output(s string) want {
	return func(r result) error {
		if r.Output != s {
			return fmt.Errorf("output %q, want %q", r.Output, s)
		}
		return nil
	}
}

// state wants the terminal's state and foreground program.
func state(st, fg string) want {
	return func(r result) error {
		if r.State != st || r.Foreground != fg {
			return fmt.Errorf("state %q foreground %q, want %q %q", r.State, r.Foreground, st, fg)
		}
		return nil
	}
}
