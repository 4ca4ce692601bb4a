package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/rules"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Each flag changes what it says, seen through the tools.
func TestFlags(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	port := testkit.Serve(t, func(net.Conn) {})
	write := "touch " + in + "/f && echo wrote-in; touch " + out + "/f 2>/dev/null && echo wrote-out || echo refused-out; " +
		"(echo > /dev/tcp/127.0.0.1/" + port + ") 2>/dev/null && echo net-yes || echo net-no; echo end-of-test"
	type step struct {
		tool string
		args map[string]any
		want string // in the result's text; "!" first: a tool error with this text
	}
	// A HOME whose login profile sets a variable, for the shell cases.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("export FROM_PROFILE=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profiled := `shopt -q login_shell && echo login || echo no-login; echo "profile=$FROM_PROFILE"; echo end-of-test`
	start := func(cmd string, want string) step {
		return step{"pty-start", map[string]any{"command": cmd, "wait_for": "end-of-test"}, want}
	}
	for _, tc := range []struct {
		name  string
		flags []string
		steps []step
		log   string // a log message that must come
	}{
		{"size", []string{"--cols", "80", "--rows", "24"}, []step{start("echo size $(stty size) end-of-test", "size 24 80")}, ""},
		{"size default", nil, []step{start("echo size $(stty size) end-of-test", "size 32 120")}, ""},
		{"max-sessions", []string{"--max-sessions", "1"}, []step{start("echo end-of-test", "end-of-test"), start("echo end-of-test", "!too many sessions")}, ""},
		{"idle-timeout", []string{"--idle-timeout", "300ms"}, []step{start("echo end-of-test; exec cat", "end-of-test")}, "pty-1 reaped"},
		{"max-lifetime", []string{"--max-lifetime", "1s"}, []step{start("echo end-of-test; exec cat", "end-of-test"),
			{"pty-write", map[string]any{"id": "pty-1", "wait_for": "never printed", "wait_ms": 20000}, `"exited":true`}}, "pty-1 reaped"},
		{"allow", []string{"--allow", "echo *"}, []step{start("echo end-of-test", "end-of-test"), start("ls", "!matches no allow rule")}, ""},
		{"deny", []string{"--deny", "rm *"}, []step{start("echo end-of-test", "end-of-test"), start("rm -rf "+out+"/x", "!matches deny rule")}, ""},
		{"sandbox", []string{"--writable", in, "--network=false"}, []step{start(write, "wrote-in\nrefused-out\nnet-no")}, ""},
		{"no sandbox", nil, []step{start(write, "wrote-in\nwrote-out\nnet-yes")}, ""},
		{"shell", []string{"--shell", "bash -c"}, []step{start("shopt -q login_shell && echo login || echo no-login; echo end-of-test", "no-login")}, ""},
		// By default the login profile runs once and each command starts
		// from its snapshot: not a login shell, but what the profile set.
		{"shell default", nil, []step{start(profiled, "no-login\nprofile=yes")}, ""},
		{"shell no-snapshot", []string{"--no-snapshot"}, []step{start(profiled, "\nlogin\nprofile=yes")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.name, "shell ") {
				t.Setenv("HOME", home)
			}
			_ = os.Remove(filepath.Join(out, "f"))
			ctx := testCtx(t)
			cs, _, n := connect(t, ctx, tc.flags...)
			for _, s := range tc.steps {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
				if err != nil {
					t.Fatalf("%s %v: %v", s.tool, s.args, err)
				}
				text := textOf(res)
				if wantErr := strings.HasPrefix(s.want, "!"); wantErr != res.IsError || !strings.Contains(resultText(text), strings.TrimPrefix(s.want, "!")) {
					t.Errorf("%s %v: error %t, %s; want %q", s.tool, s.args, res.IsError, text, s.want)
				}
			}
			if tc.log != "" {
				n.awaitLog(t, ctx, tc.log)
			}
		})
	}
}

// resultText is a result's output with its JSON unquoted, or the text as
// it is when it is not a result.
func resultText(text string) string {
	var r struct {
		Output string `json:"output"`
	}
	if json.Unmarshal([]byte(text), &r) != nil || r.Output == "" {
		return text
	}
	return "\n" + r.Output + "\n" + text
}

// --kill-grace bounds how long a program that ignores SIGTERM and SIGHUP
// holds a kill; the default is 2 s.
func TestKillGraceFlag(t *testing.T) {
	ctx := testCtx(t)
	cs, _, _ := connect(t, ctx, "--kill-grace", "100ms")
	start := call(t, ctx, cs, nil, "pty-start", map[string]any{"command": "trap '' TERM HUP; echo ready; exec sleep 300", "wait_for": "ready"})
	began := time.Now()
	kill := call(t, ctx, cs, nil, "pty-kill", map[string]any{"id": start.result.ID})
	if took := time.Since(began); took > 1500*time.Millisecond {
		t.Errorf("kill took %v with --kill-grace 100ms", took)
	}
	if !strings.Contains(kill.text, "SIGKILL") {
		t.Errorf("kill result %s: the program should have needed SIGKILL", kill.text)
	}
}

