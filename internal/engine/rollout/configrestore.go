package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/status"
)

// The node's config as it was before apply-objects changed it, for a rollback to put back;
// in memory only. Changed: this run's apply-objects step changed some of the node's
// ConfigMaps or Secrets (else the config is as an earlier run left it).
var (
	prevConfigKey    = lane.NewKey[[]*unstructured.Unstructured]("the node's config before apply-objects")
	configChangedKey = lane.NewKey[bool]("whether apply-objects changed the node's config")
)

// A rollback puts back what the pod reads (issue 35 item 4). A node's ConfigMaps and Secrets
// <node>-<name> are updated in place before its rollout: set back alone, the previous
// template would start on the new content while its config hash names the old, and a file
// reverted afterwards would change the ConfigMap only, the pod still running the bad value
// under a plan that says `No changes.`. So the content a node's apply-objects step is about
// to change is read first, kept in this run's memory (a Secret's values never reach the
// state or any output), and applied again before the template is set back.

// applyNodeObjects runs an apply-objects step, first keeping the node's ConfigMaps and
// Secrets that it changes as they are.
func (l *Lane) applyNodeObjects(ctx context.Context, nr *lane.NodeRun, st plan.Step) error {
	if nr.Node != nil {
		prev, err := l.keepConfig(ctx, nr, st.Objects)
		if err != nil {
			return err
		}
		lane.Set(&nr.Slots, prevConfigKey, prev)
		lane.Set(&nr.Slots, configChangedKey, slices.ContainsFunc(st.Objects, func(k plan.Key) bool { return k.Kind == "ConfigMap" || k.Kind == "Secret" }))
	}
	return l.applyObjects(ctx, nr, st)
}

// keepConfig reads the ConfigMaps and Secrets among keys that the plan updates or replaces,
// whole, as the cluster holds them now.
func (l *Lane) keepConfig(ctx context.Context, nr *lane.NodeRun, keys []plan.Key) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, k := range keys {
		c := nr.Change(k)
		if c == nil || k.Kind != "ConfigMap" && k.Kind != "Secret" || c.Action != plan.Update && c.Action != plan.Replace {
			continue
		}
		live, err := l.o.Kube.Get(context.WithoutCancel(ctx), k)
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading it before it changes, for a rollback to put it back: %w", k.Kind, k.Name, err)
		}
		if live != nil {
			out = append(out, applyable(live))
		}
	}
	return out, nil
}

// applyable is the part of a ConfigMap or Secret read from the cluster that slipway applies:
// what it held, without the server's fields.
func applyable(live *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(live.GetAPIVersion())
	u.SetKind(live.GetKind())
	u.SetName(live.GetName())
	u.SetNamespace(live.GetNamespace())
	u.SetLabels(live.GetLabels())
	u.SetAnnotations(live.GetAnnotations())
	for _, f := range []string{"data", "binaryData", "stringData", "type", "immutable"} {
		if v, ok := live.Object[f]; ok {
			u.Object[f] = v
		}
	}
	return u
}

// withConfigRestored is rollback preceded by putting back the config the node's apply-objects
// step changed, so that the pod of the template set back starts on what it read before. A
// config that cannot be put back is said, and the template is set back all the same: a node
// on its last ready template is better than one left on a template that failed.
//
// Config this run did not put back (changed by a run that was killed before its rollout
// ended, or not put back here) stays as the failed template read it: the template set back
// then carries the failed template's config hash (failedHash), so that it names what its pod
// reads and a file that goes back to the old config rolls the pod out again, rather than a
// plan saying `No changes.` while the pod runs on the content it failed with.
func (l *Lane) withConfigRestored(ctx context.Context, nr *lane.NodeRun, failedHash string, rollback lane.SetBack) lane.SetBack {
	prev, changed := lane.Get(&nr.Slots, prevConfigKey), lane.Get(&nr.Slots, configChangedKey)
	node := nodeName(nr)
	return func(tmpl *appsv1.Deployment) (status.Result, string, error) {
		if all := l.putBack(ctx, node, prev); !all || !changed {
			tmpl = namingConfig(tmpl, failedHash)
		}
		return rollback(tmpl)
	}
}

// nodeName is the name of nr's node ("" for the group's own steps).
func nodeName(nr *lane.NodeRun) string {
	if nr.Node == nil {
		return ""
	}
	return nr.Node.Name
}

// namingConfig is tmpl with its pod template's config hash set to hash when it names other
// config ("" keeps it).
func namingConfig(tmpl *appsv1.Deployment, hash string) *appsv1.Deployment {
	if hash == "" || tmpl.Spec.Template.Annotations[spec.AnnotationConfigHash] == hash {
		return tmpl
	}
	out := tmpl.DeepCopy()
	if out.Spec.Template.Annotations == nil {
		out.Spec.Template.Annotations = map[string]string{}
	}
	out.Spec.Template.Annotations[spec.AnnotationConfigHash] = hash
	return out
}

// putBack applies prev again and reports whether all of it was put back.
func (l *Lane) putBack(ctx context.Context, node string, prev []*unstructured.Unstructured) bool {
	var names, failed []string
	var errs []error
	for _, u := range prev {
		name := u.GetKind() + " " + u.GetName()
		if _, err := l.o.Kube.Apply(context.WithoutCancel(ctx), u, kube.ApplyOptions{Force: true}); err != nil {
			failed, errs = append(failed, name), append(errs, err)
			continue
		}
		names = append(names, name)
	}
	if len(names) > 0 {
		l.env.Emit(event.Event{Node: node, Phase: event.PhaseRollback, Message: "put back " + strings.Join(names, ", ") + " as the template set back read them"})
	}
	if len(errs) > 0 {
		slices.Sort(failed)
		l.env.Emit(event.Event{Node: node, Phase: event.PhaseRollback, Message: fmt.Sprintf("could not put back %s (%v): the template set back reads their new content, and its config hash says so", strings.Join(failed, ", "), errors.Join(errs...))})
	}
	return len(errs) == 0
}

// podConfigHash is the config hash of a Deployment's pod template; "" without one.
func podConfigHash(d *unstructured.Unstructured) string {
	if d == nil {
		return ""
	}
	h, _, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", spec.AnnotationConfigHash)
	return h
}
