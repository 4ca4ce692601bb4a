package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one message; a longer line is answered with an error and
// skipped, not buffered.
const maxLine = 16 << 20

// lineTransport is MCP's stdio framing, newline-delimited JSON-RPC, over r
// and w. Unlike the SDK's stdio transport it survives bad input: a line
// that is not JSON gets a parse error, one that is not a JSON-RPC 2.0
// message (a batch, a missing "jsonrpc": "2.0", a wrong id) an
// invalid-request error, and the server reads on. It also sends no
// response to a request the client cancelled, as the protocol asks.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{r: t.r, w: t.w, lines: make(chan line), closed: make(chan struct{}), inflight: map[jsonrpc.ID]bool{}}
	go c.readLines()
	return c, nil
}

type line struct {
	b       []byte
	tooLong bool
}

type lineConn struct {
	r io.ReadCloser
	w io.WriteCloser

	lines     chan line // closed at the end of input
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	writeMu sync.Mutex // one message at a time on w

	mu       sync.Mutex
	inflight map[jsonrpc.ID]bool // requests not yet answered; true once cancelled
}

// readLines feeds lines to Read until the input ends or the connection is
// closed.
func (c *lineConn) readLines() {
	defer close(c.lines)
	br := bufio.NewReaderSize(c.r, 64<<10)
	for {
		var l line
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			if !l.tooLong {
				l.b = append(l.b, part...)
				if len(l.b) > maxLine {
					l.b, l.tooLong = nil, true
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if len(bytes.TrimSpace(l.b)) > 0 || l.tooLong {
			select {
			case c.lines <- l:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			return // io.EOF: the client closed its end
		}
	}
}

// Read implements mcp.Connection: the next good message, answering bad
// ones on the way.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l line
		var ok bool
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l, ok = <-c.lines:
			if !ok {
				return nil, io.EOF
			}
		}
		msg, reply := decode(l)
		if reply != nil {
			if err := c.send(reply); err != nil {
				return nil, err
			}
			continue
		}
		c.track(msg)
		return msg, nil
	}
}

// decode returns the message a line holds, or the error response it gets.
func decode(l line) (jsonrpc.Message, []byte) {
	if l.tooLong {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes", maxLine))
	}
	b := bytes.TrimSpace(l.b)
	if !json.Valid(b) {
		return nil, errorReply(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")
	}
	if b[0] != '{' {
		return nil, errorReply(nil, jsonrpc.CodeInvalidRequest, "invalid request: want one JSON-RPC 2.0 object per line (batches are not supported)")
	}
	var head struct {
		Version *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(b, &head)
	id := head.ID
	if len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		id = nil // only a string or a number is an id to echo back
	}
	if head.Version == nil || *head.Version != "2.0" {
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil, errorReply(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return msg, nil
}

// errorReply is a JSON-RPC error response; a nil id is written as null.
func errorReply(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   any             `json:"error"`
	}{"2.0", id, map[string]any{"code": code, "message": message}})
	return b
}

// track notes requests awaiting an answer and which of them the client
// cancelled.
func (c *lineConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		c.inflight[req.ID] = false
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
		if _, ok := c.inflight[id]; ok {
			c.inflight[id] = true
		}
	}
}

// Write implements mcp.Connection. The response to a cancelled request is
// dropped.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.inflight[resp.ID]
		delete(c.inflight, resp.ID)
		c.mu.Unlock()
		if cancelled {
			return nil
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.send(b)
}

// send writes one message and its newline in one write.
func (c *lineConn) send(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

// Close implements mcp.Connection; it may be called more than once.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio has no sessions.
func (c *lineConn) SessionID() string { return "" }
