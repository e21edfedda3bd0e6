package spec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"slipway.dev/slipway/internal/spec"
)

func TestParseCentral(t *testing.T) {
	g, err := spec.Parse("slipway.yaml", []byte(spireDoc(
		"central:",
		"  logins:",
		"    orders: {connectionLimit: 10, rotationPeriod: 1h}",
		"  databases:",
		"    orders: {owner: orders, extensions: [pgcrypto, citext, pgcrypto], protect: true}",
		"  kv:",
		"    api-key: {generate: {length: 20}}",
		"    smtp: {fromEnv: SMTP_PASSWORD}",
	)), root)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Central{DatabaseMount: "database", Connection: "postgresql", KVMount: "secret", Line: 6,
		Logins:    []spec.CentralLogin{{Key: "orders", ConnectionLimit: 10, Rotation: time.Hour, Line: 7}},
		Databases: []spec.CentralDatabase{{Key: "orders", Owner: "orders", Extensions: []string{"citext", "pgcrypto"}, Protect: true, Line: 9}},
		KV: []spec.CentralKV{{Key: "api-key", Length: 20, Alphabet: spec.DefaultCentralAlphabet, Line: 11},
			{Key: "smtp", Env: "SMTP_PASSWORD", Line: 12}},
	}
	if d := cmp.Diff(want, g.Central); d != "" {
		t.Errorf("central (-want +got):\n%s", d)
	}
}

func TestParseCentralInvalid(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"empty", []string{"central: {}"}, []string{`slipway.yaml:5: central: has no databases, logins, kv or s3: leave the section out`}},
		{"bad values", []string{
			"central:",
			"  logins:",
			"    Orders: {connectionLimit: 0, rotationPeriod: 1s}",
			"  databases:",
			"    orders: {owner: nobody}",
			"    other: {extensions: [x]}",
			"  kv:",
			"    a: {}",
			"    b: {generate: {length: 4, alphabet: aaa}, fromEnv: X}",
			"    c: {generate: {length: 4, alphabet: aaa}}",
			"    d: {value: hunter2}",
		}, []string{
			`slipway.yaml:7: central.logins.Orders: name "Orders" is not a DNS label (lowercase letters, digits and '-', starting with a letter)`,
			`slipway.yaml:7: central.logins.Orders.connectionLimit: 0 is not between 1 and 100000 (leave it out for no limit)`,
			`slipway.yaml:7: central.logins.Orders.rotationPeriod: 1s is not whole seconds of at least 5s`,
			`slipway.yaml:9: central.databases.orders.owner: "nobody" is not a login of central.logins`,
			`slipway.yaml:10: central.databases.other.owner: is required: the login that owns the database`,
			`slipway.yaml:12: central.kv.a: needs exactly one of generate, fromFile and fromEnv (a value is never written in the file)`,
			`slipway.yaml:13: central.kv.b: needs exactly one of generate, fromFile and fromEnv (a value is never written in the file)`,
			`slipway.yaml:14: central.kv.c.generate.alphabet: needs at least 2 distinct characters (and at most 256 bytes)`,
			`slipway.yaml:14: central.kv.c.generate.length: 4 is not between 8 and 4096`,
			`slipway.yaml:15: central.kv.d.value: unknown field "value"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Parse("slipway.yaml", []byte(spireDoc(tc.lines...)), root)
			var errs spec.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}
