package devcluster

import (
	"strings"
	"testing"
)

// TestPostgresExports: dev env names the admin connection and the passfile, never the
// password, and nothing without --central.
func TestPostgresExports(t *testing.T) {
	if got := (&Env{}).postgresExports(); got != "" {
		t.Errorf("exports without PostgreSQL: %q", got)
	}
	e := &Env{PostgresHost: BridgeGateway, PostgresPassFile: "/d/postgresql/pgpass", Ports: map[string]int{postgresProc: 5999},
		OpenBaoAddr: "https://" + BridgeGateway + ":8200", OpenBaoCAFile: "/d/openbao/ca.crt", OpenBaoTokenFile: "/d/openbao/root-token"}
	got := e.postgresExports()
	for _, want := range []string{
		"SLIPWAY_POSTGRESQL_URL=postgres://" + PostgresAdmin + "@" + BridgeGateway + ":5999/postgres?sslmode=disable",
		"PGPASSFILE=/d/postgresql/pgpass", "SLIPWAY_OPENBAO_TOKEN_FILE=/d/openbao/root-token",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("exports %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "password=") || strings.Contains(got, ":@") {
		t.Errorf("exports carry a password: %q", got)
	}
}

func TestPostgresVersionOrder(t *testing.T) {
	if versionOf("/usr/lib/postgresql/15/bin/postgres") != 15 || versionOf("/usr/lib/postgresql/x/bin/postgres") != 0 {
		t.Error("versionOf")
	}
	bin, err := postgresBin("postgres")
	if err != nil {
		t.Fatalf("Debian's postgresql package (.ci/packages) is not installed: %v", err)
	}
	if !strings.HasSuffix(bin, "/bin/postgres") {
		t.Errorf("postgresBin = %s", bin)
	}
}
