package spec

import (
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The decoders of a node's sections: image, probes, env, resources, firewall, roles.

func (d *decoder) node(n *yaml.Node, path, nodeName string, isDefaults bool) *Node {
	nd := &Node{
		Name:           nodeName,
		Init:           InitSystemd,
		RolloutTimeout: DefaultRolloutTimeout,
		State:          StateVolume{Size: resource.MustParse(DefaultStateSize)},
		Workload:       Workload{Placement: Placement{Spread: true}},
	}
	roleSets := map[*Role]roleSet{}
	m, ok := d.mapping(n, path, nodeFields)
	if !ok {
		return nd
	}
	if v := m["image"]; v != nil {
		nd.Image = d.image(v, path+".image", true)
	} else if !isDefaults {
		d.add(d.lineOf(path), path, "image is required (one of rootfs, archive or base)")
	}
	if v := m["init"]; v != nil {
		if s, ok := d.str(v, path+".init"); ok {
			if s != InitSystemd && s != InitNone {
				d.errAt(deref(v), path+".init", "%q is not systemd or none", s)
			} else {
				nd.Init = s
			}
		}
	}
	field(m, path, "readiness", &nd.Readiness, d.probe)
	// defaults' secrets are read for each node that takes them, not for defaults itself.
	d.podInputs(m, path, nodeName, &nd.PodInputs)
	field(m, path, "files", &nd.Files, d.files)
	field(m, path, "resources", &nd.Resources, d.resources)
	fieldOK(m, path, "rolloutTimeout", &nd.RolloutTimeout, d.duration)
	if v := m["state"]; v != nil {
		d.stateVolume(v, path+".state", &nd.State)
	}
	field(m, path, "firewall", &nd.Firewall, d.firewall)
	field(m, path, "publishedNames", &nd.PublishedNames, d.publishedNames)
	if v := m["secretsFrom"]; v != nil {
		nd.SecretsFrom = d.secretsFrom(v, path+".secretsFrom", nodeName)
	}
	if v := m["roles"]; v != nil {
		for _, e := range d.entries(v, path+".roles") {
			rp := path + ".roles." + e.key
			d.mark(rp, e.keyNode)
			if !isLabel(e.key, false) {
				d.errAt(e.keyNode, rp, "name %q is not a DNS label %s", e.key, labelRule)
			}
			r, set := d.role(e.val, rp, nodeName, e.key)
			roleSets[r] = set
			nd.Roles = append(nd.Roles, r)
		}
		slices.SortFunc(nd.Roles, func(a, b *Role) int { return strings.Compare(a.Name, b.Name) })
	}
	d.workload(m, path, &nd.Workload)
	d.nodeStop(m, path, nd)
	d.nodeApp(m, path, nd)
	for _, r := range nd.Roles {
		inherit(r, roleSets[r].workloadSet, nd)
		inheritInputs(r, roleSets[r].inputsSet, nd)
	}
	if nd.Image.Rootfs != "" && len(nd.Image.Command) == 0 {
		nd.Image.Command = []string{DefaultInitCommand}
	}
	return nd
}

func (d *decoder) image(n *yaml.Node, path string, required bool) Image {
	var img Image
	d.mark(path, deref(n))
	m, ok := d.mapping(n, path, imageFields)
	if !ok {
		return img
	}
	d.imageSource(n, m, path, required, &img)
	if v := m["add"]; v != nil {
		p := path + ".add"
		if items, ok := d.seq(v, p); ok {
			for i, it := range items {
				ip := index(p, i)
				am, ok := d.mapping(it, ip, addFields)
				if !ok {
					continue
				}
				img.Add = append(img.Add, d.addFile(it, am, ip))
			}
		}
		if m["base"] == nil {
			d.errAt(deref(v), p, "needs base: add puts files on top of a base image")
		}
	}
	if v := m["command"]; v != nil {
		p := path + ".command"
		if cmd, ok := d.strList(v, p); ok {
			if len(cmd) == 0 {
				d.errAt(deref(v), p, "must not be empty (leave it out for the image's own)")
			}
			img.Command = cmd
		}
	}
	if v := m["user"]; v != nil {
		if u, ok := d.text(v, path+".user"); ok {
			img.User = u // kept when refused: the service check then says nothing more
			if !validUser(u) {
				d.errAt(deref(v), path+".user", "%q is not a user: give `uid`, `uid:gid`, `name` or `name:group`", u)
			}
		}
	}
	return img
}

// imageSource reads the image's source, exactly one of rootfs, archive or base (none when it
// is not required), into img: each path checked to be there and of its kind, a base to parse
// as an image reference.
func (d *decoder) imageSource(n *yaml.Node, m map[string]*yaml.Node, path string, required bool, img *Image) {
	var sources []string
	for _, k := range []string{"rootfs", "archive", "base"} {
		if m[k] != nil {
			sources = append(sources, k)
		}
	}
	switch {
	case len(sources) == 0 && required:
		d.errAt(deref(n), path, "needs one of rootfs, archive or base")
	case len(sources) > 1:
		d.errAt(deref(n), path, "has %s; set exactly one of rootfs, archive or base", strings.Join(sources, " and "))
	}
	if v := m["rootfs"]; v != nil {
		if s, ok := d.str(v, path+".rootfs"); ok {
			if img.Rootfs, ok = d.groupPath(deref(v), path+".rootfs", s, "directory "); ok {
				if fi, err := os.Stat(img.Rootfs); err != nil {
					d.errAt(deref(v), path+".rootfs", "directory %s does not exist", shown(s))
				} else if !fi.IsDir() {
					d.errAt(deref(v), path+".rootfs", "%s is not a directory", shown(s))
				}
			}
		}
	}
	if v := m["archive"]; v != nil {
		if s, ok := d.str(v, path+".archive"); ok {
			if img.Archive, ok = d.groupPath(deref(v), path+".archive", s, "file "); ok {
				if fi, err := os.Stat(img.Archive); err != nil {
					d.errAt(deref(v), path+".archive", "file %s does not exist", shown(s))
				} else if fi.IsDir() {
					d.errAt(deref(v), path+".archive", "%s is a directory, not a tarball", shown(s))
				}
			}
		}
	}
	if v := m["base"]; v != nil {
		if s, ok := d.str(v, path+".base"); ok {
			// An image in slipway's own registry is checked with a stand-in for its host.
			ref := s
			if rest, own := strings.CutPrefix(s, RegistryPrefix); own {
				ref = "registry.invalid/" + rest
			}
			if _, err := name.ParseReference(ref); err != nil {
				d.errAt(deref(v), path+".base", "%q is not an image reference", s)
			}
			img.Base = s
		}
	}
}

func (d *decoder) probe(n *yaml.Node, path string) *Probe {
	pr, _ := d.probeOf(n, path, probeFields)
	return pr
}

// probeOf reads a check, exactly one of exec, http and tcp, from a mapping of the fields
// known, and returns the mapping for the caller's other fields.
func (d *decoder) probeOf(n *yaml.Node, path string, known *section) (*Probe, map[string]*yaml.Node) {
	m, ok := d.mapping(n, path, known)
	if !ok {
		return nil, nil
	}
	var kinds []string
	for _, k := range probeFields.names() {
		if m[k] != nil {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		if len(kinds) == 0 {
			d.lacks(deref(n), path, "", "needs one of exec, http or tcp")
		} else {
			d.errAt(deref(n), path, "has %s; set exactly one of exec, http or tcp", strings.Join(kinds, " and "))
		}
		return nil, nil
	}
	pr := &Probe{}
	switch kinds[0] {
	case "exec":
		cmd, ok := d.strList(m["exec"], path+".exec")
		if !ok {
			return nil, nil
		}
		if len(cmd) == 0 {
			d.errAt(deref(m["exec"]), path+".exec", "must not be empty")
			return nil, nil
		}
		pr.Exec = cmd
	case "http":
		hm, ok := d.mapping(m["http"], path+".http", httpFields)
		if !ok {
			return nil, nil
		}
		h := &HTTPProbe{Path: "/"}
		if v := hm["port"]; v != nil {
			if p, ok := d.portNumber(v, path+".http.port"); ok {
				h.Port = p
			}
		} else {
			d.lacks(deref(m["http"]), path+".http", "port", "is required")
		}
		if v := hm["path"]; v != nil {
			if s, ok := d.str(v, path+".http.path"); ok {
				if !strings.HasPrefix(s, "/") {
					d.errAt(deref(v), path+".http.path", "%q does not start with /", s)
				}
				h.Path = s
			}
		}
		pr.HTTP = h
	case "tcp":
		p, ok := d.portNumber(m["tcp"], path+".tcp")
		if !ok {
			return nil, nil
		}
		pr.TCP = p
	}
	return pr, m
}

// Environment names slipway sets itself (SPEC §5); a file may not set them.
var reservedEnv = []string{"container_uuid", "SLIPWAY_NODE", "SLIPWAY_ROLE"}

var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// env reads literal variables; with refs set, a value may also be a reference to a key of a
// Secret or ConfigMap (SPEC §3a), put in *refs.
func (d *decoder) env(n *yaml.Node, path string, refs *map[string]EnvRef) map[string]string {
	entries := d.entries(n, path)
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		p := join(path, e.key)
		d.mark(p, e.keyNode) // for a check across fields (a service role's environment)
		switch {
		case !envName.MatchString(e.key):
			d.errAt(e.keyNode, p, "%q is not an environment variable name (letters, digits, '_', '-' and '.', not starting with a digit)", e.key)
			continue
		case slices.Contains(reservedEnv, e.key):
			d.errAt(e.keyNode, p, "%s is set by slipway", e.key)
			continue
		}
		if refs != nil && deref(e.val) != nil && deref(e.val).Kind == yaml.MappingNode {
			if r, ok := d.envRef(e.val, p); ok {
				if *refs == nil {
					*refs = map[string]EnvRef{}
				}
				(*refs)[e.key] = r
			}
			continue
		}
		if v, ok := d.text(e.val, p); ok {
			out[e.key] = v
		}
	}
	return out
}

var hugepages = regexp.MustCompile(`^hugepages-[0-9]+[KMGT]i?$`)

func (d *decoder) resources(n *yaml.Node, path string) corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	m, ok := d.mapping(n, path, resourceFields)
	if !ok {
		return rr
	}
	list := func(v *yaml.Node, p string) corev1.ResourceList {
		entries := d.entries(v, p)
		out := make(corev1.ResourceList, len(entries))
		for _, e := range entries {
			ep := join(p, e.key)
			d.mark(ep, e.keyNode)
			switch e.key {
			case "cpu", "memory", "ephemeral-storage":
			default:
				if !hugepages.MatchString(e.key) && !strings.Contains(e.key, "/") {
					d.errAt(e.keyNode, ep, "unknown resource %q (cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified name)", e.key)
					continue
				}
			}
			if q, ok := d.quantity(e.val, ep); ok {
				out[corev1.ResourceName(e.key)] = q
			}
		}
		return out
	}
	field(m, path, "requests", &rr.Requests, list)
	field(m, path, "limits", &rr.Limits, list)
	return rr
}

