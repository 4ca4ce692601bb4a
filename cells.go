package agentpty

import "github.com/agentpty/agentpty/internal/screen"

// Cell is one cell of the screen: its character (Text, with combining
// marks; Rune, the first of them), its Width (2 for a wide character, 0
// for the right half that follows it, else 1) and its attributes (Bold,
// Italic, Underline, Blink, Reverse, FG and BG). A host draws the screen
// from them; a span in reverse video or on a background other than
// DefaultColor is how programs highlight a selection or a match.
type Cell = screen.Cell

// Color is a cell's colour as the program selected it: DefaultColor, a
// palette index 0-255, or RGBFlag|0xRRGGBB for a 24-bit colour. A 24-bit
// colour with red and green 0 reads as the palette index of its blue
// (vt10x stores both kinds alike). Bold text in colours 0-7 is stored as
// 8-15, the bright colour xterm draws it in.
type Color = screen.Color

// The colours that are not palette indexes.
const (
	DefaultColor = screen.DefaultColor
	RGBFlag      = screen.RGBFlag
)
