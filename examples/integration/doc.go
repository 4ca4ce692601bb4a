// Package integration shows how a project drives an interactive program in
// its own Go tests through agentpty: start it under a real terminal, wait
// for its prompt instead of sleeping, type, assert on what a person would
// see, and let a deferred Close leave nothing running. The tests are the
// example; this package holds no other code.
package integration
