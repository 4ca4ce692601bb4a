// Package sandbox is the helper process of agentpty's Linux sandbox: the
// host binary, executed again, sets up a child's confinement in two stages
// around bubblewrap and then executes the command. An init function
// recognises the helper by its environment variable (Env) together with
// the nonce the host hands over on a descriptor (FDNonce), which a forged
// variable lacks, and then never returns to the host's own code; it
// refuses to act in a setuid, setgid or file-capability program.
//
// The outer stage runs in the host's namespaces: it makes bubblewrap
// ignore the terminal's and Kill's signals and any other a host sends the
// foreground group (so that Ctrl-C and SIGTERM reach the command, not the
// launcher, which would take the whole sandbox down with it) and executes bubblewrap, whose error messages go
// to the host's status pipe. bubblewrap makes the namespaces and mounts
// and executes the inner stage, which applies what mounts cannot express
// (Landlock's filesystem rules and scopes, a seccomp filter, no
// capabilities), marks every descriptor above 2 close-on-exec, restores
// the default signal dispositions, reports "confined" on the status pipe
// and executes the command.
package sandbox
