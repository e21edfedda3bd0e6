package ui

import "slipway.dev/slipway/internal/plan"

// ANSI colours of the plan, as OpenTofu uses them: green adds, yellow changes in place, red
// removes or destroys data. A zero palette writes plain text.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

type palette struct{ on bool }

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (p palette) green(s string) string  { return p.paint(ansiGreen, s) }
func (p palette) yellow(s string) string { return p.paint(ansiYellow, s) }
func (p palette) red(s string) string    { return p.paint(ansiRed, s) }
func (p palette) bold(s string) string   { return p.paint(ansiBold, s) }

// tone paints a clause of the plan's closing line as its lane asks.
func (p palette) tone(t plan.Tone, s string) string {
	switch t {
	case plan.ToneCaution:
		return p.yellow(s)
	case plan.ToneRefused:
		return p.red(s)
	}
	return s
}

// mark colours a change's sign: "-/+" shows its delete red and its create green.
func (p palette) mark(m string) string {
	switch m {
	case "+", "^":
		return p.green(m)
	case "~":
		return p.yellow(m)
	case "-", "!", "x":
		return p.red(m)
	case "-/+":
		return p.red("-") + "/" + p.green("+")
	}
	return m
}

// UseColor is the colour rule of the plan: a terminal, unless NO_COLOR is set to anything
// but "" (no-color.org) or --no-color was given.
func UseColor(terminal, noColorFlag bool, noColorEnv string) bool {
	return terminal && !noColorFlag && noColorEnv == ""
}
