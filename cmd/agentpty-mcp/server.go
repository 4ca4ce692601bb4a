package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server joins a Manager to an MCP server: tools from Manager.Tools, calls
// to Manager.Call, session events to log notifications.
type server struct {
	m      *agentpty.Manager
	srv    atomic.Pointer[mcp.Server] // set before any session can start
	stderr io.Writer
	// secrets serves pty-secret's pages; nil when the host offers no
	// pty-secret (neither --secret-program nor --secret-any).
	secrets *secretPages
	// ask is the Approver of --approve ask; nil otherwise.
	ask *askApprover
}

// mcp returns the MCP server whose tools are s.m's.
func (s *server) mcp(version string) *mcp.Server {
	tools := s.m.Tools()
	//lint:ignore SA1019 logging is deprecated from protocol 2026-07-28 on but still served; lifecycle lines go to stderr too
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	text := instructions(tools)
	if s.secrets != nil {
		text += "\n\n" + secretGuide
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentpty", Title: "Interactive terminals", Version: version},
		&mcp.ServerOptions{Instructions: text, Capabilities: caps})
	for _, t := range tools {
		// The raw-schema form of AddTool: Manager.Call validates and decodes
		// the arguments itself, strictly, with errors written for a model.
		srv.AddTool(&mcp.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: &mcp.ToolAnnotations{
				Title:           t.Title,
				ReadOnlyHint:    t.Annotations.ReadOnlyHint,
				DestructiveHint: &t.Annotations.DestructiveHint,
				IdempotentHint:  t.Annotations.IdempotentHint,
				OpenWorldHint:   &t.Annotations.OpenWorldHint,
			},
		}, s.handler(t.Name))
	}
	if s.secrets != nil {
		srv.AddTool(secretTool, s.secretHandler)
	}
	s.srv.Store(srv)
	return srv
}

// handler dispatches one tool to Manager.Call.
func (s *server) handler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			p := startProgress(ctx, req.Session, token, waitTotal(tool, req.Params.Arguments))
			defer p.stop()
			ctx = agentpty.WithEvents(ctx, p.output)
		}
		var res json.RawMessage
		var err error
		if s.ask != nil {
			var q *mcp.CallToolResult
			if q, res, err = s.ask.call(ctx, s, tool, req); q != nil {
				return q, nil // a question for the person (ask.go)
			}
		} else {
			res, err = s.m.Call(ctx, tool, req.Params.Arguments)
		}
		if ctx.Err() != nil {
			// Cancelled: the client expects no answer and the transport
			// sends none; a start has killed what it started.
			return nil, ctx.Err()
		}
		if err != nil {
			// A tool error, not a protocol error: the model reads it (an
			// unknown id, a misspelt argument) and can correct its call.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		// The JSON result as text for clients that show content, and as
		// structured content for those that read it.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}, StructuredContent: res}, nil
	}
}

// progressEvery is the longest a call with a progress token goes without
// a notification, output or not, so that hosts can show it is alive and
// reset their timeouts: under the one second clients count on.
const progressEvery = 500 * time.Millisecond

// progress sends a waiting call's progress notifications: the newest line
// of its session as the manager reports output, and, while the wait is
// silent, the time elapsed. Progress is the seconds elapsed, Total the
// seconds the call may wait (0 when unknown).
type progress struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	start time.Time
	total time.Duration

	mu   sync.Mutex
	last float64   // the progress sent last; each one sent is larger
	sent time.Time // when the last one was sent
	quit chan struct{}
	done chan struct{}
}

// startProgress starts the notifications of a call that may wait total.
func startProgress(ctx context.Context, ss *mcp.ServerSession, token any, total time.Duration) *progress {
	now := time.Now()
	p := &progress{ctx: ctx, ss: ss, token: token, start: now, total: total, sent: now,
		quit: make(chan struct{}), done: make(chan struct{})}
	go p.tick()
	return p
}

// tick sends the time elapsed whenever progressEvery passed without a
// notification.
func (p *progress) tick() {
	defer close(p.done)
	t := time.NewTimer(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			p.mu.Lock()
			quiet := now.Sub(p.sent)
			p.mu.Unlock()
			if quiet >= progressEvery {
				p.send("")
				quiet = 0
			}
			t.Reset(progressEvery - quiet)
		}
	}
}

// output sends the newest line of an output event.
func (p *progress) output(e agentpty.Event) {
	line := ""
	for i := len(e.Lines) - 1; i >= 0 && line == ""; i-- {
		line = strings.TrimSpace(e.Lines[i])
	}
	if line != "" {
		p.send(line)
	}
}

// send sends one notification; an empty message says how long the call
// has waited.
func (p *progress) send(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.start)
	at := max(elapsed.Seconds(), p.last+0.001) // strictly increasing, as the protocol asks
	if msg == "" {
		msg = fmt.Sprintf("waiting: %.1f s", elapsed.Seconds())
		if p.total > 0 {
			msg += fmt.Sprintf(" of %.1f s", p.total.Seconds())
		}
	}
	p.last, p.sent = at, time.Now()
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: at, Total: p.total.Seconds(), Message: msg})
}

// stop ends the notifications once the call returns.
func (p *progress) stop() {
	close(p.quit)
	<-p.done
}

// waitTotal is how long a call of tool with args may wait, as the tools'
// schemas say: wait_ms (timeout_ms for pty-run) when given, else 10 s with
// wait_for, wait_for_regex or wait_until and 700 ms without; at most 30 s.
// 0 for pty-kill and for arguments that do not decode (the call fails).
func waitTotal(tool string, args json.RawMessage) time.Duration {
	var a struct {
		WaitMS       *int   `json:"wait_ms"`
		TimeoutMS    *int   `json:"timeout_ms"`
		WaitFor      string `json:"wait_for"`
		WaitForRegex string `json:"wait_for_regex"`
		WaitUntil    string `json:"wait_until"`
	}
	if tool == agentpty.ToolKill || json.Unmarshal(args, &a) != nil {
		return 0
	}
	ms := 700
	switch {
	case tool == agentpty.ToolRun && a.TimeoutMS != nil:
		ms = *a.TimeoutMS
	case tool == agentpty.ToolRun:
		ms = 10000
	case a.WaitMS != nil:
		ms = *a.WaitMS
	case a.WaitFor != "" || a.WaitForRegex != "" || a.WaitUntil != "":
		ms = 10000
	}
	return time.Duration(min(max(ms, 0), 30000)) * time.Millisecond
}

// event logs a session's life to stderr and to every client that asked
// for logs, at info level.
func (s *server) event(e agentpty.Event) {
	srv := s.srv.Load()
	if srv == nil || e.Kind == agentpty.EventOutput {
		return
	}
	msg := fmt.Sprintf("%s %s: %s (pid %d)", e.ID, e.Kind, e.Command, e.PID)
	switch {
	case e.Signal != "":
		msg += ", killed by " + e.Signal
	case e.ExitCode != nil && (e.Kind == agentpty.EventExited || e.Kind == agentpty.EventKilled || e.Kind == agentpty.EventReaped):
		msg += fmt.Sprintf(", exit code %d", *e.ExitCode)
	}
	fmt.Fprintln(s.stderr, "agentpty-mcp: "+msg)
	for ss := range srv.Sessions() {
		//lint:ignore SA1019 see caps in mcp
		_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "agentpty", Data: msg})
	}
}
