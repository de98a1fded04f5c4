package terminal

import "strings"

// stripEscapes removes ANSI/VT escape sequences (CSI "ESC [" … final byte; OSC "ESC ]" …
// BEL or "ESC \"; DCS, SOS, PM and APC strings up to "ESC \"; two- and three-byte escapes
// such as charset selections) and every other C0 control character but tab, LF and CR.
func stripEscapes(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
		case c == '\t' || c == '\n' || c == '\r' || c >= 0x20 && c != 0x7f:
			b.WriteByte(c)
			i++
		default:
			i++
		}
	}
	return b.String()
}

// isControl reports a character stripEscapes removes.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

// skipEscape returns the index after the escape sequence starting at s[i] (an ESC).
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[': // CSI: parameters and intermediates (0x20-0x3f), then one final byte (0x40-0x7e)
		i++
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \
		i++
		for i < len(s) {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			case s[i] == 0x1b:
				return i // a new escape ends the broken string
			}
			i++
		}
		return i
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates, e.g. ESC ( B
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}
