package central

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// Stand-ins for the unit tests of the lane's decisions: a PostgreSQL catalog and an OpenBao
// path store in memory that understand exactly the statements and paths the lane sends. The
// e2e tests (e2e/central_test.go) run the lane against the dev environment's real servers.

type fakePG struct {
	roles map[string]Role
	dbs   map[string]Database
	exts  map[string][]string
	log   []string
}

func newFakePG() *fakePG {
	return &fakePG{roles: map[string]Role{}, dbs: map[string]Database{}, exts: map[string][]string{}}
}

func (f *fakePG) Roles(_ context.Context, names []string, mark string) (map[string]Role, error) {
	out := map[string]Role{}
	for n, r := range f.roles {
		if slices.Contains(names, n) || r.Comment == mark {
			out[n] = r
		}
	}
	return out, nil
}

func (f *fakePG) Databases(_ context.Context, names []string, mark string) (map[string]Database, error) {
	out := map[string]Database{}
	for n, d := range f.dbs {
		if slices.Contains(names, n) || d.Comment == mark {
			out[n] = d
		}
	}
	return out, nil
}

func (f *fakePG) Extensions(_ context.Context, db string) ([]string, error) { return f.exts[db], nil }

var (
	reCreateRole = regexp.MustCompile(`^(CREATE|ALTER) ROLE "([^"]+)" .*CONNECTION LIMIT (-?\d+)$`)
	reComment    = regexp.MustCompile(`^COMMENT ON (ROLE|DATABASE) "([^"]+)" IS '([^']*)'$`)
	reCreateDB   = regexp.MustCompile(`^CREATE DATABASE "([^"]+)" OWNER "([^"]+)"$`)
	reOwner      = regexp.MustCompile(`^ALTER DATABASE "([^"]+)" OWNER TO "([^"]+)"$`)
	reDrop       = regexp.MustCompile(`^DROP (DATABASE|ROLE) IF EXISTS "([^"]+)"`)
	reExt        = regexp.MustCompile(`^CREATE EXTENSION IF NOT EXISTS "([^"]+)"$`)
)

func (f *fakePG) Exec(_ context.Context, db string, _ bool, stmts ...string) error {
	for _, s := range stmts {
		f.log = append(f.log, s)
		switch {
		case reCreateRole.MatchString(s):
			m := reCreateRole.FindStringSubmatch(s)
			r := f.roles[m[2]]
			r.Login, r.Privileged = true, false
			r.ConnLimit = atoi(m[3])
			f.roles[m[2]] = r
		case reComment.MatchString(s):
			m := reComment.FindStringSubmatch(s)
			if m[1] == "ROLE" {
				r := f.roles[m[2]]
				r.Comment = m[3]
				f.roles[m[2]] = r
			} else {
				d := f.dbs[m[2]]
				d.Comment = m[3]
				f.dbs[m[2]] = d
			}
		case reCreateDB.MatchString(s):
			m := reCreateDB.FindStringSubmatch(s)
			f.dbs[m[1]] = Database{Owner: m[2]}
		case reOwner.MatchString(s):
			m := reOwner.FindStringSubmatch(s)
			d := f.dbs[m[1]]
			d.Owner = m[2]
			f.dbs[m[1]] = d
		case reDrop.MatchString(s):
			m := reDrop.FindStringSubmatch(s)
			if m[1] == "ROLE" {
				delete(f.roles, m[2])
			} else {
				delete(f.dbs, m[2])
			}
		case reExt.MatchString(s):
			f.exts[db] = append(f.exts[db], reExt.FindStringSubmatch(s)[1])
		}
	}
	return nil
}

func atoi(s string) int {
	n := 0
	neg := strings.HasPrefix(s, "-")
	for _, c := range strings.TrimPrefix(s, "-") {
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// fakeBao keeps static roles as written and KV v2 entries as metadata plus versions. Like
// OpenBao, it sets a static role's password only when a write creates the role (passwords
// counts those by path); a write to an existing one changes only its settings.
type fakeBao struct {
	paths     map[string]map[string]any
	writes    int
	passwords map[string]int
}

func newFakeBao() *fakeBao {
	return &fakeBao{paths: map[string]map[string]any{}, passwords: map[string]int{}}
}

func (f *fakeBao) Read(_ context.Context, path string) (map[string]any, error) {
	return f.paths[path], nil
}

func (f *fakeBao) Write(_ context.Context, path string, data map[string]any) error {
	f.writes++
	if mount, rest, ok := strings.Cut(path, "/data/"); ok {
		meta := f.paths[mount+"/metadata/"+rest]
		if meta == nil {
			meta = map[string]any{}
		}
		if opts, _ := data["options"].(map[string]any); opts != nil && opts["cas"] == 0 && seconds(meta["current_version"]) > 0 {
			return errString("check-and-set parameter did not match the current version")
		}
		meta["current_version"] = float64(seconds(meta["current_version"]) + 1)
		f.paths[mount+"/metadata/"+rest] = meta
		f.paths[path] = map[string]any{"data": data["data"]}
		return nil
	}
	if strings.Contains(path, "/metadata/") {
		meta := f.paths[path]
		if meta == nil {
			meta = map[string]any{"current_version": float64(0)}
		}
		meta["custom_metadata"] = data["custom_metadata"]
		f.paths[path] = meta
		return nil
	}
	if _, ok := f.paths[path]; !ok && strings.Contains(path, "/static-roles/") {
		f.passwords[path]++
	}
	f.paths[path] = data
	return nil
}

func (f *fakeBao) Delete(_ context.Context, path string) error {
	f.writes++
	delete(f.paths, path)
	if mount, rest, ok := strings.Cut(path, "/metadata/"); ok {
		delete(f.paths, mount+"/data/"+rest)
	}
	return nil
}

func (f *fakeBao) List(_ context.Context, path string) ([]string, error) {
	var out []string
	for p := range f.paths {
		if rest, ok := strings.CutPrefix(p, path+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out, nil
}

type errString string

func (e errString) Error() string { return string(e) }
