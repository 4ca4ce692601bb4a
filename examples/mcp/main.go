// Command mcp is a Model Context Protocol server over stdio that gives a
// model agentpty's tools, pty-start, pty-write, pty-run and pty-kill. It shows
// how little a host needs: the names, descriptions and JSON Schemas come
// from Manager.Tools, every call goes to Manager.Call with its JSON
// arguments as they arrived, and the manager is closed on shutdown, so no
// program a model started outlives the server.
//
// Build it from the examples module and register the binary with an MCP
// client as a stdio server:
//
//	go build -o agentpty-mcp ./mcp
//	{"mcpServers": {"agentpty": {"command": "/path/to/agentpty-mcp"}}}
//
// It stops when the client closes its stdin, or on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "agentpty mcp: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// run serves the tools over t until the client goes away or ctx ends, then
// kills every session the model left running.
func run(ctx context.Context, t mcp.Transport) (err error) {
	m := agentpty.NewManager(agentpty.Options{})
	defer func() {
		if cerr := m.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing sessions: %w", cerr)
		}
	}()
	return newServer(m).Run(ctx, t)
}

// newServer returns an MCP server whose tools are m's.
func newServer(m *agentpty.Manager) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "agentpty", Version: version()}, nil)
	for _, t := range m.Tools() {
		// The raw-schema form of AddTool: Manager.Call validates and decodes
		// the arguments itself, strictly, with errors written for a model.
		s.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}, handler(m, t.Name))
	}
	return s
}

// handler dispatches one tool to m.Call.
func handler(m *agentpty.Manager, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := m.Call(ctx, tool, req.Params.Arguments)
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

// version reports the agentpty module this server was built with.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/agentpty/agentpty" && d.Replace == nil {
				return d.Version
			}
		}
	}
	return "(devel)"
}
