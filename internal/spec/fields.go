package spec

import (
	"slices"
	"strings"
)

// The fields of the file's mappings, as one tree from the top of the file. The loader checks
// each mapping against its section (anything else is an unknown field) and Fields walks the
// same tree, so the reference in docs/group-file.md is tested against what the loader accepts.
var (
	groupFields = extensible(fields(
		leaf("group"), leaf("namespace"), leaf("sharedNamespace"), leaf("runtimeClassName"),
		// defaults holds node fields; they are documented once, under nodes.<node>.
		same("defaults", nodeFields),
		each("nodes", "<node>", nodeFields),
		sub("publish", publishFields),
		sub("spire", spireFields),
		sub("central", centralFields),
	))
	// A deployment's objects in the central services (issue 44).
	centralFields = fields(
		sub("openbao", centralOpenBaoFields),
		each("databases", "<database>", centralDatabaseFields),
		each("logins", "<login>", centralLoginFields),
		each("kv", "<entry>", centralKVFields),
		sub("s3", centralS3Fields),
	)
	centralS3Fields = fields(
		each("keyPairs", "<keyPair>", centralKeyPairFields),
		each("buckets", "<bucket>", centralBucketFields),
	)
	centralKeyPairFields  = fields()
	centralBucketFields   = fields(leaf("owner"), leaf("protect"))
	centralOpenBaoFields  = fields(leaf("databaseMount"), leaf("connection"), leaf("kvMount"))
	centralDatabaseFields = fields(leaf("owner"), leaf("extensions"), leaf("protect"))
	centralLoginFields    = fields(leaf("connectionLimit"), leaf("rotationPeriod"))
	centralKVFields       = fields(sub("generate", centralGenerateFields), leaf("fromFile"), leaf("fromEnv"))
	centralGenerateFields = fields(leaf("length"), leaf("alphabet"))
	spireFields           = fields(
		leaf("server"), leaf("trustDomain"), leaf("ssh"), leaf("hostKey"), leaf("configDir"), leaf("pidFile"),
		leaf("tokenPath"),
	)
	publishFields = fields(
		leaf("zone"), leaf("gateway"), leaf("addressTimeout"), leaf("ttl"),
		sub("dns", publishDNSFields), sub("mail", publishMailFields),
	)
	publishDNSFields  = fields(leaf("server"), leaf("key"), leaf("algorithm"))
	publishMailFields = fields(leaf("relay"), leaf("spf"), leaf("dmarc"))
	nodeFields        = fields(
		leaf("app"), sub("image", imageFields), leaf("init"), sub("readiness", probeFields), leaf("env"),
		sub("resources", resourceFields), leaf("rolloutTimeout"), sub("state", stateFields),
		sub("firewall", firewallFields), leaf("publishedNames"), each("roles", "<role>", roleFields),
		leaf("labels"), leaf("annotations"), leaf("serviceAnnotations"), sub("placement", placementFields),
		sub("disruption", disruptionFields), sub("probes", probesFields),
		leaf("stopGracePeriod"), leaf("preStopSleep"), leaf("tmpSize"),
		list("files", fileFields), each("config", "<name>", configFields), each("secrets", "<name>", secretFields),
		sub("secretsFrom", secretsFromFields),
	)
	// The server a node's secrets sidecars read from (FR-004e).
	secretsFromFields = fields(sub("openbao", openbaoFields))
	openbaoFields     = fields(
		leaf("address"), leaf("caFile"), leaf("caFetchUrl"), leaf("caSha256"), leaf("authMount"), leaf("role"),
		leaf("audience"), leaf("pollInterval"),
	)
	imageFields    = fields(leaf("rootfs"), leaf("archive"), leaf("base"), list("add", addFields), leaf("command"), leaf("user"))
	addFields      = fields(leaf("src"), leaf("dst"))
	probeFields    = fields(leaf("exec"), sub("http", httpFields), leaf("tcp"))
	httpFields     = fields(leaf("port"), leaf("path"))
	resourceFields = fields(leaf("requests"), leaf("limits"))
	stateFields    = fields(leaf("size"), leaf("storageClass"), leaf("version"), leaf("protect"))
	firewallFields = fields(
		leaf("served"), leaf("published"), leaf("admin"), leaf("operator"),
		leaf("internalSources"), leaf("adminSources"), leaf("operatorSources"),
		list("fromNamespaces", fromNamespaceFields), list("egress", egressFields),
	)
	// Peers beyond the namespace: pods of other namespaces; for egress, CIDRs too.
	fromNamespaceFields = fields(leaf("namespace"), leaf("pods"), leaf("ports"))
	egressFields        = fields(leaf("cidr"), leaf("namespace"), leaf("pods"), leaf("ports"))

	roleFields = fields(
		leaf("replicas"), leaf("ports"), leaf("metrics"), leaf("serviceMonitor"), sub("service", serviceFields),
		// A role's own workload fields; without them it takes the node's (SPEC §3a).
		leaf("labels"), leaf("annotations"), same("placement", placementFields),
		same("disruption", disruptionFields), same("probes", probesFields),
		// Its own env, config and secrets; its references name the node's too.
		leaf("env"), same("config", configFields), same("secrets", secretFields),
		// A service role's secrets sidecar and companion (FR-004e, FR-004g).
		each("sidecarSecrets", "<file>", sidecarSecretFields), leaf("companion"),
	)
	sidecarSecretFields = fields(
		leaf("mount"), leaf("path"), leaf("key"), leaf("template"), leaf("encoding"), leaf("variable"), leaf("restart"),
		leaf("login"), leaf("entry"), leaf("s3KeyPair"),
	)
	serviceFields = fields(same("image", imageFields), leaf("environment"))

	placementFields  = fields(leaf("nodeSelector"), list("tolerations", tolerationFields), leaf("affinity"), leaf("spread"))
	tolerationFields = fields(leaf("key"), leaf("operator"), leaf("value"), leaf("effect"), leaf("tolerationSeconds"))
	disruptionFields = fields(leaf("maxUnavailable"), leaf("minAvailable"))
	// A startup probe has the liveness probe's fields; they are documented once, under liveness.
	probesFields = fields(sub("liveness", checkProbeFields), same("startup", checkProbeFields))
	fileFields   = fields(leaf("path"), leaf("secret"), leaf("config"))
	configFields = fields(leaf("files"))
	secretFields = fields(leaf("fromEnv"), leaf("fromFile"))
	// An env value may be a reference instead of a literal; documented under env.
	envRefFields     = &section{keys: []key{leaf("secret"), leaf("config"), leaf("key")}}
	checkProbeFields = fields(leaf("exec"), sub("http", httpFields), leaf("tcp"), leaf("period"), leaf("failures"))
)

