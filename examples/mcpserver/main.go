// Command mcpserver is the smallest MCP server over agentpty: the
// library's Tools give each tool's name, description and schemas, and
// Manager.Call runs every call, on the official Go SDK over stdio. The
// installable server, with flags, approval, the sandbox, progress and
// remote backends, is cmd/agentpty-mcp.
//
//	go run ./mcpserver   # from the examples module; speaks MCP on stdin/stdout
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close() // no program a model started outlives the server
	if err := newServer(m).Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Print(err)
	}
}

// newServer offers every tool of m: Call validates and decodes the
// arguments itself, so the handlers pass them on as they came.
func newServer(m *agentpty.Manager) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentpty-minimal", Version: "v0.0.0"}, nil)
	for _, t := range m.Tools() {
		srv.AddTool(&mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}, handler(m, t.Name))
	}
	return srv
}

// handler runs one tool through Manager.Call. An error goes back as a
// tool error the model reads and can correct, not a protocol error.
func handler(m *agentpty.Manager, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := m.Call(ctx, tool, req.Params.Arguments)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}, StructuredContent: res}, nil
	}
}
