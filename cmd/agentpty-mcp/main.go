// Command agentpty-mcp is a Model Context Protocol server over stdio that gives a
// model agentpty's terminal tools (pty-start, pty-write, pty-kill and
// whatever else the library's Manager.Tools lists). The names, titles,
// descriptions, annotations and JSON Schemas come from Manager.Tools, every
// call goes to Manager.Call with its JSON arguments as they arrived, and
// the manager is closed on shutdown, so no program a model started
// outlives the server.
//
// Install it and register it (the README lists the flags; -h prints them,
// --version the version):
//
//	go install github.com/agentpty/agentpty/cmd/agentpty-mcp@latest
//	claude mcp add agentpty -- agentpty-mcp --idle-timeout 30m
//
// It stops when the client closes its stdin, or on SIGINT, SIGTERM or
// SIGHUP, killing every session, and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/rules"
	"github.com/agentpty/agentpty/sshpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the flag package has said why
	}
	if cfg.version {
		fmt.Println(versionLine())
		os.Exit(0)
	}
	opts, err := cfg.options()
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentpty-mcp: %v\n", err)
		os.Exit(2)
	}
	// A write to a client that went away is an error to handle, not a
	// signal that ends the server before it kills its sessions. Notify,
	// not Ignore: an ignored SIGPIPE would be inherited by every program.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	closeRemote, err := cfg.remote(ctx, &opts)
	if err == nil {
		err = opts.Validate() // refused at launch rather than at every start
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentpty-mcp: %v\n", err)
		stop()
		os.Exit(1)
	}
	err = runHost(ctx, opts, cfg.host(), &lineTransport{r: os.Stdin, w: os.Stdout}, os.Stderr)
	closeRemote()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "agentpty-mcp: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// remote connects to the machine --ssh names, if any, and makes it where
// sessions run; the function it returns closes the connection.
func (c config) remote(ctx context.Context, opts *agentpty.Options) (func(), error) {
	if c.ssh == "" {
		return func() {}, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := sshpty.Dial(dctx, c.ssh, sshpty.DialConfig{})
	if err != nil {
		return nil, err
	}
	opts.Backend = b
	return func() { _ = b.Close() }, nil
}

// run serves the tools over t until the client goes away or ctx ends, then
// kills every session the model left running. Session lifecycle lines go
// to stderr.
func run(ctx context.Context, opts agentpty.Options, t mcp.Transport, stderr io.Writer) error {
	return runHost(ctx, opts, host{}, t, stderr)
}

// host is what the server offers besides the manager's tools.
type host struct {
	// secrets offers pty-secret, whose pages wait secretTimeout for the
	// person (0: defaultSecretTimeout).
	secrets       bool
	secretTimeout time.Duration
	// manager, when set, is handed the manager once made (tests).
	manager func(*agentpty.Manager)
}

// runHost is run with what the host offers besides the tools; an
// opts.Approver made by newAskApprover puts what its rules refuse to the
// person.
func runHost(ctx context.Context, opts agentpty.Options, h host, t mcp.Transport, stderr io.Writer) (err error) {
	srv := &server{stderr: stderr}
	srv.ask, _ = opts.Approver.(*askApprover)
	if h.secrets {
		srv.secrets = newSecretPages(h.secretTimeout)
		defer srv.secrets.close()
	}
	opts.OnEvent = srv.event
	m := agentpty.NewManager(opts)
	srv.m = m
	if h.manager != nil {
		h.manager(m)
	}
	// A signal ends every session at once, so calls waiting on one return
	// and the server can stop.
	stop := context.AfterFunc(ctx, func() { _ = m.Close() })
	defer stop()
	defer func() {
		if cerr := m.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing sessions: %w", cerr)
		}
	}()
	return srv.mcp(version()).Run(ctx, t)
}

