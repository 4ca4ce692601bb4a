// Package kubetest is a stand-in Kubernetes API server for tests of exec
// clients, built from Kubernetes' own server code: the container
// runtime's streaming server (k8s.io/cri-streaming's ServeExec, SPDY with
// the resize and status channels, and WebSocket) as the node, running
// each command on a local pseudo-terminal, behind an API endpoint that
// proxies exec to it as kube-apiserver does (k8s.io/apimachinery's
// upgrade-aware proxy, and k8s.io/apiserver's stream translator for
// WebSocket v5) and answers GET of its pods.
//
// Commands run on this machine, as the user running the test: the
// "container" is this machine, which lets a test check the processes a
// session leaves from its own /proc.
package kubetest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/proxy"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// Server is a running stand-in API server with a node behind it.
type Server struct {
	// URL is the API server's address (http://127.0.0.1:PORT).
	URL string

	api, node *httptest.Server
	runtime   *node
	conns     connSet // the API server's connections, hijacked ones too
	nodeConns connSet // the node's: the API server's streams to it
	spdyOnly  bool
	env       []string // the containers' variables beside the defaults
	outDelay  time.Duration
	inDelay   time.Duration

	mu   sync.Mutex
	pods map[string]bool // "namespace/name"

	// WebSocket and SPDY count the exec requests served over each;
	// Refused counts the WebSocket ones SPDYOnly turned away.
	WebSocket, SPDY, Refused atomic.Int64
}

// Option adjusts a Server.
type Option func(*Server)

// SPDYOnly makes the API server refuse WebSocket exec requests, as an API
// server from before the stream translator does, so that clients fall
// back to SPDY.
func SPDYOnly() Option { return func(s *Server) { s.spdyOnly = true } }

// Env sets variables ("NAME=value") of the commands run in the
// containers, over the defaults: a PATH of a directory holding some of
// this machine's programs stands for an image that has only those.
func Env(kv ...string) Option { return func(s *Server) { s.env = append(s.env, kv...) } }

// OutputDelay holds each chunk of a terminal's output d before the node
// sends it, as a slow link between client and node does: the command
// has written it, and the client has not seen it yet.
func OutputDelay(d time.Duration) Option { return func(s *Server) { s.outDelay = d } }

// InputDelay holds each chunk of a terminal's input d before the node
// types it: the client has sent it, and the command cannot read it yet.
func InputDelay(d time.Duration) Option { return func(s *Server) { s.inDelay = d } }

// Pod adds the pod namespace/name (a container of any name) to the server.
func Pod(namespace, name string) Option {
	return func(s *Server) { s.pods[namespace+"/"+name] = true }
}

// NewServer starts a stand-in API server and its node.
func NewServer(opts ...Option) *Server {
	s := &Server{pods: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	s.runtime = &node{env: append(defaultEnv(), s.env...), outDelay: s.outDelay, inDelay: s.inDelay} // exec.Cmd takes the last of a name
	s.node = httptest.NewUnstartedServer(s.runtime)
	s.node.Listener = &trackingListener{Listener: s.node.Listener, set: &s.nodeConns}
	s.node.Start()
	s.api = httptest.NewUnstartedServer(http.HandlerFunc(s.serveAPI))
	s.api.Listener = &trackingListener{Listener: s.api.Listener, set: &s.conns}
	s.api.Start()
	s.URL = s.api.URL
	return s
}

// Config is a client configuration for the server.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.URL}
}

// AddPod adds the pod namespace/name.
func (s *Server) AddPod(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[namespace+"/"+name] = true
}

// Kill stops the API server at once, dropping every connection (exec
// streams included) as a crashed server or a broken network does, and the
// node hangs up the terminals of the streams that ended.
func (s *Server) Kill() {
	s.api.Listener.Close()
	s.conns.closeAll()
	s.nodeConns.closeAll() // what a dead API server held open to the node ends with it
	s.runtime.hangup()     // and the runtime hangs up their terminals
	s.api.Close()
}

// Close stops the API server and the node.
func (s *Server) Close() {
	s.Kill()
	s.node.CloseClientConnections()
	s.node.Close()
}

