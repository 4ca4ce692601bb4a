//go:build linux

package sandbox

import "testing"

// TestFilterAssembles: both filters assemble (every jump lands forward on
// a label) and end in the three refusals.
func TestFilterAssembles(t *testing.T) {
	arch, ok := auditArch()
	if !ok {
		t.Skip("no filter for this architecture")
	}
	for _, network := range []bool{false, true} {
		p := filter(arch, network)
		prog, err := assemble(p)
		if err != nil {
			t.Fatalf("network %v: %v", network, err)
		}
		if n := len(prog); n < 3 || p[n-3].label != "nosys" || p[n-1].label != "eacces" {
			t.Errorf("network %v: the program does not end in its refusals: %+v", network, p)
		}
	}
	if _, err := assemble([]bpf{{code: bpfJeq, jt: "nowhere"}}); err == nil {
		t.Errorf("a jump to a missing label assembled")
	}
}