// config is what the flags set.
type config struct {
	cols, rows, maxSessions     int
	killGrace, idle, lifetime   time.Duration
	allow, deny, writable       list
	approveWrites, sandbox, net bool
	noSnapshot, version         bool
	approve                     string // "rules" or "ask"
	secretPrograms              list
	secretAny                   bool
	secretTimeout               time.Duration
	shell                       string
	ssh                         string // user@host[:port], or empty for this machine
	kube                        string // NAMESPACE/POD[/CONTAINER]
}

// list is a flag that may be given more than once.
type list []string

func (l *list) String() string     { return strings.Join(*l, ", ") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

const usage = `agentpty-mcp: an MCP server over stdio that gives a model real interactive
terminals (REPLs, debuggers, ssh, sudo, full-screen programs).

Usage: agentpty-mcp [flags]

Register it with an MCP client as a stdio server, e.g.
  claude mcp add agentpty -- agentpty-mcp --max-sessions 8
It serves until the client closes its stdin, or SIGINT, SIGTERM or SIGHUP,
then kills every program it started and exits 0.

Flags:
`

// parseFlags reads the command line; -h prints the usage to stderr and
// returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("agentpty-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.IntVar(&c.cols, "cols", agentpty.DefaultCols, "terminal width in `columns` when the model gives none")
	fs.IntVar(&c.rows, "rows", agentpty.DefaultRows, "terminal height in `rows` when the model gives none")
	fs.IntVar(&c.maxSessions, "max-sessions", agentpty.DefaultMaxSessions, "`n` sessions alive at once, exited ones included until killed")
	fs.DurationVar(&c.killGrace, "kill-grace", agentpty.DefaultKillGrace, "wait between SIGTERM and SIGKILL when a session ends")
	fs.DurationVar(&c.idle, "idle-timeout", 0, "kill a session no call has touched for this long (0: never)")
	fs.DurationVar(&c.lifetime, "max-lifetime", 0, "kill a session this long after it started (0: never)")
	fs.Var(&c.allow, "allow", "a command `pattern` the model may start, e.g. 'python3 *' (repeatable); with any, a command runs only when each of its simple commands matches one")
	fs.Var(&c.deny, "deny", "a command `pattern` the model may not start, e.g. 'rm *' (repeatable); checked before --allow, and alone it refuses only what it matches")
	fs.BoolVar(&c.approveWrites, "approve-writes", false, "apply the --allow/--deny rules to each pty-write that types input too, not only to starts")
	fs.BoolVar(&c.sandbox, "sandbox", false, "confine every program in the kernel (Landlock and namespaces on Linux, Seatbelt on macOS): writes only under --writable; refuse to start where that cannot be enforced")
	fs.Var(&c.writable, "writable", "a `dir`ectory sandboxed programs may write under (repeatable; implies --sandbox)")
	fs.BoolVar(&c.net, "network", true, "let sandboxed programs use the network; --network=false implies --sandbox")
	fs.StringVar(&c.shell, "shell", "bash -lc", "the `command line` each command runs under, split at spaces; 'bash -c' skips the login profile")
	fs.BoolVar(&c.noSnapshot, "no-snapshot", false, "run the login profile for every start instead of once (with --shell 'bash -lc', commands start from a snapshot of the login shell)")
	fs.StringVar(&c.ssh, "ssh", "", "run every session on `user@host[:port]` over SSH: the host key checked against ~/.ssh/known_hosts, the ssh-agent's keys or ~/.ssh/id_*")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.StringVar(&c.kube, "kube", "", "run sessions in a Kubernetes pod, `NAMESPACE/POD[/CONTAINER]`, through the kubeconfig kubectl uses")
	fs.StringVar(&c.approve, "approve", "rules", "who decides what --allow/--deny refuse: `rules` alone, or ask: put it to the person through the client (a form elicitation: allow once, allow for this session, deny); a client that cannot ask leaves it to the rules")
	fs.Var(&c.secretPrograms, "secret-program", "a `program` (name or path, root-owned) pty-secret may type the person's secret into (repeatable); offers the tool pty-secret")
	fs.BoolVar(&c.secretAny, "secret-any", false, "offer pty-secret for any program at a prompt with echo off, not only --secret-program's")
	fs.DurationVar(&c.secretTimeout, "secret-timeout", defaultSecretTimeout, "how long pty-secret's one-time page waits for the person")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return c, err
	}
	return c, nil
}

