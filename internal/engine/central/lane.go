// Package central is the central lane (issue 44): a deployment's objects in the central
// services, planned, owned and destroyed like its Kubernetes objects. On PostgreSQL: login
// roles (never superusers) and databases; on OpenBao: a database engine static role per login
// (OpenBao sets and rotates the login's password, nobody else knows it) and KV v2 entries.
//
// Every object is named CentralName(identity, key) (spec) and carries the deployment's mark:
// `COMMENT ON ROLE/DATABASE` and the KV entry's custom metadata. An object of the same name
// without the mark is someone else's, and the plan stops. It reaches the servers only through
// the small interfaces below, so its decisions are tested against stand-ins and its e2e runs
// against the dev environment's PostgreSQL and secrets server. It never prints, stores or
// returns a password or a KV value: a change names the object and what changes.
package central

import (
	"context"
	"fmt"
	"slices"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Postgres is what the lane asks of the PostgreSQL server, as its admin.
type Postgres interface {
	// Roles returns the roles named in names or commented mark, by name.
	Roles(ctx context.Context, names []string, mark string) (map[string]Role, error)
	// Databases returns the databases named in names or commented mark, by name.
	Databases(ctx context.Context, names []string, mark string) (map[string]Database, error)
	// Extensions lists the extensions installed in database db.
	Extensions(ctx context.Context, db string) ([]string, error)
	// Exec runs the statements in database db ("" for the admin connection's), in one
	// transaction when tx.
	Exec(ctx context.Context, db string, tx bool, stmts ...string) error
}

// Role is a PostgreSQL role as the catalog says.
type Role struct {
	Comment   string
	ConnLimit int
	// Login and Privileged (superuser, createdb, createrole, replication, bypassrls).
	Login, Privileged bool
}

// Database is a PostgreSQL database as the catalog says.
type Database struct{ Comment, Owner string }

// OpenBao is what the lane asks of OpenBao: the logical API's paths.
type OpenBao interface {
	// Read returns the data at path, nil (no error) when there is none.
	Read(ctx context.Context, path string) (map[string]any, error)
	Write(ctx context.Context, path string, data map[string]any) error
	Delete(ctx context.Context, path string) error
	// List returns the keys under path, none when there is nothing.
	List(ctx context.Context, path string) ([]string, error)
}

// Lane is one deployment's central objects.
type Lane struct {
	// Central is what the file wants; a lane the file no longer has is built on the state's
	// record (Recorded), with no objects.
	Central *spec.Central
	// Recorded is the state's record of the lane (Recorded), nil when it has none: its
	// databases are those last applied with protect, which still stop their removal.
	Recorded *spec.Central
	Identity string // the deployment's identity (spec.Group.Name)
	PG       Postgres
	Bao      OpenBao
	// S3 is the S3 server (s3.go), nil when the file has no central.s3 and none is set.
	S3 S3
	// Value reads a KV entry's value from its file or variable (not for a generated one).
	Value func(k spec.CentralKV) (string, error)
	// Random makes a generated value.
	Random func(length int, alphabet string) (string, error)
}

// Planned is the lane's plan: its changes and what the operator should know.
type Planned struct {
	Changes []plan.CentralChange
	Notes   []string
}

// ConflictError is an object of a deployment's name that the deployment does not own.
type ConflictError struct {
	What, Name, Holder string
	// Why replaces "is marked <Holder>" for an object that carries no mark of its own (an
	// S3 user: s3.go).
	Why string
}

func (e *ConflictError) Error() string {
	holder := "has no slipway mark"
	switch {
	case e.Why != "":
		holder = e.Why
	case e.Holder != "":
		holder = "is marked " + e.Holder
	}
	return fmt.Sprintf("central: %s %s exists and is not this deployment's (it %s): someone else's object of the same name; slipway changes nothing until it is renamed or removed", e.What, e.Name, holder)
}

func (l *Lane) mark() string { return spec.CentralOwner(l.Identity) }

func (l *Lane) name(key string) string { return spec.CentralName(l.Identity, key) }

// Plan reads what exists and compares it with the file. keepClaims keeps the databases the
// file no longer has.
func (l *Lane) Plan(ctx context.Context, keepClaims bool) (*Planned, error) {
	c := l.Central
	var logins, dbs []string
	for _, lg := range c.Logins {
		logins = append(logins, l.name(lg.Key))
	}
	for _, db := range c.Databases {
		dbs = append(dbs, l.name(db.Key))
	}
	roles, err := l.PG.Roles(ctx, logins, l.mark())
	if err != nil {
		return nil, err
	}
	have, err := l.PG.Databases(ctx, dbs, l.mark())
	if err != nil {
		return nil, err
	}
	p := &Planned{}
	if err := l.planLogins(ctx, roles, p); err != nil {
		return nil, err
	}
	if err := l.planDatabases(ctx, have, roles, keepClaims, p); err != nil {
		return nil, err
	}
	if err := l.planKV(ctx, p); err != nil {
		return nil, err
	}
	if l.S3 != nil {
		if err := l.planS3(ctx, keepClaims, p); err != nil {
			return nil, err
		}
	}
	// Deletions of what the file dropped, in the order apply runs them: the static roles,
	// the databases, the logins, the entries.
	slices.SortStableFunc(p.Changes, func(a, b plan.CentralChange) int {
		if a.Action == plan.Delete && b.Action == plan.Delete {
			return deleteRank[a.What] - deleteRank[b.What]
		}
		return 0
	})
	return p, nil
}

var deleteRank = map[plan.CentralWhat]int{plan.CentralStaticRole: 0, plan.CentralDatabase: 1, plan.CentralLogin: 2, plan.CentralKV: 3,
	plan.CentralBucket: 4, plan.CentralKeyPair: 5}

func (l *Lane) planLogins(ctx context.Context, roles map[string]Role, p *Planned) error {
	c := l.Central
	for _, lg := range c.Logins {
		n := l.name(lg.Key)
		r, ok := roles[n]
		switch {
		case ok && r.Comment != l.mark():
			return &ConflictError{What: "login role", Name: n, Holder: r.Comment}
		case !ok:
			p.add(plan.CentralLogin, lg.Key, n, plan.Create, limitText(lg.ConnectionLimit))
		default:
			var why []string
			if r.ConnLimit != lg.ConnectionLimit {
				why = append(why, "connection limit "+limitText(r.ConnLimit)+" → "+limitText(lg.ConnectionLimit))
			}
			if r.Privileged || !r.Login {
				why = append(why, "back to LOGIN without superuser, createdb, createrole, replication or bypassrls")
			}
			if len(why) > 0 {
				p.add(plan.CentralLogin, lg.Key, n, plan.Update, join(why))
			}
		}
		if err := l.planStaticRole(ctx, lg, !ok, p); err != nil {
			return err
		}
	}
	for n, r := range roles {
		if r.Comment == l.mark() && !slices.ContainsFunc(c.Logins, func(lg spec.CentralLogin) bool { return l.name(lg.Key) == n }) {
			p.add(plan.CentralStaticRole, "", n, plan.Delete, "its login is no longer in the file")
			p.add(plan.CentralLogin, "", n, plan.Delete, "no longer in the file")
		}
	}
	return nil
}

// planStaticRole compares the login's static role; a login made anew gets it made again, so
// that OpenBao sets the new role's password.
func (l *Lane) planStaticRole(ctx context.Context, lg spec.CentralLogin, newLogin bool, p *Planned) error {
	n := l.name(lg.Key)
	sr, err := l.Bao.Read(ctx, l.staticRolePath(n))
	if err != nil {
		return err
	}
	want := int(lg.Rotation.Seconds())
	switch {
	case sr == nil:
		p.add(plan.CentralStaticRole, lg.Key, n, plan.Create, "rotation every "+lg.Rotation.String())
	case str(sr["username"]) != n || str(sr["db_name"]) != l.Central.Connection:
		return &ConflictError{What: "OpenBao static role", Name: l.Central.DatabaseMount + "/static-roles/" + n,
			Holder: fmt.Sprintf("for user %q on connection %q", str(sr["username"]), str(sr["db_name"]))}
	case newLogin:
		// OpenBao sets the password only when it creates a static role (an update of one
		// keeps the old password, which the new login does not have): delete, then create.
		p.add(plan.CentralStaticRole, lg.Key, n, plan.Replace, "made again for its new login, which OpenBao gives a password")
	case seconds(sr["rotation_period"]) != want:
		p.add(plan.CentralStaticRole, lg.Key, n, plan.Update, fmt.Sprintf("rotation every %ds → %ds", seconds(sr["rotation_period"]), want))
	}
	return nil
}

func (l *Lane) staticRolePath(name string) string {
	return l.Central.DatabaseMount + "/static-roles/" + name
}

func (l *Lane) planDatabases(ctx context.Context, have map[string]Database, roles map[string]Role, keepClaims bool, p *Planned) error {
	for _, db := range l.Central.Databases {
		n, owner := l.name(db.Key), l.name(db.Owner)
		d, ok := have[n]
		switch {
		// A database slipway made and a run stopped before its comment: owned by this
		// deployment's login, which cannot create databases, so it is this deployment's.
		case ok && d.Comment == "" && roles[d.Owner].Comment == l.mark():
			p.add(plan.CentralDatabase, db.Key, n, plan.Update, "its mark is written (a run stopped before)")
		case ok && d.Comment != l.mark():
			return &ConflictError{What: "database", Name: n, Holder: d.Comment}
		case !ok:
			p.add(plan.CentralDatabase, db.Key, n, plan.Create, "owner "+owner)
		case d.Owner != owner:
			p.add(plan.CentralDatabase, db.Key, n, plan.Update, "owner "+d.Owner+" → "+owner)
		}
		if ok {
			l.recordedProtect(db, p)
		}
		if len(db.Extensions) == 0 {
			continue
		}
		var exts []string
		if ok {
			var err error
			if exts, err = l.PG.Extensions(ctx, n); err != nil {
				return err
			}
		}
		for _, x := range db.Extensions {
			if !slices.Contains(exts, x) {
				p.add(plan.CentralExtension, db.Key, n+"/"+x, plan.Create, "")
			}
		}
	}
	var protected []string
	for n, d := range have {
		if d.Comment != l.mark() || slices.ContainsFunc(l.Central.Databases, func(db spec.CentralDatabase) bool { return l.name(db.Key) == n }) {
			continue
		}
		if keepClaims {
			p.Notes = append(p.Notes, fmt.Sprintf("central: database %s is no longer in the file and stays (--keep-claims), with its owner %s", n, d.Owner))
			p.Changes = slices.DeleteFunc(p.Changes, func(c plan.CentralChange) bool { return c.Action == plan.Delete && c.Name == d.Owner })
			continue
		}
		if l.recordedProtected(n) {
			protected = append(protected, n)
			continue
		}
		p.add(plan.CentralDatabase, "", n, plan.Delete, "no longer in the file: its data is lost")
	}
	if len(protected) > 0 {
		slices.Sort(protected)
		return &ProtectedError{Databases: protected, Removed: true}
	}
	return nil
}

func (p *Planned) add(w plan.CentralWhat, key, name string, a plan.Action, reason string) {
	p.Changes = append(p.Changes, plan.CentralChange{What: w, Key: key, Name: name, Action: a, Reason: reason})
}

func limitText(n int) string {
	if n < 0 {
		return "no connection limit"
	}
	return fmt.Sprintf("connection limit %d", n)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// seconds reads a duration OpenBao returns as a number of seconds (a JSON number).
func seconds(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	case int64:
		return int(x)
	case interface{ Int64() (int64, error) }:
		n, _ := x.Int64()
		return int(n)
	}
	return -1
}
