package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The dev environment's PostgreSQL (dev up --central, issue 44): Debian's server package, a
// cluster initdb'd in <dir>/postgresql on a port of its own, listening where the secrets
// server does (the real node's bridge, so that pods reach it, and loopback), with an admin
// role whose password is only in a 0600 passfile. The secrets server's database engine is
// mounted at PostgresMount with the connection PostgresConnection to it, which any static
// role may use: the central lane makes its roles there.
//
// PostgreSQL refuses to run as root, and the dev directory is under root's home, which no
// other user can enter. So it runs in a user namespace of its own (unshare), as uid 1000
// there and the caller's user outside: it owns its files and needs no privilege.
const (
	PostgresMount      = "database"
	PostgresConnection = "postgresql"
	PostgresAdmin      = "slipway_admin"
	postgresProc       = "postgresql" // pids/postgresql, logs/postgresql.log
)

// postgresBin finds the newest server of Debian's postgresql package.
func postgresBin(name string) (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(dirs) == 0 {
		return "", fmt.Errorf("dev environment: PostgreSQL: no /usr/lib/postgresql/*/bin/%s: install Debian's postgresql package (.ci/install-deps does)", name)
	}
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	return dirs[0], nil
}

func versionOf(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// postgresPID is the PID of the running server of the cluster in dir.
func postgresPID(dir string) (int, bool) {
	pid, err := readPID(filepath.Join(dir, "pids", postgresProc))
	if err != nil || !alive(pid) {
		return 0, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return pid, err == nil && filepath.Base(exe) == "postgres"
}

// inNamespace runs a PostgreSQL program as uid 1000 of a user namespace of its own.
func inNamespace(bin string, args ...string) (string, []string) {
	return "unshare", append([]string{"--user", "--map-user=1000", "--map-group=1000", bin}, args...)
}

// ensurePostgres starts PostgreSQL unless it runs where it should, and configures the secrets
// server's database engine for it (again after a restart of that server, which forgets).
func (e *Env) ensurePostgres(ctx context.Context, progress io.Writer) error {
	if e.OpenBaoAddr == "" {
		return fmt.Errorf("dev environment: --central needs the secrets server (dev up --secrets --central)")
	}
	host := e.secretsHost()
	dir := filepath.Join(e.Dir, "postgresql")
	pid, running := postgresPID(e.Dir)
	if running && e.PostgresHost != host {
		stopPID(pid, 20*time.Second)
		running = false
	}
	if !running {
		start := time.Now()
		if err := e.startPostgres(ctx, dir, host); err != nil {
			return err
		}
		fmt.Fprintf(progress, "dev: PostgreSQL ready in %s at %s:%d\n", time.Since(start).Round(100*time.Millisecond), host, e.Ports[postgresProc])
	}
	if err := e.configureDatabaseEngine(ctx); err != nil {
		return err
	}
	fmt.Fprintf(progress, "dev: secrets server's database engine at %s/, connection %s to PostgreSQL\n", PostgresMount, PostgresConnection)
	return e.save()
}

func (e *Env) startPostgres(ctx context.Context, dir, host string) error {
	if e.Ports[postgresProc] == 0 {
		p, err := freePorts(1)
		if err != nil {
			return err
		}
		if e.Ports == nil {
			e.Ports = map[string]int{}
		}
		e.Ports[postgresProc] = p[0]
	}
	data := filepath.Join(dir, "data")
	pass := filepath.Join(dir, "admin-password")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		if err := initPostgres(ctx, dir, data, pass, e.hostShare().PodCIDR); err != nil {
			return err
		}
	}
	bin, err := postgresBin("postgres")
	if err != nil {
		return err
	}
	exe, args := inNamespace(bin, "-D", data, "-p", strconv.Itoa(e.Ports[postgresProc]), "-k", dir,
		"-c", "listen_addresses="+strings.Join(uniq("127.0.0.1", host), ","))
	path, err := exec.LookPath(exe)
	if err != nil {
		return fmt.Errorf("dev environment: PostgreSQL: %w", err)
	}
	if host == e.hostShare().Gateway {
		if err := e.ensureBridge(); err != nil {
			return err
		}
	}
	if _, err := e.startExec(postgresProc, path, args); err != nil {
		return err
	}
	e.PostgresHost, e.PostgresPassFile = host, filepath.Join(dir, "pgpass")
	b, err := os.ReadFile(pass)
	if err != nil {
		return err
	}
	// The passfile libpq and pgx read (PGPASSFILE): host:port:database:user:password.
	line := fmt.Sprintf("*:%d:*:%s:%s\n", e.Ports[postgresProc], PostgresAdmin, strings.TrimSpace(string(b)))
	if err := writeSecretFile(e.PostgresPassFile, line); err != nil {
		return err
	}
	// A listening server may still refuse sessions ("the database system is starting up"), and
	// the secrets server's verify_connection would then fail: ready is when pg_isready says it
	// accepts connections (it needs no password).
	isready, err := postgresBin("pg_isready")
	if err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, "PostgreSQL accepts connections", func() (bool, string) {
		if _, ok := postgresPID(e.Dir); !ok {
			return false, "not running; its log: " + logTail(filepath.Join(e.Dir, "logs", postgresProc+".log"), 5)
		}
		out, err := exec.CommandContext(ctx, isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(e.Ports[postgresProc]), "-t", "1").CombinedOutput()
		return err == nil, strings.TrimSpace(fmt.Sprint(err, " ", string(out)))
	})
}

