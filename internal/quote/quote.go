// Package quote makes text that slipway did not write safe to print on a terminal: a pod's
// events and log, a condition's message, a lock holder's name, an API server's error. Such text
// can hold escape sequences that move the cursor, erase lines already printed and write a fake
// `No changes.` (issue 35), or a line break that starts a line of its own. Every non-printable
// character is written as a Go escape (\x1b, \r, \u202e); printable text, any script, is kept.
package quote

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line is s on one line: every non-printable character, line breaks and tabs included, quoted.
func Line(s string) string { return quote(s, false) }

// Text is s with its line breaks (and tabs) kept and every other non-printable character
// quoted: for text slipway composed of several lines, such as an error with a failure report,
// whose values were quoted with Line where they came in.
func Text(s string) string { return quote(s, true) }

// Lines is Line of each line of s, joined by sep: a log keeps one line per line it wrote.
func Lines(s, sep string) string {
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Line(p)
	}
	return strings.Join(parts, sep)
}

func quote(s string, keepBreaks bool) string {
	if printable(s, keepBreaks) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepBreaks && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// printable reports whether s needs no quoting (the common case, checked without allocating).
func printable(s string, keepBreaks bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return printableRunes(s[i:], keepBreaks)
		}
		if c < 0x20 || c == 0x7f {
			if !keepBreaks || (c != '\n' && c != '\t') {
				return false
			}
		}
	}
	return true
}

func printableRunes(s string, keepBreaks bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && !(keepBreaks && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}
