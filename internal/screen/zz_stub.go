package screen

import (
	"bytes"
	"strings"

	"github.com/hinshun/vt10x"
)

type Screen struct {
	t   vt10x.Terminal
	out bytes.Buffer
}

func New(cols, rows int) *Screen {
	s := &Screen{}
	s.t = vt10x.New(vt10x.WithSize(cols, rows), vt10x.WithWriter(&s.out))
	return s
}
func (s *Screen) Write(dst, p []byte) []byte {
	s.t.Write(p)
	dst = append(dst, s.out.Bytes()...)
	s.out.Reset()
	return dst
}
func (s *Screen) Resize(c, r int)    { s.t.Resize(c, r) }
func (s *Screen) Size() (int, int)   { s.t.Lock(); defer s.t.Unlock(); return s.t.Size() }
func (s *Screen) Cursor() (int, int) { s.t.Lock(); defer s.t.Unlock(); c := s.t.Cursor(); return c.Y, c.X }
func (s *Screen) AltScreen() bool {
	s.t.Lock()
	defer s.t.Unlock()
	return s.t.Mode()&vt10x.ModeAltScreen != 0
}
func (s *Screen) Lines() []string {
	s.t.Lock()
	defer s.t.Unlock()
	c, r := s.t.Size()
	out := make([]string, r)
	for y := 0; y < r; y++ {
		var b strings.Builder
		for x := 0; x < c; x++ {
			b.WriteRune(s.t.Cell(x, y).Char)
		}
		out[y] = strings.TrimRight(b.String(), " \x00")
	}
	return out
}
