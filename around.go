package agentpty

import "sync/atomic"

// around is the state of what a host builds around a session, each piece
// in its own file: secrets (secret.go), taps for recordings and people
// attached (tap.go, record.go, attach.go) and Expect (expect.go). It is
// embedded in Session, whose reader pays one atomic load for it while no
// secret was given, nobody records and nobody is attached.
//
// The masker's mutex is held by the reader while it stores and renders
// masked output: its place in the lock order is in session.go.
type around struct {
	mask       atomic.Pointer[masker] // nil until WriteSecret gives a secret
	hiddenSent atomic.Bool            // input_hidden was emitted and echo has stayed off since

	// Guarded by Session.mu.
	taps     []*tap        // recordings and attachments following the output
	keyboard []*attachment // attached people, oldest first; the first one types

	exp expectState // used by the Expect call whose turn it is (Session.lane)
}
