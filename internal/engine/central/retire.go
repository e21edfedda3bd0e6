package central

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// A deployment's objects outlive the file's `central:`: the state records that the lane made
// objects, and where (the OpenBao mounts and connection; the servers are the environment's),
// and which databases were last applied with protect. A file without the section gets a lane
// built on that record (Recorded), which wants nothing: its plan (PlanRetire) removes every
// object with the deployment's mark, with the care destroy takes of databases.

// Recorded is the lane's configuration as a state record keeps it, read back: a state is a
// file its holders may edit, so its values are checked as the group file's are before any
// reaches a server's path or a catalog query. protected and buckets are the file's keys of the
// databases and the buckets last applied with protect.
func Recorded(databaseMount, connection, kvMount string, protected, buckets []string) (*spec.Central, error) {
	for _, m := range []struct{ field, v string }{{"databaseMount", databaseMount}, {"connection", connection}, {"kvMount", kvMount}} {
		if m.v == "" || strings.ContainsAny(m.v, "/ \t\n") {
			return nil, fmt.Errorf("central: the state's record of the lane: %s %q is not a name (empty, or with '/' or blanks)", m.field, m.v)
		}
	}
	c := &spec.Central{DatabaseMount: databaseMount, Connection: connection, KVMount: kvMount}
	for _, k := range protected {
		if !spec.IsDNSLabel(k) {
			return nil, fmt.Errorf("central: the state's record of the lane: protected database %q is not a DNS label", k)
		}
		c.Databases = append(c.Databases, spec.CentralDatabase{Key: k, Protect: true})
	}
	if err := recordedBuckets(c, buckets); err != nil {
		return nil, err
	}
	return c, nil
}

// SameMounts reports whether a and b name the same mounts and connection.
func SameMounts(a, b *spec.Central) bool {
	return a.DatabaseMount == b.DatabaseMount && a.Connection == b.Connection && a.KVMount == b.KVMount
}

// ProtectedKeys are the file's keys of c's protected databases, sorted: what the state
// records of protect.
func ProtectedKeys(c *spec.Central) []string {
	var out []string
	for _, db := range c.Databases {
		if db.Protect {
			out = append(out, db.Key)
		}
	}
	slices.Sort(out)
	return out
}

// PlanRetire is the plan of a lane the file no longer has (`central:` removed): every object
// with the deployment's mark goes after the nodes. A database the state records protected
// stops it, unless keepClaims keeps the databases (and their owners, with their static roles).
func (l *Lane) PlanRetire(ctx context.Context, keepClaims bool) (*Planned, error) {
	p, err := l.PlanDestroy(ctx, keepClaims)
	if pe, ok := err.(*ProtectedError); ok {
		pe.Removed = true
		return nil, pe
	}
	if err != nil {
		return nil, err
	}
	for i := range p.Changes {
		p.Changes[i].Reason = strings.TrimPrefix(p.Changes[i].Reason+"; ", "; ") + "the file has no central: any more"
	}
	for i, n := range p.Notes {
		p.Notes[i] = strings.Replace(n, "stays (--keep-claims)", "is no longer in the file and stays (--keep-claims)", 1)
	}
	return p, nil
}

// recordedProtect is the change that records a database's protect when the state says
// otherwise (a run before had it the other way): the database is marked again, and the
// state written before, so that the database's removal from the file is judged by it.
func (l *Lane) recordedProtect(db spec.CentralDatabase, p *Planned) {
	if slices.ContainsFunc(p.Changes, func(c plan.CentralChange) bool {
		return c.What == plan.CentralDatabase && c.Key == db.Key
	}) {
		return
	}
	was := l.recordedProtected(l.name(db.Key))
	if was == db.Protect {
		return
	}
	why := "protect recorded in the state (it was not)"
	if was {
		why = "protect lifted in the state (it was recorded)"
	}
	p.add(plan.CentralDatabase, db.Key, l.name(db.Key), plan.Update, why)
}

// recordedProtected reports whether the state records the database of that name protected.
func (l *Lane) recordedProtected(name string) bool {
	return l.Recorded != nil && slices.ContainsFunc(l.Recorded.Databases, func(db spec.CentralDatabase) bool {
		return db.Protect && l.name(db.Key) == name
	})
}
