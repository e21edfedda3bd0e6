package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/spec"
)

// PreflightError is a reason to stop before anything is pushed or changed.
type PreflightError = lane.PreflightError

// Preflight checks what must hold before any push (SPEC §6): the cluster answers, the
// RuntimeClass exists when the group names one, the namespace is not another group's.
func (e *Engine) Preflight(ctx context.Context, t Target) error {
	return e.preflight(ctx, t, func() (*unstructured.Unstructured, error) { return e.o.Kube.Namespace(ctx, t.Namespace) })
}

// preflight is Preflight with the namespace's read, which a plan shares with its listLive.
func (e *Engine) preflight(ctx context.Context, t Target, readNamespace func() (*unstructured.Unstructured, error)) error {
	if spec.IsSystemNamespace(t.Namespace) {
		return &PreflightError{Msg: fmt.Sprintf("namespace %s is a system namespace (default and kube-* are the cluster's own): slipway never deploys into it; name another with the file's namespace, -n or K8S_NAMESPACE", t.Namespace)}
	}
	if _, err := e.o.Kube.Ping(ctx); err != nil {
		return err
	}
	if rc := t.Group.RuntimeClassName; rc != "" {
		ok, err := e.o.Kube.RuntimeClassExists(ctx, rc)
		if err != nil {
			return err
		}
		if !ok {
			where := t.Group.File
			if t.Group.RuntimeClassLine > 0 {
				where = fmt.Sprintf("%s:%d", where, t.Group.RuntimeClassLine)
			}
			return &PreflightError{Msg: fmt.Sprintf("group %s: runtimeClassName: RuntimeClass %q does not exist in the cluster (%s)", t.Group.Name, rc, where)}
		}
	}
	live, err := readNamespace()
	if err != nil {
		return err
	}
	return namespaceOwner(live, t.Group, t.Namespace)
}

func (e *Engine) checkOwner(ctx context.Context, t Target) error {
	live, err := t.relabelledNamespace(func() (*unstructured.Unstructured, error) { return e.o.Kube.Namespace(ctx, t.Namespace) })()
	if err != nil {
		return err
	}
	return namespaceOwner(live, t.Group, t.Namespace)
}

// namespaceOwner refuses the live namespace ns (nil: not there) when another deployment owns
// it, naming it; the key an earlier release gave this deployment is named as such.
func namespaceOwner(live *unstructured.Unstructured, g *spec.Group, ns string) error {
	if live == nil {
		return nil
	}
	if owner := live.GetLabels()[spec.LabelGroup]; owner != "" && owner != g.Name {
		return &PreflightError{Msg: fmt.Sprintf("namespace %s belongs to group %s, not %s: slipway will not touch it%s", ns, owner, g.Name, legacyNote(g, owner))}
	}
	return nil
}

// legacyNote explains a foreign key that is the one an earlier release gave this deployment
// (a per-app target's `<group>-<app>`): it may be this deployment's, or a group of that name's.
func legacyNote(g *spec.Group, owner string) string {
	id := g.Ident()
	if owner != id.LegacyKey() || owner == g.Name {
		return ""
	}
	return fmt.Sprintf(" (%s is the key releases before deployment identities gave %s, and also a group's name: slipway adopts its state and objects only when the state under that key was written for this target, and found none that was; if they are this deployment's, rename its state and relabel its namespace and objects to %s, docs/state.md#states-of-an-earlier-release)", owner, id, g.Name)
}
