//go:build linux

package sshpty

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

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
	term.Close()
	<-out.done
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
