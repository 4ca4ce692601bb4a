// Package agentpty gives AI agent harnesses real interactive terminals.
//
// A harness's shell tool runs commands through pipes, where anything that
// needs a terminal — a REPL, a debugger, ssh or sudo asking for a password,
// a watch-mode server, vim or less — hangs or misbehaves. agentpty runs such
// programs under a pseudo-terminal and lets a model type into them and read
// what a person would see, through three tools:
//
//   - pty-start {command, cols?, rows?, cwd?, wait_for?, wait_ms?} starts
//     `bash -lc command` under a new terminal and returns its id and first
//     output;
//   - pty-write {id, input?, submit?, wait_for?, wait_ms?} types input
//     (with escapes such as \x03 for Ctrl-C) and returns the output since
//     the last read as settled text: escapes removed, carriage returns and
//     backspaces applied, or the rendered screen of a full-screen program;
//   - pty-kill {id} ends every process the session started.
//
// A Manager owns the numbered sessions. Hosts either call Manager.Call with
// a tool name and JSON arguments (Manager.Tools gives the schemas), or use
// the typed methods Start, Write and Kill. Options hold the host's hooks
// (an Approver asked before anything starts, such as rules.Rules from
// package github.com/agentpty/agentpty/rules, which reads a command as bash
// does; a Sandbox applied to every child) and bounds.
//
// An error from Call is meant for the model: hand err.Error() back as the
// tool call's result, marked as an error, and the model can correct its
// call; it names the session and the value involved. Optional millisecond
// fields are pointers, since nil means the default: WaitMS: Millis(700).
//
// The default shell, bash -lc, runs the login profile for every session;
// input typed before the profile has finished can be lost, so wait for the
// program's prompt (WaitFor) before typing.
package agentpty
