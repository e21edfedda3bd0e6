package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults and environment of `central:`, a deployment's objects in the central services:
// databases and login roles on PostgreSQL, the OpenBao database engine's static roles that
// hold and rotate the login roles' passwords, and entries in OpenBao's KV (issue 44).
const (
	DefaultCentralDatabaseMount = "database"
	DefaultCentralConnection    = "postgresql"
	DefaultCentralKVMount       = "secret"
	DefaultCentralRotation      = 24 * time.Hour
	DefaultCentralLength        = 32
	// DefaultCentralAlphabet is what a generated KV value is made of unless the file says.
	DefaultCentralAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// CentralKVField is the one field of a KV entry's secret.
	CentralKVField = "value"

	// The servers are the environment's, never the file's: the admin connection to
	// PostgreSQL (a libpq URL or key=value string; PGPASSWORD and the other PG* variables
	// fill what it leaves out) and OpenBao's address and CA; its token is openbao.EnvToken's.
	EnvCentralPostgreSQL  = "SLIPWAY_POSTGRESQL_URL"
	EnvCentralOpenBaoAddr = "SLIPWAY_OPENBAO_ADDR"
	EnvCentralOpenBaoCA   = "SLIPWAY_OPENBAO_CA_FILE"

	minCentralRotation = 5 * time.Second // OpenBao's own floor for a static role
	maxCentralName     = 63              // PostgreSQL's NAMEDATALEN - 1
	centralHashChars   = 12
	maxCentralLength   = 4096
)

// Central is the group file's `central:` section.
type Central struct {
	DatabaseMount string // the OpenBao database engine's mount
	Connection    string // the engine's connection to the PostgreSQL server
	KVMount       string // the KV v2 mount of the entries
	Databases     []CentralDatabase
	Logins        []CentralLogin
	KV            []CentralKV
	S3            *CentralS3 // buckets and key pairs (centrals3.go), nil without central.s3
	Line          int
}

// CentralDatabase is a database the deployment owns, owned in PostgreSQL by one of its logins.
type CentralDatabase struct {
	Key        string // the file's name of it; its PostgreSQL name is CentralName(identity, Key)
	Owner      string // the key of a login
	Extensions []string
	Protect    bool // destroy refuses to drop it
	Line       int
}

// CentralLogin is a login role (never a superuser) and its OpenBao static role of the same name.
type CentralLogin struct {
	Key             string
	ConnectionLimit int // -1: no limit
	Rotation        time.Duration
	Line            int
}

// CentralKV is a KV entry: a random value made once, or a value from a file or variable.
type CentralKV struct {
	Key      string
	Length   int    // generated: the length; 0 with File or Env
	Alphabet string // generated: the characters it is made of
	File     string // absolute, in the group directory
	Env      string // an environment variable of slipway's
	Line     int
}

// Generated reports whether slipway makes the entry's value (once).
func (k CentralKV) Generated() bool { return k.File == "" && k.Env == "" }

// CentralName is the name of a deployment's central object in PostgreSQL and OpenBao:
// `<identity>.<key>`. The identity's dots separate its parts and a key has none, so two
// deployments never share a name. PostgreSQL cuts names at 63 bytes, so a longer one is its
// first 50 bytes, '_' and 12 hex digits of the SHA-256 of the whole: no identity or key holds
// a '_', so a shortened name never equals a whole one.
func CentralName(identity, key string) string {
	n := identity + "." + key
	if len(n) <= maxCentralName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxCentralName-1-centralHashChars] + "_" + hex.EncodeToString(sum[:])[:centralHashChars]
}

// CentralKVPath is where a deployment's KV entry lives in the KV mount.
func CentralKVPath(identity, key string) string { return "slipway/" + identity + "/" + key }

// CentralOwner is the ownership mark on a deployment's objects: the comment on its database
// and role, and the custom metadata value on its KV entries.
func CentralOwner(identity string) string { return "slipway.dev/deployment=" + identity }

// CentralMetaKey is the KV custom metadata key that names the deployment.
const CentralMetaKey = "slipway.dev/deployment"