// section is the fields of one kind of mapping.
type section struct {
	keys []key
	// extensions: a key starting with "x-" is the file's own, ignored whatever its value, as
	// in a Compose file, so that a block can be anchored once and merged where it is used.
	extensions bool
}

// extensionPrefix starts the keys a section with extensions ignores.
const extensionPrefix = "x-"

func extensible(s *section) *section {
	s.extensions = true
	return s
}

// ignores reports whether s ignores the key name (an extension).
func (s *section) ignores(name string) bool {
	return s.extensions && strings.HasPrefix(name, extensionPrefix)
}

// key is one field. sub, when set, is the section of its value: the value itself (a mapping),
// each value of a mapping of names the file chooses (each: the placeholder, e.g. <node>), or
// each item of a list (list). A key marked same shares a section documented at another path.
type key struct {
	name string
	sub  *section
	each string
	list bool
	same bool
}

// allSections holds every section made, so a test can check that Fields reaches each one.
var allSections []*section

func fields(keys ...key) *section {
	s := &section{keys: keys}
	allSections = append(allSections, s)
	return s
}

func leaf(name string) key             { return key{name: name} }
func sub(name string, s *section) key  { return key{name: name, sub: s} }
func same(name string, s *section) key { return key{name: name, sub: s, same: true} }
func each(name, placeholder string, s *section) key {
	return key{name: name, sub: s, each: placeholder}
}
func list(name string, s *section) key { return key{name: name, sub: s, list: true} }

// has reports whether name is a field of s.
func (s *section) has(name string) bool {
	return slices.ContainsFunc(s.keys, func(k key) bool { return k.name == name })
}

// names are the fields of s in the order they are documented.
func (s *section) names() []string {
	out := make([]string, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.name
	}
	return out
}

// Fields lists every field the loader accepts, as a path from the top of the file: a name the
// file chooses is a placeholder (nodes.<node>.image.rootfs), a list item is [] (add[].src). The
// fields of `defaults` are the node's and are listed once, under nodes.<node>; likewise a
// service's image, under nodes.<node>.image.
func Fields() []string {
	var out []string
	var walk func(prefix string, s *section)
	walk = func(prefix string, s *section) {
		for _, k := range s.keys {
			p := join(prefix, k.name)
			out = append(out, p)
			switch {
			case k.sub == nil || k.same:
			case k.each != "":
				out = append(out, p+"."+k.each)
				walk(p+"."+k.each, k.sub)
			case k.list:
				walk(p+"[]", k.sub)
			default:
				walk(p, k.sub)
			}
		}
	}
	walk("", groupFields)
	return out
}
