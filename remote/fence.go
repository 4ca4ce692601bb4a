package remote

import (
	"bytes"
	"strconv"
)

// StripMarks takes the probes' marks (prefix, a number, BEL) out of
// data, calling seen with each mark's number (probes may write their
// marks out of their order), and returns the rest and the tail that may
// be the start of a mark (held for the next read, unless at the end). A
// chunk without a mark, nearly every one, comes back as it is: the rest
// is then data's own array, which the caller copies before it reads into
// that array again.
func StripMarks(data, prefix []byte, end bool, seen func(int)) (out, carry []byte) {
	i := bytes.Index(data, prefix)
	if i < 0 {
		out, carry = holdTail(data, prefix, end)
		return out, carry
	}
	out = make([]byte, 0, len(data))
	for ; i >= 0; i = bytes.Index(data, prefix) {
		j := bytes.IndexByte(data[i+len(prefix):], '\a')
		if j < 0 || j > 20 {
			if j < 0 && !end && len(data)-i < len(prefix)+20 {
				return append(out, data[:i]...), bytes.Clone(data[i:])
			}
			out = append(out, data[:i+1]...) // not a mark of ours after all
			data = data[i+1:]
			continue
		}
		if n, err := strconv.Atoi(string(data[i+len(prefix) : i+len(prefix)+j])); err == nil {
			seen(n)
		}
		out = append(out, data[:i]...)
		data = data[i+len(prefix)+j+1:]
	}
	rest, carry := holdTail(data, prefix, end)
	return append(out, rest...), carry
}

// holdTail splits off data's last bytes when they may begin a mark whose
// rest comes with the next read (never at the end); the tail is a copy,
// as data's array is the reader's buffer.
func holdTail(data, prefix []byte, end bool) (rest, tail []byte) {
	if !end {
		for k := min(len(prefix)-1, len(data)); k > 0; k-- {
			if bytes.HasPrefix(prefix, data[len(data)-k:]) {
				return data[:len(data)-k], bytes.Clone(data[len(data)-k:])
			}
		}
	}
	return data, nil
}
