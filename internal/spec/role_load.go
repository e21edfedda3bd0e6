package spec

import (
	"math"

	"go.yaml.in/yaml/v3"
)

// roleSet records which fields a role wrote, so that it takes the node's for the others.
type roleSet struct {
	workloadSet
	inputsSet
}

func (d *decoder) role(n *yaml.Node, path, nodeName, roleName string) (*Role, roleSet) {
	r := &Role{Name: roleName, Replicas: DefaultRoleReplicas, Workload: Workload{Placement: Placement{Spread: true}}}
	m, ok := d.mapping(n, path, roleFields)
	if !ok {
		return r, roleSet{}
	}
	if v := m["replicas"]; v != nil {
		if x, ok := d.int(v, path+".replicas"); ok {
			switch {
			case x < 0:
				d.errAt(deref(v), path+".replicas", "replicas %d is negative", x)
			case x > math.MaxInt32:
				d.errAt(deref(v), path+".replicas", "replicas %d is too many", x)
			default:
				r.Replicas = int32(x)
			}
		}
	}
	field(m, path, "ports", &r.Ports, d.portList)
	if v := m["metrics"]; v != nil {
		if p, ok := d.port(v, path+".metrics"); ok {
			r.Metrics = &p
		}
	}
	if v := m["serviceMonitor"]; v != nil {
		if b, ok := d.boolean(v, path+".serviceMonitor"); ok {
			if b && m["metrics"] == nil {
				d.errAt(deref(v), path+".serviceMonitor", "needs metrics: a ServiceMonitor scrapes the metrics Service")
			}
			r.ServiceMonitor = b
		}
	}
	if v := m["service"]; v != nil {
		sp := path + ".service"
		sm, ok := d.mapping(v, sp, serviceFields)
		if ok {
			s := &Service{}
			if iv := sm["image"]; iv != nil {
				s.Image = d.image(iv, sp+".image", true)
				if problem, what := serviceImageUser(s.Image); problem != "" {
					d.errAt(deref(iv), sp+".image", "the service would run as root, which its locked-down container refuses (runAsNonRoot): %s: %s; set user to a number other than 0 (e.g. `user: 65532`)", what, problem)
				}
			} else {
				d.lacks(deref(v), sp, "image", "is required")
			}
			if ev := sm["environment"]; ev != nil {
				s.Environment = d.env(ev, sp+".environment", nil)
			}
			r.Service = s
		}
	}
	if v := m["sidecarSecrets"]; v != nil {
		d.mark(path+".sidecarSecrets", deref(v))
		r.SidecarSecrets = d.sidecarSecrets(v, path+".sidecarSecrets")
	}
	if v := m["companion"]; v != nil {
		d.mark(path+".companion", deref(v))
		r.Companion, _ = d.boolean(v, path+".companion")
	}
	owner := "" // in defaults:, read per node
	if nodeName != "" {
		owner = RoleObjectName(nodeName, roleName)
	}
	return r, roleSet{d.workload(m, path, &r.Workload), d.podInputs(m, path, owner, &r.PodInputs)}
}

// labelRule and nodeLabelRule explain a refused name. A node name starts with a letter because
// it names a Service, and Service names are RFC 1035 labels.
const (
	labelRule     = "(lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
	nodeLabelRule = "(lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters)"
)