// -h documents every flag and exits 0; a bad flag exits 2.
func TestHelp(t *testing.T) {
	cmd := serverCmd("-h")
	cmd.Stderr = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("-h: %v\n%s", err, out)
	}
	for _, f := range []string{"-cols", "-rows", "-max-sessions", "-kill-grace", "-idle-timeout", "-max-lifetime", "-allow", "-deny", "-approve-writes", "-sandbox", "-writable", "-network", "-shell", "claude mcp add"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("-h does not mention %s:\n%s", f, out)
		}
	}
	cmd = serverCmd("--no-such-flag")
	cmd.Stderr = nil
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "no-such-flag") {
		t.Errorf("a bad flag: %v\n%s", err, out)
	}
}

// --version prints the server's version and the library's and exits 0
// without serving; built from the checkout both are "(devel)" (an
// installed binary's is checked by scripts/proxycheck).
func TestVersionFlag(t *testing.T) {
	out, err := serverCmd("--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "agentpty-mcp (devel) (github.com/agentpty/agentpty ") {
		t.Fatalf("--version: %v %q", err, out)
	}
}

// The flags reach the manager's options; --approve-writes only sets
// Options.ApproveWrites, which the library applies.
func TestFlagsToOptions(t *testing.T) {
	c, err := parseFlags([]string{"--approve-writes", "--allow", "ls *", "--allow", "cat *", "--deny", "rm *", "--shell", "zsh -c", "--kill-grace", "3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.options()
	if err != nil {
		t.Fatal(err)
	}
	policy, ok := opts.Approver.(rules.Rules)
	if !opts.ApproveWrites || !ok || len(policy.Allow) != 2 || len(policy.Deny) != 1 || strings.Join(opts.Shell, " ") != "zsh -c" || opts.KillGrace != 3*time.Second {
		t.Errorf("options %+v", opts)
	}
	// --deny alone with --approve-writes refuses what it matches, in a
	// start and in typed lines alike, and nothing else.
	c, err = parseFlags([]string{"--approve-writes", "--deny", "rm *"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = c.options(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		req  agentpty.ApprovalRequest
		deny bool
	}{
		{agentpty.ApprovalRequest{Tool: agentpty.ToolStart, Command: "bash"}, false},
		{agentpty.ApprovalRequest{Tool: agentpty.ToolStart, Command: "rm -rf x"}, true},
		{agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Command: "bash", Input: "ls -l\r", Foreground: "bash"}, false},
		{agentpty.ApprovalRequest{Tool: agentpty.ToolWrite, ID: "pty-1", Command: "bash", Input: "rm -rf x\r", Foreground: "bash"}, true},
	} {
		if err := opts.Approver.Approve(ctx, tc.req); (err != nil) != tc.deny {
			t.Errorf("deny-only rules on %+v: %v, want denied %v", tc.req, err, tc.deny)
		}
	}
	// The login shell starts from its snapshot unless --no-snapshot.
	for _, tc := range []struct {
		args []string
		snap bool
	}{{nil, true}, {[]string{"--no-snapshot"}, false}} {
		c, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if opts, err := c.options(); err != nil || opts.ShellSnapshot != tc.snap {
			t.Errorf("flags %q: ShellSnapshot %v (%v), want %v", tc.args, opts.ShellSnapshot, err, tc.snap)
		}
	}
	if _, err := parseFlags([]string{"stray"}, io.Discard); err == nil {
		t.Error("a stray argument is accepted")
	}
	for _, bad := range [][]string{{"--cols", "0"}, {"--rows", "501"}, {"--shell", " "}} {
		c, err := parseFlags(bad, io.Discard)
		if err == nil {
			_, err = c.options()
		}
		if err == nil {
			t.Errorf("%v is accepted", bad)
		}
	}
}

// --ssh runs every session on the named machine: here a real OpenSSH
// server on 127.0.0.1, known from the user's known_hosts, logged into
// with the user's default key.
func TestSSHFlag(t *testing.T) {
	srv := sshdtest.Start(t)
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{srv.KnownHosts: "known_hosts", srv.KeyFile: "id_ed25519"} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".ssh", to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	ctx := testCtx(t)
	cs, _, _ := connect(t, ctx, "--ssh", srv.User+"@"+srv.Addr, "--shell", "bash -c")
	port := srv.Addr[strings.LastIndex(srv.Addr, ":")+1:]
	res := call(t, ctx, cs, nil, "pty-start", map[string]any{"command": `echo "over ${SSH_CONNECTION##* }"`, "wait_for": "over " + port})
	if !strings.Contains(res.text, "over "+port) {
		t.Fatalf("the session did not run over SSH: %q", res.text)
	}
	// An unknown host key is refused: the server does not start.
	if err := os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := serverCmd("--ssh", srv.User+"@"+srv.Addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := stderr.String()
	if err == nil || !strings.Contains(string(out), "key is unknown") {
		t.Fatalf("a server whose host key is not known: %v %q", err, out)
	}
	// --sandbox confines programs here: with --ssh it is refused at once.
	cmd = serverCmd("--ssh", srv.User+"@"+srv.Addr, "--sandbox")
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "cannot apply with --ssh") {
		t.Fatalf("a server with --ssh and --sandbox: %v %q", err, stderr.String())
	}
}
