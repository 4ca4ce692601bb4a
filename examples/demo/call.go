package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentpty/agentpty"
)

// result is the union of the three tools' result fields, for the scenes'
// checks. The printed result is the JSON itself, not this.
type result struct {
	ID          string `json:"id"`
	Output      string `json:"output"`
	Matched     bool   `json:"matched"`
	Exited      bool   `json:"exited"`
	ExitCode    *int   `json:"exit_code"`
	Signal      string `json:"signal"`
	Truncated   int64  `json:"truncated"`
	InputHidden bool   `json:"input_hidden"`
	State       string `json:"state"`
	Foreground  string `json:"foreground"`
	PromptAfter bool   `json:"prompt_after"`
}

// caller makes tool calls the way a host's dispatcher does, through
// Manager.Call with JSON arguments, and prints each call and its result as
// the model would write and read them.
type caller struct {
	m     *agentpty.Manager
	out   io.Writer
	noted bool // a note heads the next call
}

// note prints a line of narration before the next call.
func (c *caller) note(text string) {
	fmt.Fprintf(c.out, "\n# %s\n", text)
	c.noted = true
}

// call runs tool with args marshalled to JSON. The bytes printed are the
// bytes Call receives.
func (c *caller) call(ctx context.Context, tool string, args any) (result, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a model writes "<", not "\u003c"
	if err := enc.Encode(args); err != nil {
		return result{}, fmt.Errorf("%s: marshal arguments: %w", tool, err)
	}
	raw := bytes.TrimSpace(buf.Bytes())
	if !c.noted {
		fmt.Fprintln(c.out)
	}
	c.noted = false
	fmt.Fprintf(c.out, "→ %s %s\n", tool, raw)

	res, err := c.m.Call(ctx, tool, raw)
	if err != nil {
		fmt.Fprintf(c.out, "✗ error: %v\n", err)
		return result{}, err
	}
	c.printResult(res)
	var r result
	if err := json.Unmarshal(res, &r); err != nil {
		return result{}, fmt.Errorf("%s: decode result %s: %w", tool, res, err)
	}
	return r, nil
}

// secret types a password for the host with Manager.WriteSecretWith, as
// a host does once its user answered: the call is printed without the
// secret, then the result as the model would read it next.
func (c *caller) secret(ctx context.Context, req agentpty.SecretRequest) (result, error) {
	c.noted = false
	fmt.Fprintf(c.out, "→ host: WriteSecretWith {ID: %q, WaitFor: %q} (the secret, from the user, is not shown)\n", req.ID, req.WaitFor)
	res, err := c.m.WriteSecretWith(ctx, req)
	if err != nil {
		fmt.Fprintf(c.out, "✗ error: %v\n", err)
		return result{}, err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return result{}, err
	}
	c.printResult(raw)
	var r result
	err = json.Unmarshal(raw, &r)
	return r, err
}

// resultOrder is the order fields are printed in; fields a later version
// adds follow, sorted.
var resultOrder = []string{"id", "prompt_after", "matched", "exited", "exit_code", "signal", "truncated", "output_lost", "input_hidden", "state", "foreground"}

// printResult prints the result's JSON on one line without its output,
// then the output as an indented block, so multi-line text reads as the
// model will read it.
func (c *caller) printResult(res json.RawMessage) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(res, &fields); err != nil {
		fmt.Fprintf(c.out, "← %s\n", res)
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != "output" && !slices.Contains(resultOrder, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = append(slices.DeleteFunc(slices.Clone(resultOrder), func(k string) bool { _, ok := fields[k]; return !ok }), keys...)

	var line strings.Builder
	line.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			line.WriteString(", ")
		}
		fmt.Fprintf(&line, "%q: %s", k, fields[k])
	}
	line.WriteString("}")
	fmt.Fprintf(c.out, "← %s\n", line.String())

	var output string
	if raw, ok := fields["output"]; ok && json.Unmarshal(raw, &output) == nil {
		if output == "" {
			fmt.Fprintf(c.out, "  output: \"\"\n")
			return
		}
		fmt.Fprintf(c.out, "  output:\n")
		for _, l := range strings.Split(output, "\n") {
			fmt.Fprintf(c.out, "  │ %s\n", visible(l))
		}
	}
}

// visible quotes control characters, so a stray escape sequence in output
// shows as text instead of acting on the reader's terminal.
func visible(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, `\x%02x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }
