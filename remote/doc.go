// Package remote is the engine of a terminal on another machine, for
// authors of an agentpty.Backend whose transport carries bytes (sshpty's
// SSH channel, kubepty's exec stream): the transport keeps only the
// connection, and this package gives the rest.
//
//   - Output: the terminal's output, pumped from the transport, less the
//     marks (the command's pid at its start, a probe's fence), with
//     OutputPending's answer.
//   - Input: typed input with a write deadline, handed to the
//     transport's copier a chunk at a time.
//   - ProbeCache: when a probe's answer still serves.
//   - Parse and Archs: the terminal's state on the host's Linux kernel,
//     read from what probe.sh printed there.
//   - The end schedule (HupDelay, EndArgs), the local library's.
//   - The shell run on the host (ServeScript, ExecScript): probe.sh,
//     end.sh and each transport's hooks, embedded .sh files checked by
//     shellcheck.
package remote