// Login returns the login called key, or nil.
func (c *Central) Login(key string) *CentralLogin {
	for i := range c.Logins {
		if c.Logins[i].Key == key {
			return &c.Logins[i]
		}
	}
	return nil
}

// Entry returns the KV entry called key, or nil.
func (c *Central) Entry(key string) *CentralKV {
	for i := range c.KV {
		if c.KV[i].Key == key {
			return &c.KV[i]
		}
	}
	return nil
}

// central decodes `central:`.
func (d *decoder) central(n *yaml.Node) *Central {
	const p = "central"
	m, ok := d.mapping(n, p, centralFields)
	if !ok {
		return nil
	}
	c := &Central{DatabaseMount: DefaultCentralDatabaseMount, Connection: DefaultCentralConnection,
		KVMount: DefaultCentralKVMount, Line: deref(n).Line}
	if v := m["openbao"]; v != nil {
		om, _ := d.mapping(v, p+".openbao", centralOpenBaoFields)
		for _, f := range []struct {
			key string
			dst *string
		}{{"databaseMount", &c.DatabaseMount}, {"connection", &c.Connection}, {"kvMount", &c.KVMount}} {
			if x := om[f.key]; x != nil {
				if s, ok := d.str(x, p+".openbao."+f.key); ok {
					if s == "" || strings.ContainsAny(s, "/ \t\n") {
						d.errAt(deref(x), p+".openbao."+f.key, "%q is not a name (empty, or with '/' or blanks)", s)
						continue
					}
					*f.dst = s
				}
			}
		}
	}
	for _, e := range d.entries(m["logins"], p+".logins") {
		c.Logins = append(c.Logins, d.centralLogin(e, p+".logins."+e.key))
	}
	for _, e := range d.entries(m["databases"], p+".databases") {
		c.Databases = append(c.Databases, d.centralDatabase(e, p+".databases."+e.key, c))
	}
	for _, e := range d.entries(m["kv"], p+".kv") {
		c.KV = append(c.KV, d.centralKV(e, p+".kv."+e.key))
	}
	if v := m["s3"]; v != nil {
		c.S3 = d.centralS3(v, p+".s3")
	}
	if len(c.Databases)+len(c.Logins)+len(c.KV) == 0 && c.S3 == nil {
		d.add(c.Line, p, "has no databases, logins, kv or s3: leave the section out")
	}
	return c
}

// centralKey checks the name the file gives an object: a DNS label, so it has no dot.
func (d *decoder) centralKey(e entry, p string) {
	d.mark(p, e.keyNode)
	if !isLabel(e.key, true) {
		d.errAt(e.keyNode, p, "name %q is not a DNS label (lowercase letters, digits and '-', starting with a letter)", e.key)
	}
}

func (d *decoder) centralLogin(e entry, p string) CentralLogin {
	d.centralKey(e, p)
	l := CentralLogin{Key: e.key, ConnectionLimit: -1, Rotation: DefaultCentralRotation, Line: e.keyNode.Line}
	m, ok := d.mapping(e.val, p, centralLoginFields)
	if !ok {
		return l
	}
	if x := m["connectionLimit"]; x != nil {
		if v, ok := d.int(x, p+".connectionLimit"); ok {
			if v < 1 || v > 100000 {
				d.errAt(deref(x), p+".connectionLimit", "%d is not between 1 and 100000 (leave it out for no limit)", v)
			} else {
				l.ConnectionLimit = int(v)
			}
		}
	}
	if x := m["rotationPeriod"]; x != nil {
		if v, ok := d.duration(x, p+".rotationPeriod"); ok {
			if v < minCentralRotation || v%time.Second != 0 {
				d.errAt(deref(x), p+".rotationPeriod", "%s is not whole seconds of at least %s", v, minCentralRotation)
			} else {
				l.Rotation = v
			}
		}
	}
	return l
}

