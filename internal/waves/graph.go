package waves

import (
	"slices"
	"strconv"
	"strings"
)

// checkGraph refuses a group listed twice (by name, or by group file and target: one state),
// a dependency on a group the file does not hold or on itself, and a cycle.
func (l *loader) checkGraph(f *File) {
	byName := map[string]*Group{}
	byUnit := map[string]*Group{}
	for i, g := range f.Groups {
		path := "groups[" + strconv.Itoa(i) + "]"
		if first := byName[g.Name]; first != nil {
			l.add(g.Line, path+".name", "group %s listed twice (first at line %d)", g.Name, first.Line)
			continue
		}
		byName[g.Name] = g
		unit := g.File + "\x00" + g.Target + "\x00" + g.State
		if first := byUnit[unit]; first != nil {
			l.add(g.Line, path, "group %s is group %s again (file %s, target %s, first at line %d): one group listed twice", g.Name, first.Name, g.File, g.Target, first.Line)
			continue
		}
		byUnit[unit] = g
	}
	for i, g := range f.Groups {
		path := "groups[" + strconv.Itoa(i) + "].dependsOn"
		seen := map[string]bool{}
		for j, d := range g.DependsOn {
			switch {
			case d == g.Name:
				l.add(g.depLines[j], path, "group %s depends on itself", g.Name)
			case byName[d] == nil:
				l.add(g.depLines[j], path, "no group %q in the file; groups: %s", d, strings.Join(f.Names(), ", "))
			case seen[d]:
				l.add(g.depLines[j], path, "%s named twice", d)
			}
			seen[d] = true
		}
	}
	if len(l.errs) == 0 {
		l.checkCycles(f, byName)
	}
}

// checkCycles reports each cycle once, at the dependsOn entry that closes it.
func (l *loader) checkCycles(f *File, byName map[string]*Group) {
	const (
		unseen = iota
		open
		done
	)
	mark := map[string]int{}
	var stack []string
	var visit func(g *Group)
	visit = func(g *Group) {
		mark[g.Name] = open
		stack = append(stack, g.Name)
		for j, d := range g.DependsOn {
			switch mark[d] {
			case open:
				i := slices.Index(stack, d)
				cycle := append(slices.Clone(stack[i:]), d)
				l.add(g.depLines[j], "groups["+strconv.Itoa(slices.Index(f.Groups, g))+"].dependsOn",
					"dependency cycle: %s", strings.Join(cycle, " -> "))
			case unseen:
				visit(byName[d])
			}
		}
		stack = stack[:len(stack)-1]
		mark[g.Name] = done
	}
	for _, g := range f.Groups {
		if mark[g.Name] == unseen {
			visit(g)
		}
	}
}

// Order is the file's groups in dependency order: a group after every group it depends on,
// and otherwise in the order written.
func (f *File) Order() []*Group {
	placed := map[string]bool{}
	var out []*Group
	for len(out) < len(f.Groups) {
		for _, g := range f.Groups {
			if placed[g.Name] || !all(g.DependsOn, placed) {
				continue
			}
			placed[g.Name] = true
			out = append(out, g)
			break
		}
	}
	return out
}

// Dependents are the groups that depend on name directly, in the order written.
func (f *File) Dependents(name string) []string {
	var out []string
	for _, g := range f.Groups {
		if slices.Contains(g.DependsOn, name) {
			out = append(out, g.Name)
		}
	}
	return out
}

func all(names []string, set map[string]bool) bool {
	for _, n := range names {
		if !set[n] {
			return false
		}
	}
	return true
}

// Downstream are the groups that wait on name, directly or through others, in dependency
// order: what a failed or unhealthy name blocks.
func (f *File) Downstream(name string) []string {
	blocked := map[string]bool{name: true}
	var out []string
	for _, g := range f.Order() {
		for _, d := range g.DependsOn {
			if blocked[d] && !blocked[g.Name] {
				blocked[g.Name] = true
				out = append(out, g.Name)
			}
		}
	}
	return out
}

// Upstream are the groups name waits on, directly or through others, in dependency order:
// what must still be healthy while name rolls out.
func (f *File) Upstream(name string) []string {
	need := map[string]bool{}
	byName := map[string]*Group{}
	for _, g := range f.Groups {
		byName[g.Name] = g
	}
	var visit func(n string)
	visit = func(n string) {
		for _, d := range byName[n].DependsOn {
			if !need[d] {
				need[d] = true
				visit(d)
			}
		}
	}
	if byName[name] != nil {
		visit(name)
	}
	var out []string
	for _, g := range f.Order() {
		if need[g.Name] {
			out = append(out, g.Name)
		}
	}
	return out
}
