package sidecar

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
)

// text/template's execution errors quote the data they failed on: `range can't iterate over
// <the value>`, `non-comparable types <value>: …`. The data of a sidecar's template is the
// secret, and the error reaches the log, the termination message and the rollout's output
// (issue 43). templateError rebuilds the message from what the template itself holds: the
// file, where in the template (line, column and the action's text, which is the group file's,
// not a secret), and a cause kept only when it is one of the forms below, which name keys,
// functions and types but never a value. Any other cause is withheld.

// typeName is a Go type as text/template prints it: string, float64, map[string]interface {},
// []interface {}. No ':', '>' or quote: a value spliced after a context that ends in ">: "
// cannot pass for one (see templateError).
const typeName = `[\w.\[\]{}* ]+`

// keptCauses are the causes shown as they are: every part of them comes from the template's
// text (keys, functions, variables) or is a type.
var keptCauses = compileAll(
	`map has no entry for key "[\pL\pN_]+"`,
	`nil data; no entry for key "[\pL\pN_]+"`,
	`can't evaluate field [\pL\pN_]+ in type `+typeName,
	`nil pointer evaluating `+typeName+`\.[\pL\pN_]+`,
	`[\pL\pN_]+ is not a method but has arguments`,
	`[\pL\pN_]+ has arguments but cannot be invoked as function`,
	`wrong number of args for \w+: [a-z0-9 ]+`,
	`template "[\w./ -]*" not defined`,
	`"\w+" is not a defined function`,
	`undefined variable: \$\w*`,
	`exceeded maximum template depth \(\d+\)`,
	`wrong type for value; expected `+typeName+`; got `+typeName,
	`invalid value; expected `+typeName,
	`error calling \w+: (incompatible types for comparison: `+typeName+` and `+typeName+
		`|value has type `+typeName+`; should be `+typeName+
		`|cannot index slice/array with (nil|type `+typeName+`)`+
		`|can't (index|slice) item of type `+typeName+
		`|len of type `+typeName+`|len of nil pointer|index of untyped nil|index of nil pointer`+
		`|slice of untyped nil|slice of nil pointer|cannot 3-index slice a string|call of nil`+
		`|non-function [.$\w]+ of type `+typeName+`)`,
)

// shortenedCauses are causes whose tail may be a value (or a number taken from one): only
// their head is shown, with what it means.
var shortenedCauses = []struct {
	re  *regexp.Regexp
	say string
}{
	{regexp.MustCompile(`^range can't iterate over `), "range can't iterate over this value (not a list, a map or a number)"},
	{regexp.MustCompile(`^if/with can't use `), "if/with can't use this value"},
	{regexp.MustCompile(`^can't use .* iterate over more than one variable$`), "range can't give two variables over this value"},
	{regexp.MustCompile(`^error calling (\w+): index out of range`), "error calling $1: index out of range"},
	{regexp.MustCompile(`^error calling (\w+): invalid slice index`), "error calling $1: invalid slice index"},
	{regexp.MustCompile(`^error calling (\w+): non-comparable type`), "error calling $1: the values are not comparable"},
	{regexp.MustCompile(`^error calling (\w+): `), "error calling $1 (text/template's message is not shown: it can hold a value)"},
}

func compileAll(res ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(res))
	for i, r := range res {
		out[i] = regexp.MustCompile(`^(` + r + `)$`)
	}
	return out
}

// withheld is said for a cause none of the forms above matches.
const withheld = "the template failed (text/template's message is not shown: it can hold a value)"

// templateError is the error of executing file name's template, without any value: `file
// <name>: template line L col C at <action>: <cause>`.
func templateError(name string, err error) error {
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return fmt.Errorf("file %s: template: %s", name, withheld)
	}
	msg := ee.Err.Error()
	head := regexp.MustCompile(`^template: ` + regexp.QuoteMeta(name) + `:(\d+):(\d+): executing ` + regexp.QuoteMeta(fmt.Sprintf("%q", name)) + ` at <`)
	m := head.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("file %s: template: %s", name, withheld)
	}
	// The action's text and the cause are split at the first ">: ": the action is the
	// template's own text, so what comes before is template text even if the action itself
	// holds ">: ", and a value can only be in what comes after, which must then pass a form
	// whose characters exclude '>' (so it cannot swallow the real ">: " and what follows).
	ctx, cause, ok := strings.Cut(msg[len(m[0]):], ">: ")
	if !ok {
		return fmt.Errorf("file %s: template line %s col %s: %s", name, m[1], m[2], withheld)
	}
	return fmt.Errorf("file %s: template line %s col %s at <%s>: %s", name, m[1], m[2], ctx, safeCause(cause))
}

// safeCause is cause when it has a form that holds no value, its head when only its tail may,
// and withheld otherwise.
func safeCause(cause string) string {
	for _, re := range keptCauses {
		if re.MatchString(cause) {
			return cause
		}
	}
	for _, s := range shortenedCauses {
		if m := s.re.FindStringSubmatchIndex(cause); m != nil {
			return string(s.re.ExpandString(nil, s.say, cause, m))
		}
	}
	return withheld
}
