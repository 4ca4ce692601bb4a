package agentpty

import (
	"os"
	"strings"
)

// historyVars are the history files of common programs, and the value
// that keeps each out of the host user's home: what a model types into a
// REPL must not land in the person's ~/.python_history,
// ~/.node_repl_history or ~/.lesshst. HISTFILE is set in shell sessions
// only (a `bash -lc` command is not interactive and keeps no history).
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
// environment does not count. Pythons before 3.13 ignore PYTHON_HISTORY:
// a startup file in the manager's private directory (startup) makes them
// follow it, unless a PYTHONSTARTUP is set anywhere, the host process's
// environment included, or startup is empty (no such file where the
// session runs).
func historyEnv(shell bool, startup string, envs ...[]string) []string {
	var out []string
	for _, v := range historyVars {
		if v.shellOnly && !shell || envHas(v.name, envs...) {
			continue
		}
		out = append(out, v.name+"="+v.value)
	}
	if _, set := os.LookupEnv("PYTHONSTARTUP"); startup != "" && !set && !envHas("PYTHONSTARTUP", envs...) {
		out = append(out, "PYTHONSTARTUP="+startup)
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

const pythonStartupName = "python_startup.py"

// pythonStartup is the PYTHONSTARTUP file: site.py's readline hook, but
// with the history file PYTHON_HISTORY names, as Python 3.13 has it.
const pythonStartup = `# agentpty: the REPL's history goes where PYTHON_HISTORY says, as in Python 3.13.
import sys
if sys.version_info < (3, 13) and getattr(sys, "__interactivehook__", None) is not None:
    def __agentpty_hook():
        import atexit, os
        try:
            import readline, rlcompleter
        except ImportError:
            return
        if "libedit" in (readline.__doc__ or ""):
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")
        try:
            readline.read_init_file()
        except OSError:
            pass
        if readline.get_current_history_length():
            return
        history = os.environ.get("PYTHON_HISTORY") or os.path.join(os.path.expanduser("~"), ".python_history")
        try:
            readline.read_history_file(history)
        except OSError:
            pass
        def write():
            try:
                readline.write_history_file(history)
            except OSError:
                pass
        atexit.register(write)
    sys.__interactivehook__ = __agentpty_hook
    del __agentpty_hook
del sys
`
