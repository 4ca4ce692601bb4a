package agentpty

import "strings"

// historyVars are the history files of common programs, and the value
// that keeps each out of the host user's home: what a model types into a
// REPL must not land in the person's ~/.python_history, ~/.node_repl_history
// or ~/.lesshst. HISTFILE is set in shell sessions only (a `bash -lc`
// command is not interactive and keeps no history).
var historyVars = []struct {
	name, value string
	shellOnly   bool
}{
	{"HISTFILE", "", true},                 // bash: no history file
	{"PYTHON_HISTORY", "/dev/null", false}, // Python 3.13 and later; empty would mean ~/.python_history
	{"NODE_REPL_HISTORY", "", false},       // node: empty turns persistent history off
	{"LESSHISTFILE", "-", false},           // less: "-" means no history file
}

// historyEnv returns the history variables for a session's environment.
// A variable that Options.Env or the request's Env sets (empty included)
// is the host's choice and is left alone; the host process's own
// environment does not count.
func historyEnv(shell bool, envs ...[]string) []string {
	var out []string
	for _, v := range historyVars {
		if v.shellOnly && !shell || envHas(v.name, envs...) {
			continue
		}
		out = append(out, v.name+"="+v.value)
	}
	return out
}

// envHas reports whether any of envs sets name.
func envHas(name string, envs ...[]string) bool {
	for _, env := range envs {
		for _, kv := range env {
			if k, _, _ := strings.Cut(kv, "="); k == name {
				return true
			}
		}
	}
	return false
}
