package agentpty

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

func TestToolsDescribeTheContract(t *testing.T) {
	testkit.Parallel(t)
	m := NewManager(Options{})
	defer m.Close()
	want := map[string]struct {
		props    []string
		required []string
	}{
		ToolStart: {[]string{"cols", "command", "cwd", "rows", "screen", "settle_ms", "shell", "wait_for", "wait_for_regex", "wait_ms", "wait_until"}, nil}, // command is optional with shell
		ToolWrite: {[]string{"cols", "id", "input", "keys", "literal", "peek", "rows", "screen", "send_signal", "settle_ms", "submit", "wait_for", "wait_for_regex", "wait_ms", "wait_until"}, []string{"id"}},
		ToolRun:   {[]string{"command", "id", "timeout_ms", "wait_until"}, []string{"id", "command"}},
		ToolKill:  {[]string{"id"}, []string{"id"}},
		ToolList:  {nil, nil},
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

// pty-start's description names the shell the manager really runs
// commands under, not the default one.
func TestToolsNameTheShell(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range []struct {
		shell []string
		want  string
	}{
		{nil, "`bash -lc COMMAND`"},
		{[]string{"sh", "-c"}, "`sh -c COMMAND`"},
		{[]string{"bash", "--norc", "-c"}, "`bash --norc -c COMMAND`"},
	} {
		m := NewManager(Options{Shell: c.shell})
		desc := m.Tools()[0].Description
		m.Close()
		if !strings.Contains(desc, c.want) || (c.shell != nil && strings.Contains(desc, "bash -lc")) {
			t.Errorf("Shell %q: pty-start's description does not say %s: %q", c.shell, c.want, desc)
		}
	}
	if strings.Contains(tools[0].Description, "sh -c") {
		t.Error("Tools changed the package's own descriptions")
	}
	// With the snapshot, the command runs as bash -c from it, and the
	// login shell only when it fails.
	m := NewManager(Options{ShellSnapshot: true})
	desc := m.Tools()[0].Description
	m.Close()
	if !strings.Contains(desc, "runs as `bash -c COMMAND` with what the login profile sets up") || strings.Contains(desc, "runs as `bash -lc COMMAND`.") {
		t.Errorf("ShellSnapshot: pty-start's description does not say how commands run: %q", desc)
	}
}

// Arguments that are not a JSON object get an error a model can act on,
// not one naming the library's Go types.
func TestCallArgumentsMustBeObject(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	for _, tool := range []string{ToolStart, ToolWrite, ToolRun, ToolKill} {
		for _, args := range []string{`["pty-1"]`, `"pty-1"`, `7`, `true`} {
			_, err := m.Call(context.Background(), tool, json.RawMessage(args))
			if !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), "arguments must be a JSON object") ||
				strings.Contains(err.Error(), "agentpty.") || !strings.HasPrefix(err.Error(), "agentpty: ") {
				t.Errorf("%s %s: %v; want ErrInvalid saying the arguments must be a JSON object", tool, args, err)
			}
		}
	}
	if len(m.List()) != 0 {
		t.Errorf("bad arguments started sessions: %v", m.List())
	}
}
