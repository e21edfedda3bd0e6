package ui

import (
	"encoding/json"
	"fmt"
	"io"

	"slipway.dev/slipway/internal/spec"
)

// WaveValid is a group of a waves file as `validate` reports it: its place and its nodes.
type WaveValid struct {
	WaveGroup
	Nodes int `json:"nodes"` // the nodes of its target
}

// WavesValidation writes `validate`'s report of a waves file: every problem on stderr, one a
// line (FILE:LINE: FIELD.PATH: problem, each in the file it is in), or one line on stdout
// when it is valid. With asJSON, one document on stdout.
func WavesValidation(stdout, stderr io.Writer, file string, groups []WaveValid, errs spec.Errors, asJSON bool) error {
	nodes := 0
	for _, g := range groups {
		nodes += g.Nodes
	}
	if asJSON {
		doc := struct {
			File   string      `json:"file"`
			Valid  bool        `json:"valid"`
			Groups []WaveValid `json:"groups"`
			Nodes  int         `json:"nodes"`
			Errors []jsonError `json:"errors,omitempty"`
		}{File: file, Valid: errs == nil, Groups: []WaveValid{}, Nodes: nodes, Errors: jsonErrors(errs)}
		for _, g := range groups {
			g.WaveGroup = nonNilDeps(g.WaveGroup)
			doc.Groups = append(doc.Groups, g)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if errs != nil {
		for _, e := range errs {
			if _, err := fmt.Fprintln(stderr, q(e.Error())); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := fmt.Fprintf(stdout, "%s: valid (%s, %s)\n", q(file), Plural(len(groups), "group"), Plural(nodes, "node"))
	return err
}
