package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The person's answers to an approval form.
const (
	allowOnce    = "allow_once"
	allowSession = "allow_session"
	deny         = "deny"
)

// askApprover is the Approver of --approve ask: the rules decide first;
// what they refuse is put to the person when the call can ask (a client
// with form elicitation), and the rules' refusal stands when it cannot.
// "allow for this session" is remembered for that session alone.
type askApprover struct {
	rules agentpty.Approver // nil: the rules allow everything

	mu      sync.Mutex           // guards the fields below
	allowed map[string]bool      // sessions the person allowed for good
	pending map[string]askRecord // questions put to the person, by the request state the retry echoes
}

// askRecord is a question put to the person: the request it is about.
type askRecord struct {
	tool string
	req  agentpty.ApprovalRequest
}

func newAskApprover(rules agentpty.Approver) *askApprover {
	return &askApprover{rules: rules, allowed: map[string]bool{}, pending: map[string]askRecord{}}
}

// needAsk is a refusal the person may overturn: the handler turns it into
// a form elicitation. It wraps the rules' error, so a caller that cannot
// ask sees a denial.
type needAsk struct {
	req agentpty.ApprovalRequest
	err error
}

func (e *needAsk) Error() string { return e.err.Error() }
func (e *needAsk) Unwrap() error { return e.err }

// askKey marks a call's context: canAsk when the client can answer a
// form; an answer when it carries the person's decision on one request.
type askKey struct{}

type askCtx struct {
	canAsk   bool
	decision string
	req      agentpty.ApprovalRequest
}

// Approve implements agentpty.Approver.
func (a *askApprover) Approve(ctx context.Context, req agentpty.ApprovalRequest) error {
	var err error
	if a.rules != nil {
		err = a.rules.Approve(ctx, req)
	}
	if err == nil {
		return nil
	}
	a.mu.Lock()
	ok := req.ID != "" && a.allowed[req.ID]
	a.mu.Unlock()
	if ok {
		return nil
	}
	c, _ := ctx.Value(askKey{}).(askCtx)
	switch {
	case c.decision != "" && sameRequest(c.req, req) && c.decision != deny:
		return nil // allow_session is remembered by the handler, once the session is known
	case c.decision != "" && sameRequest(c.req, req):
		return fmt.Errorf("%w: %s %s: the person refused it", agentpty.ErrDenied, req.Tool, what(req))
	case c.canAsk:
		return &needAsk{req: req, err: err}
	}
	return err
}

// sameRequest: an answer holds only for the request the person was shown.
func sameRequest(a, b agentpty.ApprovalRequest) bool {
	return a.Tool == b.Tool && a.Command == b.Command && a.Dir == b.Dir && a.ID == b.ID && a.Input == b.Input
}

// what names the request for the person and in errors.
func what(req agentpty.ApprovalRequest) string {
	if req.Tool == agentpty.ToolWrite {
		return fmt.Sprintf("%s: typing %q", req.ID, req.Input)
	}
	if req.ID != "" {
		return fmt.Sprintf("%s: %q", req.ID, req.Command)
	}
	return fmt.Sprintf("%q", req.Command)
}

// askSchema is the form: one choice.
var askSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "decision": {"type": "string", "title": "Decision", "enum": ["allow_once", "allow_session", "deny"],
      "enumNames": ["Allow once", "Allow for this session", "Deny"]}
  },
  "required": ["decision"]
}`)

// call runs a tool under --approve ask: the answer to an earlier question
// when the call carries one, else the call itself, which may come back as
// a question for the person.
func (a *askApprover) call(ctx context.Context, s *server, tool string, req *mcp.CallToolRequest) (*mcp.CallToolResult, json.RawMessage, error) {
	if req.Params.InputResponses != nil {
		return a.answered(ctx, s, tool, req)
	}
	ctx = context.WithValue(ctx, askKey{}, askCtx{canAsk: clientHas(req.Session, "form")})
	res, err := s.m.Call(ctx, tool, req.Params.Arguments)
	var na *needAsk
	if !errors.As(err, &na) {
		return nil, res, err
	}
	state := randomHex()
	a.mu.Lock()
	a.pending[state] = askRecord{tool: tool, req: na.req}
	a.mu.Unlock()
	dir := na.req.Dir
	if dir == "" {
		dir = "(the server's working directory)"
	}
	session := na.req.ID
	if session == "" {
		session = "(a new session)"
	}
	msg := fmt.Sprintf("The model asks to run something the rules do not allow.\nSession: %s\nCommand: %s\nWorking directory: %s\nRules: %v",
		session, what(na.req), dir, na.err)
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"approval": &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: askSchema}},
		RequestState:  state,
	}, nil, nil
}

// answered runs a call again with the person's answer to its question.
func (a *askApprover) answered(ctx context.Context, s *server, tool string, req *mcp.CallToolRequest) (*mcp.CallToolResult, json.RawMessage, error) {
	a.mu.Lock()
	rec, ok := a.pending[req.Params.RequestState]
	delete(a.pending, req.Params.RequestState)
	a.mu.Unlock()
	if !ok || rec.tool != tool {
		return nil, nil, fmt.Errorf("%w: %s: the answer is to no question this server asked (or one already answered); call again", agentpty.ErrDenied, tool)
	}
	decision := deny
	if r, _ := req.Params.InputResponses["approval"].(*mcp.ElicitResult); r != nil && r.Action == "accept" {
		if d, _ := r.Content["decision"].(string); d == allowOnce || d == allowSession {
			decision = d
		}
	}
	ctx = context.WithValue(ctx, askKey{}, askCtx{decision: decision, req: rec.req})
	res, err := s.m.Call(ctx, tool, req.Params.Arguments)
	if err == nil && decision == allowSession {
		id := rec.req.ID
		if id == "" { // a start: the session it made
			var r struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(res, &r)
			id = r.ID
		}
		a.mu.Lock()
		a.allowed[id] = true
		a.mu.Unlock()
	}
	return nil, res, err
}