func (d *decoder) firewall(n *yaml.Node, path string) Firewall {
	var f Firewall
	m, ok := d.mapping(n, path, firewallFields)
	if !ok {
		return f
	}
	ports := map[string]*[]Port{"served": &f.Served, "published": &f.Published, "admin": &f.Admin, "operator": &f.Operator}
	for k, dst := range ports {
		if v := m[k]; v != nil {
			*dst = d.portList(v, path+"."+k)
		}
	}
	cidrs := map[string]*[]string{"internalSources": &f.InternalSources, "adminSources": &f.AdminSources, "operatorSources": &f.OperatorSources}
	for k, dst := range cidrs {
		if v := m[k]; v != nil {
			*dst = d.cidrList(v, path+"."+k)
		}
	}
	if v := m["fromNamespaces"]; v != nil {
		f.FromNamespaces = d.peers(v, path+".fromNamespaces", fromNamespaceFields)
	}
	if v := m["egress"]; v != nil {
		f.Egress = d.peers(v, path+".egress", egressFields)
	}
	return f
}

// stateVolume reads a node's state: section (size, storageClass, version, protect) into st.
func (d *decoder) stateVolume(v *yaml.Node, path string, st *StateVolume) {
	sm, ok := d.mapping(v, path+"", stateFields)
	if ok {
		if sv := sm["size"]; sv != nil {
			if q, ok := d.quantity(sv, path+".size"); ok {
				if q.Sign() == 0 {
					d.errAt(deref(sv), path+".size", "size must be more than 0")
				} else {
					st.Size = q
				}
			}
		}
		if sv := sm["storageClass"]; sv != nil {
			if s, ok := d.str(sv, path+".storageClass"); ok {
				if !isSubdomain(s) {
					d.errAt(deref(sv), path+".storageClass", "%q is not a DNS subdomain (lowercase letters, digits, '-' and '.')", s)
				}
				st.StorageClass = s
			}
		}
		if sv := sm["version"]; sv != nil {
			if s, ok := d.text(sv, path+".version"); ok {
				if err := CheckStateVersion(s); err != nil {
					d.errAt(deref(sv), path+".version", "%v", err)
				} else {
					st.Version = s
				}
			}
		}
		if sv := sm["protect"]; sv != nil {
			if b, ok := d.boolean(sv, path+".protect"); ok {
				st.Protect = b
			}
		}
	}
}
