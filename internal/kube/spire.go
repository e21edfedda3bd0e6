package kube

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// What the SPIRE lane reads and changes of the cluster (FR-015, FR-016): the kube-system
// UID, the kube nodes and agent pods, the token-review account's rights and its token.

// KubeSystemUID is the UID of the namespace kube-system: the cluster's identity.
func (c *Client) KubeSystemUID(ctx context.Context) (string, error) {
	ns, err := c.Clientset.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("namespace kube-system: %w", err)
	}
	return string(ns.UID), nil
}

// SchedulableNodes counts the kube nodes not cordoned.
func (c *Client) SchedulableNodes(ctx context.Context) (int, error) {
	list, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	n := 0
	for _, no := range list.Items {
		if !no.Spec.Unschedulable {
			n++
		}
	}
	return n, nil
}

// AgentPods are the agent pods (label slipway.dev/spire-agent=true, running or pending) of
// other namespaces: Others counts slipway's (their namespace carries slipway's
// managed-by label), Foreign names the rest, namespace/name, sorted.
type AgentPods struct {
	Others  int
	Foreign []string
}

// SpireAgentPods reads the agent pods of every namespace but except.
func (c *Client) SpireAgentPods(ctx context.Context, except string) (AgentPods, error) {
	var out AgentPods
	list, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: spec.LabelSpireAgent + "=true"})
	if err != nil {
		return out, fmt.Errorf("list agent pods: %w", err)
	}
	nss, err := c.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: spec.LabelManagedBy + "=" + spec.ManagedBy})
	if err != nil {
		return out, fmt.Errorf("list namespaces: %w", err)
	}
	ours := map[string]bool{}
	for _, ns := range nss.Items {
		ours[ns.Name] = true
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		switch {
		case !ours[p.Namespace]:
			out.Foreign = append(out.Foreign, p.Namespace+"/"+p.Name)
		case p.Namespace != except:
			out.Others++
		}
	}
	slices.Sort(out.Foreign)
	return out, nil
}

// SpireRBACName names the ClusterRole and ClusterRoleBinding of a deployment's token-review
// account (deployment is its identity, spec.Group.Name): cluster-wide, as tokenreviews and
// nodes are; one per deployment, so that a destroy removes only its own.
func SpireRBACName(deployment string) string { return "slipway:spire-server:" + deployment }

// RBACForeign is the state of a ClusterRole or binding of slipway's name that another
// made: slipway neither changes nor deletes it.
const RBACForeign = "foreign"

// spireRules are exactly what k8s_psat's token review needs: review a token, then read its
// pod and its node.
var spireRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get"}},
}

func spireRBAC(ns, group string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	name := SpireRBACName(group)
	labels := map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: group}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: spireRules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: spec.SpireServerAccount}},
	}
	return role, binding
}

// RBACState is how a live object stands against the one wanted: "" as wanted, else
// "missing", RBACForeign or what differs.
type RBACState struct{ Role, Binding string }

// SpireRBAC reads the token-review account's ClusterRole and ClusterRoleBinding.
func (c *Client) SpireRBAC(ctx context.Context, ns, group string) (RBACState, error) {
	want, wantB := spireRBAC(ns, group)
	var st RBACState
	r, err := c.Clientset.RbacV1().ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		st.Role = "missing"
	case err != nil:
		return st, fmt.Errorf("clusterrole %s: %w", want.Name, err)
	case !ownedBy(r.Labels, group):
		st.Role = RBACForeign
	case !reflect.DeepEqual(r.Rules, want.Rules):
		st.Role = "its rules differ"
	}
	b, err := c.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		st.Binding = "missing"
	case err != nil:
		return st, fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
	case !ownedBy(b.Labels, group):
		st.Binding = RBACForeign
	case b.RoleRef != wantB.RoleRef || !reflect.DeepEqual(b.Subjects, wantB.Subjects):
		st.Binding = "its role or subject differs"
	}
	return st, nil
}

