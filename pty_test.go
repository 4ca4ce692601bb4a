package agentpty

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestToolsDescribeTheContract(t *testing.T) {
	m := NewManager(Options{})
	defer m.Close()
	want := map[string]struct {
		props    []string
		required []string
	}{
		ToolStart: {[]string{"cols", "command", "cwd", "rows", "screen", "shell", "wait_for", "wait_for_regex", "wait_ms", "wait_until"}, nil}, // command is optional with shell
		ToolWrite: {[]string{"cols", "id", "input", "keys", "literal", "peek", "rows", "screen", "send_signal", "submit", "wait_for", "wait_for_regex", "wait_ms", "wait_until"}, []string{"id"}},
		ToolRun:   {[]string{"command", "id", "timeout_ms", "wait_until"}, []string{"id", "command"}},
		ToolKill:  {[]string{"id"}, []string{"id"}},
	}
	tools := m.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools), len(want))
	}
	for _, tool := range tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Fatalf("unexpected tool %q", tool.Name)
		}
		if tool.Name == ToolWrite && (!strings.Contains(tool.Description, "literal") || !strings.Contains(tool.Description, "backslashes")) {
			t.Errorf("%s: the description does not say when to type literally: %q", tool.Name, tool.Description)
		}
		if tool.Name == ToolWrite && (!strings.Contains(tool.Description, `keys`) || strings.Contains(tool.Description, `\e[A`)) {
			t.Errorf("%s: the description should teach keys, not escapes, for arrows: %q", tool.Name, tool.Description)
		}
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too thin for a model: %q", tool.Name, tool.Description)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tool.Name, err)
		}
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		if schema.Type != "object" || !reflect.DeepEqual(props, w.props) || !reflect.DeepEqual(schema.Required, w.required) {
			t.Errorf("%s: schema type %q properties %v required %v; want object %v %v", tool.Name, schema.Type, props, schema.Required, w.props, w.required)
		}
	}
	tools[0].Name = "changed"
	if m.Tools()[0].Name == "changed" {
		t.Error("Tools returns the manager's own slice")
	}
}

// The JSON a model gets back carries the contract's field names.
func TestCallResultFields(t *testing.T) {
	m := newManager(t, Options{})
	ctx := context.Background()
	out, err := m.Call(ctx, ToolStart, json.RawMessage(`{"command":"read -s -p 'pw: ' x; echo; exit 5","wait_for":"pw: "}`))
	if err != nil {
		t.Fatal(err)
	}
	var start map[string]any
	if err := json.Unmarshal(out, &start); err != nil {
		t.Fatal(err)
	}
	id, _ := start["id"].(string)
	if !strings.HasPrefix(id, "pty-") || start["matched"] != true || start["exited"] != false {
		t.Fatalf("pty-start result %s", out)
	}
	out, err = m.Call(ctx, ToolWrite, json.RawMessage(`{"id":"`+id+`","wait_ms":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"input_hidden":true`) {
		t.Fatalf("pty-write at a password prompt: %s", out)
	}
	out, err = m.Call(ctx, ToolWrite, json.RawMessage(`{"id":"`+id+`","input":"x","submit":true,"wait_ms":10000}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"exited":true`) || !strings.Contains(string(out), `"exit_code":5`) {
		t.Fatalf("pty-write to a program that exits: %s", out)
	}
	out, err = m.Call(ctx, ToolKill, json.RawMessage(`{"id":"`+id+`"}`))
	if err != nil || !strings.Contains(string(out), `"exit_code":5`) || !strings.Contains(string(out), `"output":`) {
		t.Fatalf("pty-kill: %s %v", out, err)
	}
}
