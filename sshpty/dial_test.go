//go:build linux

package sshpty

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sshdtest"
)

// Dial checks the host key against known_hosts: a server whose key the
// file does not list, or lists differently, is refused; the same dial
// with the right file (the control) gets in and runs a command.
func TestDialChecksTheHostKey(t *testing.T) {
	srv := sshdtest.Start(t)
	other := sshdtest.Start(t) // another server's key under this server's name
	ignore := goleak.IgnoreCurrent()
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	wrong := filepath.Join(dir, "wrong")
	line, _ := os.ReadFile(other.KnownHosts)
	os.WriteFile(wrong, []byte(strings.Replace(string(line), other.Addr[strings.LastIndex(other.Addr, ":")+1:], srv.Addr[strings.LastIndex(srv.Addr, ":")+1:], 1)), 0o600)
	target := srv.User + "@" + srv.Addr
	for _, tc := range []struct{ name, file, want string }{
		{"unknown", empty, "key is unknown"},
		{"changed", wrong, "key mismatch"},
	} {
		b, err := Dial(ctx, target, DialConfig{KnownHosts: []string{tc.file}, KeyFiles: []string{srv.KeyFile}, NoAgent: true})
		if err == nil {
			b.Close()
			t.Errorf("%s host key: Dial succeeded", tc.name)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s host key: %v; want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Dial(ctx, target, DialConfig{KnownHosts: []string{filepath.Join(dir, "none")}, KeyFiles: []string{srv.KeyFile}, NoAgent: true}); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("no known_hosts file: %v; want a refusal naming known_hosts", err)
	}
	b, err := Dial(ctx, target, DialConfig{KnownHosts: []string{srv.KnownHosts}, KeyFiles: []string{srv.KeyFile}, NoAgent: true})
	if err != nil {
		t.Fatalf("Dial with the server's key known: %v", err)
	}
	term, out := startTerm(t, b, "echo dialed-in")
	out.waitFor(t, "dialed-in")
	term.Wait()
	closeTerm(term, out)
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	goleak.VerifyNone(t, ignore)
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"alice@example.com": "alice example.com:22",
		"bob@10.0.0.1:2222": "bob 10.0.0.1:2222",
		"carol@[::1]:2200":  "carol [::1]:2200",
		"dave@::1":          "dave [::1]:22",
	} {
		u, a, err := parseTarget(in)
		if got := u + " " + a; err != nil || got != want {
			t.Errorf("parseTarget(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, _, err := parseTarget("erin@"); err == nil {
		t.Error("parseTarget(\"erin@\") succeeded")
	}
}

// A connection whose server stops answering (its per-connection processes
// stopped: the kernel still acknowledges, nothing replies) is closed once
// a keepalive goes unanswered for an interval, and its session ends as a
// lost connection, without waiting for TCP to give up.
func TestKeepAliveClosesASilentConnection(t *testing.T) {
	const every = 300 * time.Millisecond
	srv := sshdtest.Start(t)
	leaks := noLeaks(t)
	b, err := Dial(context.Background(), srv.User+"@"+srv.Addr, DialConfig{KnownHosts: []string{srv.KnownHosts}, KeyFiles: []string{srv.KeyFile}, NoAgent: true, KeepAlive: every})
	if err != nil {
		t.Fatalf("Dial: %v\n%s", err, srv.Log())
	}
	term, out := startTerm(t, b, "echo ready; exec cat")
	out.waitFor(t, "ready")
	pid := term.PID()
	waited := make(chan error, 1)
	go func() {
		_, err := term.Wait()
		waited <- err
	}()
	// Taken before the freeze: a keepalive sent just before it goes
	// unanswered too, and closes the connection its interval after it
	// was sent, sooner after the freeze.
	frozen := time.Now()
	thaw := srv.Freeze()
	t.Cleanup(func() {
		// Let the server go on: it finds the connection closed and hangs
		// up the terminal, which ends the command.
		b.Close()
		term.Close()
		thaw()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tr := proc.NewTracker(pid)
		defer tr.Close()
		if err := tr.WaitGone(ctx); err != nil {
			t.Errorf("the command's processes outlived the hang-up: %v", err)
		}
		noneLeft(t, pid)
	})
	select {
	case err := <-waited:
		took := time.Since(frozen)
		var lost *LostError
		if !errors.As(err, &lost) || !errors.Is(err, agentpty.ErrClosed) || !strings.Contains(err.Error(), "the connection is lost") || !strings.Contains(err.Error(), srv.Addr) {
			t.Errorf("Wait after the server stopped answering: %v; want a LostError naming %s", err, srv.Addr)
		}
		if took < every/2 {
			t.Errorf("the session ended %v after the server stopped answering, before a keepalive could go unanswered for most of %v", took, every)
		}
		t.Logf("the session ended %v after the server stopped answering (keepalive every %v)", took, every)
	case <-time.After(10 * time.Second):
		t.Fatalf("the session still runs 10s after its server stopped answering (keepalive every %v)", every)
	}
	<-out.done
	if _, err := term.Write([]byte("x")); err == nil {
		t.Error("Write after the connection was closed succeeded")
	}
	term.Close()
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	leaks()
}
