// Command web serves a page that shows a Manager's sessions in the
// browser: a list (id, command, state, foreground program, size) kept up
// to date from the Manager's events, and each session in a terminal
// emulator (xterm.js) fed over a WebSocket through Session.Attach: the
// screen as it is first, then the live bytes. A person watches; with
// --allow-typing the person types too, as on Attach.
//
//	go run ./web --demo                      # python3, top and vim, at once
//	go run ./web --addr 127.0.0.1:9000       # an empty manager, for a host to fill
//	go run ./web --public --addr 0.0.0.0:8080 # beyond loopback
//
// The URL printed at start holds a token that every request needs, on
// loopback too: other users and processes of the machine reach loopback.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentpty/agentpty"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "web:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// errUsage is a bad flag or a bad combination of flags.
var errUsage = errors.New("usage")

// config is what the flags say, and the Manager's options.
type config struct {
	addr        string
	public      bool
	allowTyping bool
	demo        bool
	options     agentpty.Options // the page's list is added to OnEvent
}

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "where to listen (host:port)")
	fs.BoolVar(&c.public, "public", false, "allow an address beyond loopback (every request needs the token in the URL printed at start, wherever it listens)")
	fs.BoolVar(&c.allowTyping, "allow-typing", false, "let the person in the page type into the sessions (one typist at a time, as Session.Attach)")
	fs.BoolVar(&c.demo, "demo", false, "start python3, a shell running top, and vim")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	return c, nil
}

// run serves until ctx ends, then closes the server and the manager.
func run(ctx context.Context, args []string, out io.Writer) error {
	c, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	srv, err := listen(c)
	if err != nil {
		return err
	}
	defer srv.close()
	if c.demo {
		if err := startDemo(ctx, srv.m, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "agentpty web: %s\n", srv.url())
	if c.allowTyping {
		fmt.Fprintln(out, "typing allowed: the person in the page types into the sessions")
	}
	return srv.serve(ctx)
}