func (d *decoder) centralDatabase(e entry, p string, c *Central) CentralDatabase {
	d.centralKey(e, p)
	db := CentralDatabase{Key: e.key, Line: e.keyNode.Line}
	m, ok := d.mapping(e.val, p, centralDatabaseFields)
	if !ok {
		return db
	}
	if x := m["owner"]; x != nil {
		if s, ok := d.str(x, p+".owner"); ok {
			db.Owner = s
			if c.Login(s) == nil {
				d.errAt(deref(x), p+".owner", "%q is not a login of central.logins", s)
			}
		}
	} else {
		d.lacks(deref(e.val), p, "owner", "is required: the login that owns the database")
	}
	if x := m["extensions"]; x != nil {
		if l, ok := d.strList(x, p+".extensions"); ok {
			for _, s := range l {
				if !isLabel(strings.ReplaceAll(s, "_", "-"), true) {
					d.errAt(deref(x), p+".extensions", "%q is not an extension name (lowercase letters, digits, '-' and '_')", s)
				}
			}
			slices.Sort(l)
			db.Extensions = slices.Compact(l)
		}
	}
	if x := m["protect"]; x != nil {
		db.Protect, _ = d.boolean(x, p+".protect")
	}
	return db
}

func (d *decoder) centralKV(e entry, p string) CentralKV {
	d.centralKey(e, p)
	k := CentralKV{Key: e.key, Line: e.keyNode.Line}
	m, ok := d.mapping(e.val, p, centralKVFields)
	if !ok {
		return k
	}
	set := 0
	for _, f := range []string{"generate", "fromFile", "fromEnv"} {
		if m[f] != nil {
			set++
		}
	}
	if set != 1 {
		d.lacks(deref(e.val), p, "", "needs exactly one of generate, fromFile and fromEnv (a value is never written in the file)")
		return k
	}
	switch {
	case m["fromFile"] != nil:
		if s, ok := d.str(m["fromFile"], p+".fromFile"); ok {
			k.File, _ = d.groupPath(deref(m["fromFile"]), p+".fromFile", s, "file ")
		}
	case m["fromEnv"] != nil:
		if s, ok := d.str(m["fromEnv"], p+".fromEnv"); ok {
			if !envName.MatchString(s) {
				d.errAt(deref(m["fromEnv"]), p+".fromEnv", "%q is not a variable name", s)
			}
			k.Env = s
		}
	default:
		k.Length, k.Alphabet = DefaultCentralLength, DefaultCentralAlphabet
		gm, _ := d.mapping(m["generate"], p+".generate", centralGenerateFields)
		if x := gm["length"]; x != nil {
			if v, ok := d.int(x, p+".generate.length"); ok {
				if v < 8 || v > maxCentralLength {
					d.errAt(deref(x), p+".generate.length", "%d is not between 8 and %d", v, maxCentralLength)
				} else {
					k.Length = int(v)
				}
			}
		}
		if x := gm["alphabet"]; x != nil {
			if s, ok := d.str(x, p+".generate.alphabet"); ok {
				if distinct(s) < 2 || len(s) > 256 {
					d.errAt(deref(x), p+".generate.alphabet", "needs at least 2 distinct characters (and at most 256 bytes)")
				} else {
					k.Alphabet = s
				}
			}
		}
	}
	return k
}

// distinct counts the distinct characters of s.
func distinct(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// validateCentral checks the sidecar secrets that name a login, a KV entry or a key pair against the
// group's central section.
func (d *decoder) validateCentral(g *Group) {
	for _, n := range g.Nodes {
		for _, r := range n.Roles {
			for _, s := range r.SidecarSecrets {
				p := "nodes." + n.Name + ".roles." + r.Name + ".sidecarSecrets." + s.File
				switch {
				case s.Login != "" && (g.Central == nil || g.Central.Login(s.Login) == nil):
					d.add(s.Line, p+".login", "%q is not a login of central.logins", s.Login)
				case s.Entry != "" && (g.Central == nil || g.Central.Entry(s.Entry) == nil):
					d.add(s.Line, p+".entry", "%q is not an entry of central.kv", s.Entry)
				case s.S3KeyPair != "" && (g.Central == nil || g.Central.S3 == nil || g.Central.S3.KeyPair(s.S3KeyPair) == nil):
					d.add(s.Line, p+".s3KeyPair", "%q is not a key pair of central.s3.keyPairs", s.S3KeyPair)
				}
			}
		}
	}
}
