package central

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	bao "github.com/openbao/openbao/api/v2"

	"slipway.dev/slipway/internal/openbao"
	"slipway.dev/slipway/internal/spec"
)

// Connect makes the lane's connections from the environment: the admin connection to
// PostgreSQL and the OpenBao client. A missing variable is an error naming it; no value is
// ever in an error (pgx's parse errors are replaced, since they may quote the string).
func Connect(ctx context.Context) (*PG, *Bao, error) {
	url := os.Getenv(spec.EnvCentralPostgreSQL)
	if url == "" {
		return nil, nil, fmt.Errorf("central: %s is not set: the admin connection to PostgreSQL (a postgres:// URL; PGPASSWORD may hold the password)", spec.EnvCentralPostgreSQL)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("central: %s is not a PostgreSQL connection string", spec.EnvCentralPostgreSQL)
	}
	addr := os.Getenv(spec.EnvCentralOpenBaoAddr)
	if addr == "" {
		return nil, nil, fmt.Errorf("central: %s is not set: the OpenBao server's address", spec.EnvCentralOpenBaoAddr)
	}
	token, err := openbao.TokenFromEnv()
	if err != nil {
		return nil, nil, fmt.Errorf("central: %w", err)
	}
	if token == "" {
		return nil, nil, fmt.Errorf("central: %w", openbao.ErrNoToken)
	}
	bc := bao.DefaultConfig()
	bc.Address, bc.Timeout, bc.MaxRetries = addr, 30*time.Second, 2
	tls := &bao.TLSConfig{}
	if f := os.Getenv(spec.EnvCentralOpenBaoCA); f != "" {
		tls.CACert = f
	}
	if err := bc.ConfigureTLS(tls); err != nil {
		return nil, nil, fmt.Errorf("central: OpenBao %s: CA (%s): %w", addr, spec.EnvCentralOpenBaoCA, err)
	}
	c, err := bao.NewClient(bc)
	if err != nil {
		return nil, nil, fmt.Errorf("central: OpenBao %s: %w", addr, err)
	}
	c.SetToken(token)
	pg := &PG{cfg: cfg}
	if pg.admin, err = pg.connect(ctx, ""); err != nil {
		return nil, nil, err
	}
	return pg, &Bao{c: c}, nil
}

// PG is the PostgreSQL server through pgx, as its admin.
type PG struct {
	cfg   *pgx.ConnConfig
	admin *pgx.Conn
	// Queries counts the statements and queries sent, Statements those of them that may
	// write (Exec), for the benchmark.
	Queries, Statements int
}

func (p *PG) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg := p.cfg.Copy()
	if db != "" {
		cfg.Database = db
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		// pgx's message names host, user and database, never the password.
		return nil, fmt.Errorf("central: PostgreSQL: %w", err)
	}
	return c, nil
}

// Close ends the admin connection.
func (p *PG) Close() {
	if p.admin != nil {
		_ = p.admin.Close(context.Background())
	}
}

// The plan's two catalog queries ($1 the names, $2 the mark); exported for the benchmark's
// peer, which runs the same reads with psql.
const (
	RolesQuery = `SELECT rolname, coalesce(shobj_description(oid, 'pg_authid'), ''), rolconnlimit, rolcanlogin,
		rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication OR rolbypassrls
		FROM pg_roles WHERE rolname = ANY($1) OR shobj_description(oid, 'pg_authid') = $2`
	DatabasesQuery = `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), ''), pg_get_userbyid(datdba)
		FROM pg_database WHERE datname = ANY($1) OR shobj_description(oid, 'pg_database') = $2`
)

func (p *PG) Roles(ctx context.Context, names []string, mark string) (map[string]Role, error) {
	p.Queries++
	rows, err := p.admin.Query(ctx, RolesQuery, names, mark)
	if err != nil {
		return nil, fmt.Errorf("central: PostgreSQL: roles: %w", err)
	}
	out := map[string]Role{}
	for rows.Next() {
		var n string
		var r Role
		var limit int32
		if err := rows.Scan(&n, &r.Comment, &limit, &r.Login, &r.Privileged); err != nil {
			return nil, fmt.Errorf("central: PostgreSQL: roles: %w", err)
		}
		r.ConnLimit = int(limit)
		out[n] = r
	}
	return out, rows.Err()
}

func (p *PG) Databases(ctx context.Context, names []string, mark string) (map[string]Database, error) {
	p.Queries++
	rows, err := p.admin.Query(ctx, DatabasesQuery, names, mark)
	if err != nil {
		return nil, fmt.Errorf("central: PostgreSQL: databases: %w", err)
	}
	out := map[string]Database{}
	for rows.Next() {
		var n string
		var d Database
		if err := rows.Scan(&n, &d.Comment, &d.Owner); err != nil {
			return nil, fmt.Errorf("central: PostgreSQL: databases: %w", err)
		}
		out[n] = d
	}
	return out, rows.Err()
}

func (p *PG) Extensions(ctx context.Context, db string) ([]string, error) {
	c, err := p.connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	p.Queries++
	rows, err := c.Query(ctx, `SELECT extname FROM pg_extension`)
	if err != nil {
		return nil, fmt.Errorf("central: PostgreSQL: extensions of %s: %w", db, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (p *PG) Exec(ctx context.Context, db string, tx bool, stmts ...string) error {
	c := p.admin
	if db != "" {
		var err error
		if c, err = p.connect(ctx, db); err != nil {
			return err
		}
		defer c.Close(context.WithoutCancel(ctx))
	}
	p.Queries += len(stmts)
	p.Statements += len(stmts)
	if !tx {
		for _, s := range stmts {
			if _, err := c.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	return pgx.BeginFunc(ctx, c, func(t pgx.Tx) error {
		for _, s := range stmts {
			if _, err := t.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// Bao is OpenBao through its client library.
type Bao struct {
	c *bao.Client
	// Reads and Writes count the requests, for the benchmark.
	Reads, Writes int
}

func (b *Bao) Read(ctx context.Context, path string) (map[string]any, error) {
	b.Reads++
	s, err := b.c.Logical().ReadWithContext(ctx, path)
	if err != nil {
		var re *bao.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("OpenBao: read %s: %w", path, openbao.Reason(err))
	}
	if s == nil {
		return nil, nil
	}
	return s.Data, nil
}

func (b *Bao) Write(ctx context.Context, path string, data map[string]any) error {
	b.Writes++
	if _, err := b.c.Logical().WriteWithContext(ctx, path, data); err != nil {
		return fmt.Errorf("OpenBao: write %s: %w", path, openbao.Reason(err))
	}
	return nil
}

func (b *Bao) Delete(ctx context.Context, path string) error {
	b.Writes++
	if _, err := b.c.Logical().DeleteWithContext(ctx, path); err != nil {
		return fmt.Errorf("OpenBao: delete %s: %w", path, openbao.Reason(err))
	}
	return nil
}

func (b *Bao) List(ctx context.Context, path string) ([]string, error) {
	b.Reads++
	s, err := b.c.Logical().ListWithContext(ctx, path)
	if err != nil {
		var re *bao.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("OpenBao: list %s: %w", path, openbao.Reason(err))
	}
	if s == nil {
		return nil, nil
	}
	raw, _ := s.Data["keys"].([]any)
	out := make([]string, 0, len(raw))
	for _, k := range raw {
		if str, ok := k.(string); ok {
			out = append(out, strings.TrimSpace(str))
		}
	}
	return out, nil
}
