package kubepty

import (
	"net/http"
	"sync/atomic"

	apihttpstream "k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/transport/spdy"
)

// statusWatch records whether an exec's status arrived. client-go's SPDY
// executor returns nil both for a command that exited 0 (the server sent
// a Success status) and for a connection that dropped (the error stream
// ended empty); only the first sent anything on the error stream.
type statusWatch struct {
	spdy atomic.Bool // the exec ran over SPDY
	seen atomic.Bool // its error stream carried a status
}

// watchingUpgrader marks the error stream of the connections it makes.
type watchingUpgrader struct {
	spdy.Upgrader
	watch *statusWatch
}

func (u *watchingUpgrader) NewConnection(resp *http.Response) (apihttpstream.Connection, error) {
	c, err := u.Upgrader.NewConnection(resp)
	if err != nil {
		return nil, err
	}
	u.watch.spdy.Store(true)
	return &watchedConn{Connection: c, watch: u.watch}, nil
}

type watchedConn struct {
	apihttpstream.Connection
	watch *statusWatch
}

func (c *watchedConn) CreateStream(h http.Header) (apihttpstream.Stream, error) {
	s, err := c.Connection.CreateStream(h)
	if err != nil || h.Get("streamType") != "error" {
		return s, err
	}
	return &watchedStream{Stream: s, watch: c.watch}, nil
}

type watchedStream struct {
	apihttpstream.Stream
	watch *statusWatch
}

func (s *watchedStream) Read(p []byte) (int, error) {
	n, err := s.Stream.Read(p)
	if n > 0 {
		s.watch.seen.Store(true)
	}
	return n, err
}

// lost reports an exec that ended without a status: over SPDY, a nil
// from the executor then means the connection dropped.
func (w *statusWatch) lost() bool {
	return w.spdy.Load() && !w.seen.Load()
}
