package central

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// ProtectedError is destroy refused by a protected database (central.databases.<db>.protect),
// or, Removed, the removal of one the file no longer has and the state records protected.
type ProtectedError struct {
	Databases []string
	Removed   bool
}

func (e *ProtectedError) Error() string {
	if e.Removed {
		return fmt.Sprintf("central: database(s) %s are no longer in the file but were last applied with protect (the state records central.databases.<database>.protect): slipway removes none of the central objects; put them back with protect unset and apply, then remove them, or apply with --keep-claims, which keeps the databases", strings.Join(e.Databases, ", "))
	}
	return fmt.Sprintf("central: database(s) %s are protected (central.databases.<database>.protect): destroy refuses and removes nothing; unset protect and apply, or destroy with --keep-claims, which keeps the databases", strings.Join(e.Databases, ", "))
}

// PlanDestroy is what destroy removes: every object with the deployment's mark. A protected
// database that exists refuses it, unless keepClaims keeps the databases (and their owners).
func (l *Lane) PlanDestroy(ctx context.Context, keepClaims bool) (*Planned, error) {
	roles, err := l.PG.Roles(ctx, nil, l.mark())
	if err != nil {
		return nil, err
	}
	dbs, err := l.PG.Databases(ctx, nil, l.mark())
	if err != nil {
		return nil, err
	}
	p := &Planned{}
	keep := map[string]bool{}
	var protected []string
	for n, d := range dbs {
		if d.Comment != l.mark() {
			continue
		}
		switch {
		case keepClaims:
			keep[d.Owner] = true
			p.Notes = append(p.Notes, fmt.Sprintf("central: database %s stays (--keep-claims), with its owner %s and its static role", n, d.Owner))
		case l.protected(n):
			protected = append(protected, n)
		default:
			p.add(plan.CentralDatabase, "", n, plan.Delete, "its data is lost")
		}
	}
	if len(protected) > 0 {
		slices.Sort(protected)
		// Protected by the state's record alone: the file has it no more, and the words say so.
		// (l.Central is the record itself in the lane of a file without `central:`.)
		removed := l.Central == l.Recorded || slices.ContainsFunc(protected, func(n string) bool {
			return !slices.ContainsFunc(l.Central.Databases, func(db spec.CentralDatabase) bool { return l.name(db.Key) == n })
		})
		return nil, &ProtectedError{Databases: protected, Removed: removed}
	}
	for n, r := range roles {
		if r.Comment != l.mark() || keep[n] {
			continue
		}
		sr, err := l.Bao.Read(ctx, l.staticRolePath(n))
		if err != nil {
			return nil, err
		}
		if sr != nil && str(sr["username"]) == n {
			p.add(plan.CentralStaticRole, "", n, plan.Delete, "")
		}
		p.add(plan.CentralLogin, "", n, plan.Delete, "")
	}
	keys, err := l.Bao.List(ctx, l.metaPath("slipway/"+l.Identity))
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		if strings.HasSuffix(key, "/") {
			continue
		}
		path := l.kvPath(key)
		meta, err := l.Bao.Read(ctx, l.metaPath(path))
		if err != nil {
			return nil, err
		}
		if ownerOf(meta) == l.Identity {
			p.add(plan.CentralKV, "", l.Central.KVMount+"/"+path, plan.Delete, "")
		}
	}
	if l.S3 != nil {
		if err := l.planDestroyS3(ctx, keepClaims, p); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(p.Changes, func(a, b plan.CentralChange) int {
		if r := deleteRank[a.What] - deleteRank[b.What]; r != 0 {
			return r
		}
		return strings.Compare(a.Name, b.Name)
	})
	return p, nil
}

// protected reports whether the database of that name is protected: as the file says (so
// unsetting protect and applying lifts it), a database the file no longer has as the state
// records it last applied.
func (l *Lane) protected(name string) bool {
	for _, db := range l.Central.Databases {
		if l.name(db.Key) == name {
			return db.Protect
		}
	}
	return l.recordedProtected(name)
}