// Kubeconfig is a kubeconfig file's text for the server (for kubectl).
func (s *Server) Kubeconfig(namespace string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: %s
contexts:
- name: standin
  context:
    cluster: standin
    user: standin
    namespace: %s
current-context: standin
users:
- name: standin
  user: {}
`, s.URL, namespace)
}

// DeletePod removes the pod namespace/name: later GETs and execs find
// nothing, as after the pod's deletion (its processes, on this machine,
// are the test's to end).
func (s *Server) DeletePod(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, namespace+"/"+name)
}

func (s *Server) hasPod(ns, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[ns+"/"+name]
}

// serveAPI answers /api/v1/namespaces/NS/pods/NAME and its exec.
func (s *Server) serveAPI(w http.ResponseWriter, req *http.Request) {
	if writeDiscovery(w, req.URL.Path) {
		return
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/api/v1/namespaces/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) < 3 || parts[1] != "pods" || len(parts) > 4 {
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource", nil)
		return
	}
	ns, name := parts[0], parts[2]
	if !s.hasPod(ns, name) {
		writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("pods %q not found", name),
			map[string]string{"name": name, "kind": "pods"})
		return
	}
	switch {
	case len(parts) == 3 && req.Method == http.MethodGet:
		writePod(w, ns, name)
	case len(parts) == 4 && parts[3] == "exec":
		s.serveExec(w, req, ns, name)
	default:
		writeStatus(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "method not allowed", nil)
	}
}

// serveExec proxies an exec to the node as kube-apiserver's pod exec
// REST handler does: the upgrade-aware proxy for SPDY, and the stream
// translator (WebSocket v5 in, SPDY to the node) for WebSocket.
func (s *Server) serveExec(w http.ResponseWriter, req *http.Request, ns, name string) {
	q := req.URL.Query()
	container := q.Get("container")
	if container == "" {
		container = "main"
	}
	// The node's query names the streams as the kubelet's does.
	nq := url.Values{"command": q["command"]}
	for api, node := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
		if q.Get(api) == "true" {
			nq.Set(node, "1")
		}
	}
	loc := &url.URL{Scheme: "http", Host: strings.TrimPrefix(s.node.URL, "http://"),
		Path: "/exec/" + ns + "/" + name + "/" + container, RawQuery: nq.Encode()}
	transport := http.DefaultTransport
	var handler http.Handler = proxy.NewUpgradeAwareHandler(loc, transport, false, true, errorResponder{})
	ws := wsstream.IsWebSocketRequest(req)
	if !s.spdyOnly {
		handler = translator.NewTranslatingHandler(handler,
			translator.NewStreamTranslatorHandler(loc, transport, 0, translator.Options{
				Stdin: q.Get("stdin") == "true", Stdout: q.Get("stdout") == "true",
				Stderr: q.Get("stderr") == "true", Tty: q.Get("tty") == "true",
			}),
			wsstream.IsWebSocketRequestWithStreamCloseProtocol)
	} else if ws {
		s.Refused.Add(1)
		writeStatus(w, http.StatusBadRequest, "BadRequest", "websocket exec is not served", nil)
		return
	}
	if ws {
		s.WebSocket.Add(1)
	} else {
		s.SPDY.Add(1)
	}
	handler.ServeHTTP(w, req)
}

type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, req *http.Request, err error) {
	writeStatus(w, http.StatusBadGateway, "InternalError", err.Error(), nil)
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string, details map[string]string) {
	st := map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Failure",
		"message": msg, "reason": reason, "code": code}
	if details != nil {
		st["details"] = details
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

func writePod(w http.ResponseWriter, ns, name string) {
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "main", "image": "standin"}}},
		"status": map[string]any{"phase": "Running",
			"containerStatuses": []any{map[string]any{"name": "main", "ready": true, "image": "standin"}}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(pod)
}

// connSet remembers a listener's connections so that Kill drops them all,
// including those an upgrade took out of the HTTP server's hands.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
	dead  bool
}

func (c *connSet) add(n net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return false
	}
	if c.conns == nil {
		c.conns = map[net.Conn]bool{}
	}
	c.conns[n] = true
	return true
}

func (c *connSet) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	for n := range c.conns {
		n.Close()
	}
	c.conns = nil
}

type trackingListener struct {
	net.Listener
	set *connSet
}

func (l *trackingListener) Accept() (net.Conn, error) {
	for {
		n, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.set.add(n) {
			return n, nil
		}
		n.Close()
	}
}

// writeDiscovery answers the discovery requests kubectl makes before an
// exec: the core group, holding pods and their exec.
func writeDiscovery(w http.ResponseWriter, path string) bool {
	var doc any
	switch path {
	case "/api":
		doc = map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]any{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}}}
	case "/apis":
		doc = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}}
	case "/api/v1":
		doc = map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
			map[string]any{"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
				"verbs": []string{"get"}, "shortNames": []string{"po"}},
			map[string]any{"name": "pods/exec", "singularName": "", "namespaced": true, "kind": "PodExecOptions",
				"verbs": []string{"create", "get"}},
		}}
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
	return true
}
