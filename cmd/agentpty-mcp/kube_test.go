package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// --kube builds the Kubernetes backend from the kubeconfig kubectl would
// use, here one pointing at the stand-in API server: a session runs in
// the pod and its exit code comes back; a bad spec and a missing pod are
// clear errors.
func TestKubeFlag(t *testing.T) {
	srv := standIn(t)

	cfg, err := parseFlags([]string{"--kube", "agents/sandbox-0", "--shell", "bash -c"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cfg.options()
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	if _, ok := opts.Backend.(*kubepty.Backend); !ok || opts.ShellSnapshot {
		t.Fatalf("--kube gave backend %T, snapshot %v", opts.Backend, opts.ShellSnapshot)
	}
	m := agentpty.NewManager(opts)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wait := 10000
	res, err := m.Start(ctx, agentpty.StartRequest{Command: "echo in-the-pod; exit 3", WaitMS: &wait})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if !strings.Contains(res.Output, "in-the-pod") || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("output %q, exit code %v; want in-the-pod and 3", res.Output, res.ExitCode)
	}
	if srv.WebSocket.Load() == 0 {
		t.Errorf("no exec reached the stand-in over WebSocket")
	}

	for spec, want := range map[string]string{
		"sandbox-0":               "NAMESPACE/POD",
		"agents/":                 "NAMESPACE/POD",
		"agents/nope":             "no such pod",
		"agents/sandbox-0/helper": "no such pod",
	} {
		cfg, err := parseFlags([]string{"--kube", spec}, io.Discard)
		if err == nil {
			_, err = cfg.options()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--kube %q: %v; want an error saying %q", spec, err, want)
		}
	}
	cfg, err = parseFlags([]string{"--kube", "agents/sandbox-0", "--ssh", "user@127.0.0.1"}, io.Discard)
	if err == nil {
		_, err = cfg.options()
	}
	if err == nil || !strings.Contains(err.Error(), "--kube and --ssh") {
		t.Errorf("--kube with --ssh: %v; want an error naming both", err)
	}
}

// A sandbox confines programs on this machine: with --kube or --ssh it is
// refused at launch, with an error naming both flags, rather than at
// every start. --writable and --network=false imply --sandbox.
func TestRemoteRefusesSandbox(t *testing.T) {
	standIn(t)
	for _, remote := range [][]string{{"--kube", "agents/sandbox-0"}, {"--ssh", "user@127.0.0.1"}} {
		for _, sandbox := range [][]string{{"--sandbox"}, {"--writable", t.TempDir()}, {"--network=false"}} {
			args := append(append([]string{}, remote...), sandbox...)
			cfg, err := parseFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cfg.options(); err == nil || !strings.Contains(err.Error(), "--sandbox") || !strings.Contains(err.Error(), remote[0]) {
				t.Errorf("%v: %v; want a refusal naming --sandbox and %s", args, err, remote[0])
			}
		}
	}
	// The server itself refuses to launch.
	cmd := serverCmd("--kube", "agents/sandbox-0", "--sandbox")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "cannot apply with --kube") {
		t.Errorf("a server with --kube and --sandbox: %v %q; want it refused at launch", err, stderr.String())
	}
}

// standIn serves the pod agents/sandbox-0 from the stand-in API server
// until t ends, named by the kubeconfig KUBECONFIG points at.
func standIn(t *testing.T) *kubetest.Server {
	srv := kubetest.NewServer(kubetest.Pod("agents", "sandbox-0"))
	t.Cleanup(func() {
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(srv.Kubeconfig("agents")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	return srv
}
