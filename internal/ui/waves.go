package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/status"
)

// WaveGroup is one group of a waves file as the printers name it.
type WaveGroup struct {
	Name      string   `json:"name"`
	File      string   `json:"file"`
	Target    string   `json:"target"`
	Namespace string   `json:"namespace"`
	DependsOn []string `json:"dependsOn"`
}

// WavePlan is a group's plan in a waves file's plan.
type WavePlan struct {
	WaveGroup
	Plan *plan.Plan
}

// WavesPlan writes the plans of a waves file's groups, in order, each under a heading.
func WavesPlan(w io.Writer, plans []WavePlan, o PlanOptions) {
	for i, p := range plans {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Group %s (%s, target %s, namespace %s):\n", q(p.Name), q(p.File), q(p.Target), q(p.Namespace))
		PlanNotes(w, p.Plan)
		PlanWith(w, p.Plan, o)
	}
}

// WavesPlanJSON writes the plans of a waves file as one document: per group, in order, its
// place in the file and its plan as `plan -o json` prints it.
func WavesPlanJSON(w io.Writer, file string, plans []WavePlan) error {
	type group struct {
		WaveGroup
		Plan json.RawMessage `json:"plan"`
	}
	doc := struct {
		Version int     `json:"version"`
		File    string  `json:"file"`
		Changes bool    `json:"changes"`
		Groups  []group `json:"groups"`
	}{Version: JSONVersion, File: file, Groups: []group{}}
	for _, p := range plans {
		var b bytes.Buffer
		if err := PlanJSON(&b, p.Plan); err != nil {
			return err
		}
		doc.Changes = doc.Changes || p.Plan.HasChanges()
		doc.Groups = append(doc.Groups, group{WaveGroup: nonNilDeps(p.WaveGroup), Plan: json.RawMessage(bytes.TrimSpace(b.Bytes()))})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func nonNilDeps(g WaveGroup) WaveGroup {
	if g.DependsOn == nil {
		g.DependsOn = []string{}
	}
	return g
}

// WaveHealth is a group's health in `status` of a waves file.
type WaveHealth struct {
	WaveGroup
	Healthy bool          `json:"healthy"`
	Why     []string      `json:"why"`    // why it is not healthy
	Blocks  []string      `json:"blocks"` // the groups that wait on it, directly or not, while it is not healthy
	Status  *status.Group `json:"-"`
}

// WavesStatus writes per group, in order, its health and which groups it blocks, then why
// each unhealthy group is so.
func WavesStatus(w io.Writer, file string, groups []WaveHealth) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTARGET\tNAMESPACE\tDEPENDS ON\tHEALTH\tBLOCKS")
	for _, g := range groups {
		health := "healthy"
		if !g.Healthy {
			health = "unhealthy"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", q(g.Name), q(g.Target), q(g.Namespace), dash(strings.Join(g.DependsOn, ",")), health, dash(strings.Join(g.Blocks, ",")))
	}
	_ = tw.Flush()
	for _, g := range groups {
		if g.Healthy {
			continue
		}
		fmt.Fprintf(w, "\nGroup %s is not healthy:\n", q(g.Name))
		for _, why := range g.Why {
			fmt.Fprintln(w, "  "+q(why))
		}
		if len(g.Blocks) > 0 {
			fmt.Fprintf(w, "  it blocks %s (apply of %s starts them only once it is healthy)\n", q(strings.Join(g.Blocks, ", ")), q(file))
		}
	}
}

// WavesStatusJSON writes the health of a waves file's groups as one document, each group with
// its status as `status -o json` prints it.
func WavesStatusJSON(w io.Writer, file string, groups []WaveHealth) error {
	type group struct {
		WaveHealth
		Status json.RawMessage `json:"status"`
	}
	doc := struct {
		Version int     `json:"version"`
		File    string  `json:"file"`
		Healthy bool    `json:"healthy"`
		Groups  []group `json:"groups"`
	}{Version: JSONVersion, File: file, Healthy: true, Groups: []group{}}
	for _, g := range groups {
		var b bytes.Buffer
		if err := StatusJSON(&b, g.Status); err != nil {
			return err
		}
		g.WaveGroup = nonNilDeps(g.WaveGroup)
		g.Why, g.Blocks = nonNil(g.Why), nonNil(g.Blocks)
		doc.Healthy = doc.Healthy && g.Healthy
		doc.Groups = append(doc.Groups, group{WaveHealth: g, Status: json.RawMessage(bytes.TrimSpace(b.Bytes()))})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
