package central

import (
	"context"
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Apply makes the changes, in the plan's order: logins, static roles, databases, extensions,
// entries; deletions as Plan ordered them.
func (l *Lane) Apply(ctx context.Context, cs []plan.CentralChange) error {
	for _, w := range plan.CentralOrder {
		for _, c := range cs {
			if c.What != w || c.Action == plan.Delete {
				continue
			}
			if err := l.apply(ctx, c); err != nil {
				return fmt.Errorf("central: %s %s: %w", c.What, c.Name, err)
			}
		}
	}
	for _, c := range cs {
		if c.Action != plan.Delete {
			continue
		}
		if err := l.remove(ctx, c); err != nil {
			return fmt.Errorf("central: delete %s %s: %w", c.What, c.Name, err)
		}
	}
	return nil
}

func (l *Lane) apply(ctx context.Context, c plan.CentralChange) error {
	switch c.What {
	case plan.CentralLogin:
		lg := l.Central.Login(c.Key)
		if lg == nil {
			return fmt.Errorf("login %s is not in the file", c.Key)
		}
		attrs := fmt.Sprintf("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT %d", lg.ConnectionLimit)
		first := "ALTER ROLE " + ident(c.Name) + " " + attrs
		if c.Action == plan.Create {
			first = "CREATE ROLE " + ident(c.Name) + " " + attrs
		}
		// One transaction: a role is never left without its mark.
		return l.PG.Exec(ctx, "", true, first, "COMMENT ON ROLE "+ident(c.Name)+" IS "+literal(l.mark()))
	case plan.CentralStaticRole:
		lg := l.Central.Login(c.Key)
		if lg == nil {
			return fmt.Errorf("login %s is not in the file", c.Key)
		}
		if c.Action == plan.Replace {
			if err := l.Bao.Delete(ctx, l.staticRolePath(c.Name)); err != nil {
				return err
			}
		}
		return l.Bao.Write(ctx, l.staticRolePath(c.Name), map[string]any{
			"db_name": l.Central.Connection, "username": c.Name, "rotation_period": int(lg.Rotation.Seconds())})
	case plan.CentralDatabase:
		db := l.database(c.Key)
		if db == nil {
			return fmt.Errorf("database %s is not in the file", c.Key)
		}
		owner := ident(l.name(db.Owner))
		if c.Action == plan.Create {
			// CREATE DATABASE runs outside a transaction; a stop before the comment is
			// recognised by its owner (Plan).
			if err := l.PG.Exec(ctx, "", false, "CREATE DATABASE "+ident(c.Name)+" OWNER "+owner); err != nil {
				return err
			}
		}
		return l.PG.Exec(ctx, "", true, "ALTER DATABASE "+ident(c.Name)+" OWNER TO "+owner,
			"COMMENT ON DATABASE "+ident(c.Name)+" IS "+literal(l.mark()),
			"REVOKE CONNECT, TEMPORARY ON DATABASE "+ident(c.Name)+" FROM PUBLIC")
	case plan.CentralExtension:
		db, ext, _ := strings.Cut(c.Name, "/")
		return l.PG.Exec(ctx, db, false, "CREATE EXTENSION IF NOT EXISTS "+ident(ext))
	case plan.CentralKV:
		return l.applyKV(ctx, c)
	case plan.CentralKeyPair, plan.CentralBucket:
		return l.applyS3(ctx, c)
	}
	return fmt.Errorf("unknown change %q", c.What)
}

// remove deletes one object, after reading its mark again: what the plan judged this
// deployment's may have been replaced since.
func (l *Lane) remove(ctx context.Context, c plan.CentralChange) error {
	switch c.What {
	case plan.CentralStaticRole:
		sr, err := l.Bao.Read(ctx, l.staticRolePath(c.Name))
		if err != nil || sr == nil {
			return err
		}
		if str(sr["username"]) != c.Name {
			return &ConflictError{What: "OpenBao static role", Name: c.Name, Holder: "for user " + str(sr["username"])}
		}
		return l.Bao.Delete(ctx, l.staticRolePath(c.Name))
	case plan.CentralDatabase:
		// A saved plan is a file anyone may edit: a protected database is never dropped.
		if l.protected(c.Name) {
			return &ProtectedError{Databases: []string{c.Name}}
		}
		have, err := l.PG.Databases(ctx, []string{c.Name}, l.mark())
		if err != nil {
			return err
		}
		d, ok := have[c.Name]
		if !ok {
			return nil
		}
		if d.Comment != l.mark() {
			return &ConflictError{What: "database", Name: c.Name, Holder: d.Comment}
		}
		return l.PG.Exec(ctx, "", false, "DROP DATABASE IF EXISTS "+ident(c.Name)+" WITH (FORCE)")
	case plan.CentralLogin:
		roles, err := l.PG.Roles(ctx, []string{c.Name}, l.mark())
		if err != nil {
			return err
		}
		r, ok := roles[c.Name]
		if !ok {
			return nil
		}
		if r.Comment != l.mark() {
			return &ConflictError{What: "login role", Name: c.Name, Holder: r.Comment}
		}
		return l.PG.Exec(ctx, "", false, "DROP ROLE IF EXISTS "+ident(c.Name))
	case plan.CentralKV:
		path := strings.TrimPrefix(c.Name, l.Central.KVMount+"/")
		meta, err := l.Bao.Read(ctx, l.metaPath(path))
		if err != nil || meta == nil {
			return err
		}
		if ownerOf(meta) != l.Identity {
			return &ConflictError{What: "KV entry", Name: c.Name, Holder: markText(ownerOf(meta))}
		}
		return l.Bao.Delete(ctx, l.metaPath(path))
	case plan.CentralKeyPair, plan.CentralBucket:
		return l.removeS3(ctx, c)
	}
	return fmt.Errorf("unknown change %q", c.What)
}

func (l *Lane) database(key string) *spec.CentralDatabase {
	for i := range l.Central.Databases {
		if l.Central.Databases[i].Key == key {
			return &l.Central.Databases[i]
		}
	}
	return nil
}

// ident quotes a PostgreSQL identifier: a name with dots (an identity) is one name, not a
// qualified one.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// literal quotes a string constant.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
