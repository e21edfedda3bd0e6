package ui

import (
	"encoding/json"
	"fmt"
	"io"

	"slipway.dev/slipway/internal/spec"
)

// Validation writes what `validate` found in file: grp is the group when it loaded (nil
// otherwise), errs its problems (nil: valid). As text, each problem is a line on stderr and
// a valid file one line on stdout; with asJSON, one document on stdout either way
// (docs/json.md).
func Validation(stdout, stderr io.Writer, file string, grp *spec.Group, errs spec.Errors, asJSON bool) error {
	if asJSON {
		return validationJSON(stdout, file, grp, errs)
	}
	if errs != nil {
		for _, e := range errs {
			if _, err := fmt.Fprintln(stderr, q(e.Error())); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := fmt.Fprintf(stdout, "%s: valid (%s)\n", q(file), Plural(len(grp.Nodes), "node"))
	return err
}

// jsonError is one error of `validate -o json`, of a group file or of a waves file.
type jsonError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// jsonErrors are errs as `validate -o json` lists them: none is an absent list.
func jsonErrors(errs spec.Errors) []jsonError {
	var out []jsonError
	for _, e := range errs {
		out = append(out, jsonError{e.File, e.Line, e.Path, e.Msg})
	}
	return out
}

func validationJSON(w io.Writer, file string, grp *spec.Group, errs spec.Errors) error {
	doc := struct {
		File   string      `json:"file"`
		Valid  bool        `json:"valid"`
		Group  string      `json:"group,omitempty"`
		Nodes  int         `json:"nodes"`
		Errors []jsonError `json:"errors,omitempty"`
	}{File: file, Valid: errs == nil, Errors: jsonErrors(errs)}
	if grp != nil {
		doc.Group, doc.Nodes = grp.Name, len(grp.Nodes)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Plural is "1 node", "2 nodes".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