// initPostgres makes the cluster: the admin role with a random password (scram-sha-256 for
// every TCP connection), and pods of the real node admitted beside loopback.
func initPostgres(ctx context.Context, dir, data, pass, podCIDR string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	if err := writeSecretFile(pass, hex.EncodeToString(b)); err != nil {
		return err
	}
	bin, err := postgresBin("initdb")
	if err != nil {
		return err
	}
	exe, args := inNamespace(bin, "-D", data, "-U", PostgresAdmin, "--auth=scram-sha-256", "--pwfile="+pass, "-E", "UTF8", "--no-locale")
	out, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dev environment: PostgreSQL: initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	f, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "host all all %s scram-sha-256\n", podCIDR)
	return err
}

// configureDatabaseEngine mounts the database engine (once) and writes its connection to the
// dev PostgreSQL as the admin, for every role name.
func (e *Env) configureDatabaseEngine(ctx context.Context) error {
	tok, err := os.ReadFile(e.OpenBaoTokenFile)
	if err != nil {
		return fmt.Errorf("dev environment: secrets server token: %w", err)
	}
	a := e.secretsClient()
	a.token = strings.TrimSpace(string(tok))
	var mounts map[string]any
	if err := a.call(ctx, http.MethodGet, "sys/mounts", nil, &mounts); err != nil {
		return err
	}
	if _, ok := mounts[PostgresMount+"/"]; !ok {
		if err := a.call(ctx, http.MethodPost, "sys/mounts/"+PostgresMount, map[string]any{
			"type": "database", "description": "slipway dev: database engine for the dev PostgreSQL"}, nil); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(filepath.Join(e.Dir, "postgresql", "admin-password"))
	if err != nil {
		return err
	}
	return a.call(ctx, http.MethodPost, PostgresMount+"/config/"+PostgresConnection, map[string]any{
		"plugin_name":    "postgresql-database-plugin",
		"connection_url": fmt.Sprintf("postgresql://{{username}}:{{password}}@127.0.0.1:%d/postgres?sslmode=disable", e.Ports[postgresProc]),
		"username":       PostgresAdmin, "password": strings.TrimSpace(string(b)),
		"allowed_roles": "*", "verify_connection": true,
	}, nil)
}

// postgresExports is the line of Exports for PostgreSQL: the admin URL without its password,
// which is in the passfile PGPASSFILE names, and the secrets server as the central lane
// reads it.
func (e *Env) postgresExports() string {
	if e.PostgresHost == "" {
		return ""
	}
	return fmt.Sprintf("export SLIPWAY_POSTGRESQL_URL=postgres://%s@%s/postgres?sslmode=disable PGPASSFILE=%s SLIPWAY_OPENBAO_ADDR=%s SLIPWAY_OPENBAO_CA_FILE=%s SLIPWAY_OPENBAO_TOKEN_FILE=%s\n",
		PostgresAdmin, net.JoinHostPort(e.PostgresHost, strconv.Itoa(e.Ports[postgresProc])), e.PostgresPassFile,
		e.OpenBaoAddr, e.OpenBaoCAFile, e.OpenBaoTokenFile)
}

// stopPostgres stops the PostgreSQL of the cluster in dir; it reports whether one ran. Its
// data goes with the directory.
func stopPostgres(dir string) bool {
	pid, ok := postgresPID(dir)
	_ = os.Remove(filepath.Join(dir, "pids", postgresProc))
	if !ok {
		return false
	}
	stopPID(pid, 20*time.Second)
	return true
}

func uniq(s ...string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
