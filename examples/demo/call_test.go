package main

import (
	"strings"
	"testing"
)

func TestPrintResult(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{
			"fields in order, output as a block",
			`{"output":">>> 2**64\n18446744073709551616\n>>> ","exited":false,"matched":true,"id":"pty-1"}`,
			`← {"id": "pty-1", "matched": true, "exited": false}
  output:
  │ >>> 2**64
  │ 18446744073709551616
  │ >>> 
`,
		},
		{
			"empty output, fields a later version adds",
			`{"id":"pty-2","output":"","signal":"SIGHUP","zeta":1,"alpha":"x"}`,
			`← {"id": "pty-2", "signal": "SIGHUP", "alpha": "x", "zeta": 1}
  output: ""
`,
		},
		{
			"control bytes are shown, not sent to the reader's terminal",
			`{"id":"pty-3","output":"\u001b[31mred\r"}`,
			`← {"id": "pty-3"}
  output:
  │ \x1b[31mred\x0d
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			(&caller{out: &b}).printResult([]byte(tc.json))
			if got := b.String(); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
