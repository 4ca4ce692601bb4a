//go:build unix && !linux

package sshdtest

import "os/exec"

// servers is the listener: without /proc the per-connection servers are
// left to the hang-up of their connections.
func (s *Server) servers() []int { return []int{s.cmd.Process.Pid} }

// Descendants cannot be listed without /proc: none are.
func (s *Server) Descendants() []int { return nil }

// dieWithTests has no parent-death signal to ask for here: the listener
// is killed by Close.
func dieWithTests(*exec.Cmd) {}
