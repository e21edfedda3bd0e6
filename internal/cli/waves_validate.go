package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/ui"
	"slipway.dev/slipway/internal/waves"
)

// wavesValidate is `validate` of a waves file: the file itself (fields, names, a cycle, a
// missing group, a group listed twice), every group file it names (each problem at the group
// file's own line), each group's target, and that no two groups share a namespace or a state
// (as apply would find). It reads no cluster and no state.
func wavesValidate(g *Globals, stdout, stderr io.Writer) error {
	if err := checkWavesSettings(g); err != nil {
		return err
	}
	f, err := waves.Load(g.File)
	var errs spec.Errors
	if err != nil && !errors.As(err, &errs) {
		return err
	}
	var valid []ui.WaveValid
	if f != nil {
		groups, gerrs := f.GroupFiles()
		errs = append(errs, gerrs...)
		var aerrs spec.Errors
		valid, aerrs = wavesApart(g, f, groups)
		errs = append(errs, aerrs...)
	}
	if err := ui.WavesValidation(stdout, stderr, g.File, valid, errs, g.Output == "json"); err != nil {
		return err
	}
	if errs != nil {
		return withExitCode(ExitError, nil)
	}
	return nil
}

// wavesApart resolves each loaded group's target, namespace and state with the run's
// settings, refusing a namespace that is not a DNS label and two groups that would share a
// namespace or a state, at the line of the later group.
func wavesApart(g *Globals, f *waves.File, groups map[string]*spec.Group) ([]ui.WaveValid, spec.Errors) {
	var out []ui.WaveValid
	var errs spec.Errors
	type first struct {
		name string
		line int
	}
	namespaces, states := map[string]first{}, map[string]first{}
	for i, w := range f.Groups {
		whole := groups[w.Name]
		if whole == nil {
			continue // its problem is reported already
		}
		path := "groups[" + strconv.Itoa(i) + "]"
		gg := *g
		gg.Target = w.Target
		if w.State != "" {
			gg.State = w.State
		}
		tg, ns, err := gg.targetOf(whole)
		if err != nil {
			errs = append(errs, spec.Error{File: f.Path, Line: w.Line, Path: path, Msg: err.Error()})
			continue
		}
		url := gg.StateURL(tg.Name)
		where := url
		if isKubeURL(url) {
			where = url + " (group " + tg.Name + ")" // a Secret per group name there
		}
		for seen, what := range map[string]map[string]first{"namespace " + ns: namespaces, "state " + where: states} {
			if other, ok := what[seen]; ok {
				errs = append(errs, spec.Error{File: f.Path, Line: w.Line, Path: path,
					Msg: fmt.Sprintf("group %s shares %s with group %s (line %d): each group needs its own namespace and state", w.Name, seen, other.name, other.line)})
				continue
			}
			what[seen] = first{w.Name, w.Line}
		}
		out = append(out, ui.WaveValid{WaveGroup: ui.WaveGroup{Name: w.Name, File: w.File, Target: w.Target, Namespace: ns, DependsOn: w.DependsOn}, Nodes: len(tg.Nodes)})
	}
	return out, errs
}
