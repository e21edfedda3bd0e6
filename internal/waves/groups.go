package waves

import (
	"errors"
	"strconv"

	"slipway.dev/slipway/internal/spec"
)

// GroupFiles loads the group file of every group of f, each file once, and checks that each
// group's target is one of its file's: the whole group file of each group, by name, and every
// problem found. A group file's own problems are reported at its own file:line (once, however
// many groups name it); a group file that does not load, or a target no node of it names, at
// the waves file's line of that group.
func (f *File) GroupFiles() (map[string]*spec.Group, spec.Errors) {
	type loaded struct {
		grp *spec.Group
		err error
	}
	files := map[string]*loaded{}
	out := map[string]*spec.Group{}
	var errs spec.Errors
	for i, g := range f.Groups {
		path := "groups[" + strconv.Itoa(i) + "]"
		l := files[g.File]
		if l == nil {
			grp, err := spec.Load(g.File)
			l = &loaded{grp, err}
			files[g.File] = l
			var es spec.Errors
			if errors.As(err, &es) {
				errs = append(errs, es...)
			}
		}
		var es spec.Errors
		switch {
		case l.err != nil && !errors.As(l.err, &es):
			errs = append(errs, spec.Error{File: f.Path, Line: g.fileLine, Path: path + ".file", Msg: l.err.Error()})
		case l.err != nil: // reported above, at the group file's lines
		default:
			if _, err := l.grp.ForTarget(g.Target); err != nil {
				errs = append(errs, spec.Error{File: f.Path, Line: g.targetLn, Path: path + ".target", Msg: err.Error()})
				continue
			}
			out[g.Name] = l.grp
		}
	}
	return out, errs
}