// options turns the flags into the manager's options.
func (c config) options() (agentpty.Options, error) {
	opts := agentpty.Options{
		Cols: c.cols, Rows: c.rows, MaxSessions: c.maxSessions, KillGrace: c.killGrace,
		IdleTimeout: c.idle, MaxLifetime: c.lifetime, ApproveWrites: c.approveWrites,
		Shell: strings.Fields(c.shell), ShellSnapshot: !c.noSnapshot,
		SecretPrograms: c.secretPrograms,
	}
	if c.cols < 1 || c.cols > 1000 || c.rows < 1 || c.rows > 500 {
		return opts, fmt.Errorf("--cols %d --rows %d: the size must be within 1-1000 by 1-500", c.cols, c.rows)
	}
	if len(opts.Shell) == 0 {
		return opts, errors.New("--shell is empty")
	}
	approver, err := c.approver()
	if err != nil {
		return opts, err
	}
	opts.Approver = approver
	sandboxed := c.sandbox || len(c.writable) > 0 || !c.net
	remote := ""
	switch {
	case c.kube != "" && c.ssh != "":
		return opts, errors.New("--kube and --ssh: sessions run in one place")
	case c.kube != "":
		remote = "--kube"
	case c.ssh != "":
		remote = "--ssh"
	}
	// Refused at launch: a remote backend refuses a sandbox at every start.
	if sandboxed && remote != "" {
		return opts, fmt.Errorf("--sandbox confines programs on this machine; it cannot apply with %s", remote)
	}
	if c.kube != "" {
		b, err := kubeBackend(c.kube)
		if err != nil {
			return opts, err
		}
		opts.Backend, opts.ShellSnapshot = b, false
	}
	if sandboxed {
		sb, err := agentpty.NewSandbox(agentpty.SandboxPolicy{WritableRoots: c.writable, AllowNetwork: c.net})
		if err != nil {
			return opts, fmt.Errorf("--sandbox: %w", err)
		}
		opts.Sandbox = sb
	}
	return opts, nil
}

// approver is what --allow, --deny and --approve make of the rules.
func (c config) approver() (agentpty.Approver, error) {
	var approver agentpty.Approver
	if c.approve != "rules" && c.approve != "ask" {
		return nil, fmt.Errorf("--approve %q: want rules or ask", c.approve)
	}
	switch {
	case len(c.allow) > 0:
		approver = rules.Rules{Allow: c.allow, Deny: c.deny}
	case len(c.deny) > 0:
		// Deny rules alone refuse what they match and nothing else: what
		// is judged is its own allow rule, the command of a start or a
		// run, the typed lines of a write (as Rules reads them, Enter as a
		// line feed).
		deny := c.deny
		approver = agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
			own := req.Command
			if req.Tool == agentpty.ToolWrite {
				own = strings.ReplaceAll(req.Input, "\r", "\n")
			}
			return rules.Rules{Allow: []string{own}, Deny: deny}.Approve(ctx, req)
		})
	}
	if c.approve == "ask" {
		approver = newAskApprover(approver)
	}
	return approver, nil
}

// host is what the flags offer besides the manager's options.
func (c config) host() host {
	return host{secrets: len(c.secretPrograms) > 0 || c.secretAny, secretTimeout: c.secretTimeout}
}

// version reports this module's version, as go install stamped it
// (v1.2.3, or a pseudo-version); "(devel)" when built from a checkout.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// versionLine is what --version prints: this module's version and the
// library's it was built with.
func versionLine() string {
	lib := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/agentpty/agentpty" && d.Replace == nil {
				lib = d.Version
			}
		}
	}
	return "agentpty-mcp " + version() + " (github.com/agentpty/agentpty " + lib + ")"
}
