//go:build !linux

package contain

import (
	"context"
	"syscall"
)

// Host is the cgroup of one Manager; only Linux has cgroups.
type Host struct{}

// NewHost returns ErrUnavailable: only Linux has cgroups.
func NewHost(Limits) (*Host, error) { return nil, ErrUnavailable }

// Kind is never called: NewHost gives no Host here.
func (*Host) Kind() string { return "" }

// Memory reports false: nothing is bounded.
func (*Host) Memory() bool { return false }

// Close does nothing.
func (*Host) Close() error { return nil }

// Group is the cgroup of one session; only Linux has cgroups.
type Group struct{}

// NewGroup returns ErrUnavailable.
func (*Host) NewGroup(string) (*Group, error) { return nil, ErrUnavailable }

// Prepare does nothing.
func (*Group) Prepare(*syscall.SysProcAttr) {}

// Started does nothing.
func (*Group) Started() error { return nil }

// Members returns nothing.
func (*Group) Members() []int { return nil }

// Left reports false.
func (*Group) Left(int) bool { return false }

// Signal finds nothing.
func (*Group) Signal(...syscall.Signal) int { return 0 }

// Kill does nothing.
func (*Group) Kill() error { return nil }

// WaitEmpty returns at once.
func (*Group) WaitEmpty(context.Context) error { return nil }

// Remove does nothing.
func (*Group) Remove() error { return nil }

// TryRemove does nothing.
func (*Group) TryRemove() error { return nil }

// Populated reports false: there are no groups here.
func (*Group) Populated() bool { return false }

// WaitEmpty returns at once: there are no groups here.
func (*Host) WaitEmpty(context.Context) error { return nil }

// Kill does nothing: there are no groups here.
func (*Host) Kill() error { return nil }
