package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server joins a Manager to an MCP server: tools from Manager.Tools, calls
// to Manager.Call, session events to log notifications.
type server struct {
	m      *agentpty.Manager
	srv    atomic.Pointer[mcp.Server] // set before any session can start
	stderr io.Writer
}

// mcp returns the MCP server whose tools are s.m's.
func (s *server) mcp(version string) *mcp.Server {
	tools := s.m.Tools()
	//lint:ignore SA1019 logging is deprecated from protocol 2026-07-28 on but still served; lifecycle lines go to stderr too
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentpty", Title: "Interactive terminals", Version: version},
		&mcp.ServerOptions{Instructions: instructions(tools), Capabilities: caps})
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
	s.srv.Store(srv)
	return srv
}

// handler dispatches one tool to Manager.Call.
func (s *server) handler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			ctx = agentpty.WithEvents(ctx, progress(ctx, req.Session, token))
		}
		res, err := s.m.Call(ctx, tool, req.Params.Arguments)
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

// progress sends the newest line of a waiting call's session as a progress
// notification, as often as the manager reports output (a few a second).
func progress(ctx context.Context, ss *mcp.ServerSession, token any) func(agentpty.Event) {
	n := 0
	return func(e agentpty.Event) {
		line := ""
		for i := len(e.Lines) - 1; i >= 0 && line == ""; i-- {
			line = strings.TrimSpace(e.Lines[i])
		}
		if line == "" {
			return
		}
		n++
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: line})
	}
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