// ApplySpireRBAC creates or sets the ClusterRole and ClusterRoleBinding of ns.
func (c *Client) ApplySpireRBAC(ctx context.Context, ns, group string) error {
	role, binding := spireRBAC(ns, group)
	roles, bindings := c.Clientset.RbacV1().ClusterRoles(), c.Clientset.RbacV1().ClusterRoleBindings()
	if live, err := roles.Get(ctx, role.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = roles.Create(ctx, role, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("clusterrole %s: create: %w", role.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("clusterrole %s: %w", role.Name, err)
	} else {
		live.Rules, live.Labels = role.Rules, role.Labels
		if _, err := roles.Update(ctx, live, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("clusterrole %s: update: %w", role.Name, err)
		}
	}
	live, err := bindings.Get(ctx, binding.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = bindings.Create(ctx, binding, metav1.CreateOptions{FieldManager: FieldManager})
	case err == nil && live.RoleRef != binding.RoleRef:
		// The role of a binding cannot change: it is made again.
		if err = bindings.Delete(ctx, binding.Name, metav1.DeleteOptions{}); err == nil {
			_, err = bindings.Create(ctx, binding, metav1.CreateOptions{FieldManager: FieldManager})
		}
	case err == nil:
		live.Subjects, live.Labels = binding.Subjects, binding.Labels
		_, err = bindings.Update(ctx, live, metav1.UpdateOptions{FieldManager: FieldManager})
	}
	if err != nil {
		return fmt.Errorf("clusterrolebinding %s: %w", binding.Name, err)
	}
	return nil
}

// ownedBy: the labels say slipway made the object for deployment.
func ownedBy(labels map[string]string, deployment string) bool {
	return labels[spec.LabelManagedBy] == spec.ManagedBy && labels[spec.LabelGroup] == deployment
}

// DeleteSpireRBAC deletes the deployment's ClusterRole and ClusterRoleBinding; gone ones
// are fine, and one that is not the deployment's (by its labels) stays.
func (c *Client) DeleteSpireRBAC(ctx context.Context, deployment string) error {
	name := SpireRBACName(deployment)
	bindings, roles := c.Clientset.RbacV1().ClusterRoleBindings(), c.Clientset.RbacV1().ClusterRoles()
	if b, err := bindings.Get(ctx, name, metav1.GetOptions{}); err == nil && ownedBy(b.Labels, deployment) {
		err = bindings.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &b.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clusterrolebinding %s: delete: %w", name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clusterrolebinding %s: %w", name, err)
	}
	if r, err := roles.Get(ctx, name, metav1.GetOptions{}); err == nil && ownedBy(r.Labels, deployment) {
		err = roles.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clusterrole %s: delete: %w", name, err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clusterrole %s: %w", name, err)
	}
	return nil
}

// AccountToken is a token of a service account, for the API server's audience. Token is
// secret: it goes to the spire node through a pipe and nowhere else.
type AccountToken struct {
	Token           string
	AccountUID      string
	Issued, Expires time.Time
}

// ServiceAccountToken asks the API server for a token of ns/name lasting about life (the
// server may cap it; Expires says what it gave).
func (c *Client) ServiceAccountToken(ctx context.Context, ns, name string, life time.Duration) (AccountToken, error) {
	sa, err := c.Clientset.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return AccountToken{}, fmt.Errorf("serviceaccount %s/%s: %w", ns, name, err)
	}
	secs := int64(life.Seconds())
	tr, err := c.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return AccountToken{}, fmt.Errorf("serviceaccount %s/%s: token request: %w", ns, name, err)
	}
	return AccountToken{Token: tr.Status.Token, AccountUID: string(sa.UID), Issued: time.Now().UTC().Truncate(time.Second),
		Expires: tr.Status.ExpirationTimestamp.UTC()}, nil
}

// APIServer is the API server's address and the PEM of the CA that verifies it, as this
// client reaches it.
func (c *Client) APIServer() (string, []byte, error) {
	ca := c.Config.CAData
	if len(ca) == 0 && c.Config.CAFile != "" {
		b, err := os.ReadFile(c.Config.CAFile)
		if err != nil {
			return "", nil, fmt.Errorf("cluster %s: CA file: %w", c.Config.Host, err)
		}
		ca = b
	}
	return c.Config.Host, ca, nil
}
