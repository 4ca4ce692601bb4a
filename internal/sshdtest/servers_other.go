//go:build unix && !linux

package sshdtest

// servers is the listener: without /proc the per-connection servers are
// left to the hang-up of their connections.
func (s *Server) servers() []int { return []int{s.cmd.Process.Pid} }
