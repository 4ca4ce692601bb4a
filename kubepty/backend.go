// Package kubepty runs agentpty sessions in a Kubernetes pod: each session
// is an exec into a container with a TTY, through client-go's
// remotecommand, over WebSocket (v5.channel.k8s.io) with SPDY as the
// fallback, as kubectl does. The terminal's size follows Resize through
// the resize channel, and the exit code comes from the status channel.
//
// The exec API carries bytes, sizes and an exit code, nothing else. What
// only the pod's kernel knows (the foreground program, whether it waits
// for input, the terminal's echo) and what the API cannot do (signals, a
// kill of everything the command started) go through a second exec of
// POSIX sh in the same container, reading /proc and the terminal's modes
// (stty) and sending signals with kill. A session's processes are found by
// a nonce in their environment: the command runs as
// `env AGENTPTY_ID=NONCE ... COMMAND`, so it and everything it starts
// carry it, and the one that leads its session is the command.
//
// The container needs sh, env, grep, stty and kill (any image with a
// shell and coreutils or busybox). Without them the session still runs;
// its state is "running" and End reaches only what closing the stream
// hangs up. Shell sessions (and pty-run) also need bash, mktemp, cat and
// rm there: the Backend keeps their files in the container (see Files).
//
// The status channel has no signal field: a runtime reports a command a
// signal ended as exit code 128+N. A session reports signal N where it
// sent N to the command itself (Signal to a foreground group the command
// leads, End's TERM, HUP and KILL), and the code otherwise: a signal from
// elsewhere, or a program that chose that code, looks the same.
package kubepty

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// ErrNoPod is returned by New and Start when the pod or its container does
// not exist.
var ErrNoPod = errors.New("agentpty: no such pod")

// Backend starts agentpty sessions in one container of one pod. Use it as
// agentpty.Options.Backend. It holds no connection: every session and
// every probe is an exec request of its own.
type Backend struct {
	config                    *rest.Config
	pods                      typedcorev1.PodInterface
	core                      rest.Interface
	namespace, pod, container string

	// spdy is set once a WebSocket upgrade was refused: later execs go
	// straight to SPDY instead of asking again.
	spdy atomic.Bool
	// arch is the container's uname -m, once a probe read it.
	arch atomic.Pointer[string]
	// probeTook is how long the last state probe's exec took, a
	// time.Duration: the measure of the way input takes (see awaitInput).
	probeTook atomic.Int64
}

// lookupTimeout bounds New's GET of the pod when config sets no Timeout.
const lookupTimeout = 30 * time.Second

// New returns a Backend that runs sessions in container of the pod
// namespace/pod, through the API server config names. An empty container
// means the pod's default one (its kubectl.kubernetes.io/default-container
// annotation, else its first container), as kubectl picks it. New reads
// the pod once, so that a wrong name fails here with an error wrapping
// ErrNoPod (the exec API itself reports a missing pod as an untyped
// upgrade failure).
func New(config *rest.Config, namespace, pod, container string) (*Backend, error) {
	if config == nil || namespace == "" || pod == "" {
		return nil, fmt.Errorf("agentpty: kubepty.New needs a config, a namespace and a pod (got namespace %q, pod %q)", namespace, pod)
	}
	cfg := rest.CopyConfig(config)
	core, err := typedcorev1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("agentpty: kube %s/%s: %w", namespace, pod, err)
	}
	b := &Backend{config: cfg, core: core.RESTClient(), pods: core.Pods(namespace),
		namespace: namespace, pod: pod, container: container}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = lookupTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p, err := b.getPod(ctx)
	if err != nil {
		return nil, err
	}
	if b.container, err = pickContainer(p, container); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoPod, b, err)
	}
	return b, nil
}

// String names the backend: "kube NAMESPACE/POD/CONTAINER".
func (b *Backend) String() string {
	return "kube " + b.namespace + "/" + b.pod + "/" + b.container
}

// getPod reads the pod; a missing one is an error wrapping ErrNoPod (and
// the API's NotFound, for apierrors.IsNotFound).
func (b *Backend) getPod(ctx context.Context) (*corev1.Pod, error) {
	p, err := b.pods.Get(ctx, b.pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: pod %q in namespace %q at %s: %w", ErrNoPod, b.pod, b.namespace, b.config.Host, err)
	case err != nil:
		return nil, fmt.Errorf("agentpty: kube %s/%s at %s: %w", b.namespace, b.pod, b.config.Host, err)
	}
	return p, nil
}

// pickContainer returns the container named name, or the pod's default.
func pickContainer(p *corev1.Pod, name string) (string, error) {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
		if c.Name == name {
			return name, nil
		}
	}
	if name != "" {
		return "", fmt.Errorf("no container %q (it has %s)", name, strings.Join(names, ", "))
	}
	if d := p.Annotations["kubectl.kubernetes.io/default-container"]; d != "" {
		return pickContainer(p, d)
	}
	if len(names) == 0 {
		return "", errors.New("it has no containers")
	}
	return names[0], nil
}

// executor returns an exec of argv in the container, with a TTY or
// without (stdin and stderr then follow the flags): WebSocket first and
// SPDY when the upgrade is refused, as kubectl does. IsUpgradeFailure
// comes from k8s.io/streaming, the package whose error client-go's
// WebSocket dialer returns; apimachinery's older copy of it never matches
// that error, so the fallback would never happen.
func (b *Backend) executor(argv []string, tty, stdin, stderr bool, watch *statusWatch) (remotecommand.Executor, error) {
	u := b.core.Post().Namespace(b.namespace).Resource("pods").Name(b.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: b.container, Command: argv,
			Stdin: stdin, Stdout: true, Stderr: stderr && !tty, TTY: tty,
		}, scheme.ParameterCodec).URL()
	sp, err := b.spdyExecutor(u, watch)
	if err != nil || b.spdy.Load() {
		return sp, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(b.config, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
		if httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) {
			b.spdy.Store(true)
			return true
		}
		return false
	})
}

// spdyExecutor is the SPDY half, its error stream watched when watch is
// not nil.
func (b *Backend) spdyExecutor(u *url.URL, watch *statusWatch) (remotecommand.Executor, error) {
	rt, up, err := spdy.RoundTripperFor(b.config)
	if err != nil {
		return nil, err
	}
	if watch != nil {
		up = &watchingUpgrader{Upgrader: up, watch: watch}
	}
	return remotecommand.NewSPDYExecutorForTransports(rt, up, "POST", u)
}
