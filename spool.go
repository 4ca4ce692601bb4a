package agentpty

// Spool keeps whole outputs that were too long for a result. When a
// result's output is cut to Options.MaxOutputBytes, the manager hands the
// whole text to Put and puts the reference Put returns in the result's
// Spool field (JSON "spool"), so a host can show the model or a person
// where the rest is: a file name, a URL, a key.
type Spool interface {
	// Put stores text, the whole output of one result of session id, and
	// returns a reference to it. It is called without any lock held, from
	// the goroutine of the call whose result it is. An error or a panic
	// leaves the result as it is, without a reference.
	Put(id, text string) (string, error)
}

// SpoolFunc adapts a function to Spool.
type SpoolFunc func(id, text string) (string, error)

// Put calls f.
func (f SpoolFunc) Put(id, text string) (string, error) { return f(id, text) }

// spool hands text to Options.Spool, when there is text and a spool, and
// returns the reference; a failing or panicking spool gives "".
func (m *Manager) spool(id, text string) (ref string) {
	if text == "" || m.opts.Spool == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			ref = "" // the result goes out as it is, without a reference
		}
	}()
	ref, err := m.opts.Spool.Put(id, text)
	if err != nil {
		return ""
	}
	return ref
}
