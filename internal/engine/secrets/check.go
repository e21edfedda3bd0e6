package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"slipway.dev/slipway/internal/openbao"
	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/spec"
)

// Server is what plan asks a node's secrets server (FR-004e): whether it answers, and
// how a kubernetes auth role binds. Never a secret: slipway reads no value. *openbao.Client
// satisfies it; the engine's tests give a stand-in.
type Server interface {
	Health(ctx context.Context) error
	// KubernetesRole is nil when the server has no such role; openbao.ErrNoToken without a
	// token to read it with, openbao.ErrForbidden when the token may not.
	KubernetesRole(ctx context.Context, mount, role string) (*openbao.Role, error)
}

var _ Server = (*openbao.Client)(nil)

// secretsAskTimeout bounds each question plan asks a secrets server: a server that does not
// answer from here (the sidecar reaches it from the pod) is a note, not a wait.
const secretsAskTimeout = 5 * time.Second

// newSecretsServer is a client of s with the token of the environment (openbao.EnvToken).
func newSecretsServer(ctx context.Context, s *spec.SecretsServer) (Server, error) {
	token, err := openbao.TokenFromEnv()
	if err != nil {
		return nil, err
	}
	ca := s.CAPEM
	if s.CAFetchURL != "" {
		b, err := openbao.FetchCA(ctx, s.CAFetchURL, s.CASHA256)
		if err != nil {
			return nil, err
		}
		ca = string(b)
	}
	return openbao.New(s.Address, ca, token, secretsAskTimeout)
}

// roleUse is one node whose sidecars log in as a role of a server.
type roleUse struct {
	node string
	srv  *spec.SecretsServer
}

// checkSecretsServers checks, for every node with sidecar secrets, what plan can know without
// a value: the server answers, and (given a token in the environment) its role exists and binds
// the node's ServiceAccount in ns with the audience. A role that is missing or binds otherwise
// is an error with the `bao write` an operator needs; what plan cannot check (no answer, no
// token, a token refused) is a note.
func (l *Lane) checkSecretsServers(ctx context.Context, g *spec.Group, ns string) ([]string, error) {
	byServer := map[string][]roleUse{} // address → its nodes, in the group's order
	var addrs []string
	for _, n := range g.Nodes {
		if n.SecretsFrom == nil || !slices.ContainsFunc(n.Roles, func(r *spec.Role) bool { return len(r.SidecarSecrets) > 0 }) {
			continue
		}
		a := n.SecretsFrom.Address
		if byServer[a] == nil {
			addrs = append(addrs, a)
		}
		srv := *n.SecretsFrom
		srv.Role = g.SecretsRole(n.Name, n.SecretsFrom)
		byServer[a] = append(byServer[a], roleUse{n.Name, &srv})
	}
	notes := make([][]string, len(addrs))
	errs := make([][]error, len(addrs))
	parallel.ForEach(l.o.Parallelism, parallel.Indexes(len(addrs)), func(i int) {
		notes[i], errs[i] = l.checkSecretsServer(ctx, g, ns, byServer[addrs[i]])
	})
	return slices.Concat(notes...), errors.Join(slices.Concat(errs...)...)
}

// checkSecretsServer checks one server and the roles its nodes log in as.
func (l *Lane) checkSecretsServer(ctx context.Context, g *spec.Group, ns string, uses []roleUse) ([]string, []error) {
	first := uses[0].srv
	newSrv := l.o.Connect
	if newSrv == nil {
		newSrv = newSecretsServer
	}
	nodes := make([]string, len(uses))
	for i, u := range uses {
		nodes[i] = u.node
	}
	who := fmt.Sprintf("secrets server %s (node %s, %s:%d)", first.Address, strings.Join(nodes, ", "), g.File, first.Line)
	var notes []string
	if note := unpinnedCANote(ctx, who, first); note != "" {
		notes = append(notes, note)
	}
	srv, err := newSrv(ctx, first)
	var pinErr *openbao.CAPinError
	switch {
	case errors.As(err, &pinErr):
		// The sidecars would refuse this CA too: their rollout could only fail.
		return notes, []error{fmt.Errorf("%s: %w", who, err)}
	case err != nil:
		return append(notes, fmt.Sprintf("%s: plan cannot check it: %v", who, err)), nil
	}
	if err := srv.Health(ctx); err != nil {
		return append(notes, fmt.Sprintf("%s: does not answer from here (%v): plan cannot check its roles; the sidecars reach it from their pods", who, err)), nil
	}
	var errs []error
	var roleNotes []string
	var mu sync.Mutex
	parallel.ForEach(l.o.Parallelism, uses, func(u roleUse) {
		note, err := checkSecretsRole(ctx, srv, g, ns, u)
		mu.Lock()
		defer mu.Unlock()
		if note != "" {
			roleNotes = append(roleNotes, note)
		}
		if err != nil {
			errs = append(errs, err)
		}
	})
	switch {
	case len(roleNotes) > 1 && allMarked(roleNotes, noTokenMark):
		// One line for the server, not one per node.
		roleNotes = []string{fmt.Sprintf("%s: answers; set %s or %s to a token that may read auth/<authMount>/role/<role> for plan to check its roles", who, openbao.EnvToken, openbao.EnvTokenFile)}
	case len(roleNotes) > 1 && allMarked(roleNotes, withheldMark):
		roleNotes = []string{fmt.Sprintf("%s: answers; %s: its roles are not checked (give an https:// address)", who, tokenWithheld())}
	}
	notes = append(notes, roleNotes...)
	slices.Sort(notes)
	return notes, errs
}

const (
	noTokenMark  = "for plan to check it"
	withheldMark = "over plain http:// except to a loopback address"
)

func allMarked(notes []string, mark string) bool {
	return !slices.ContainsFunc(notes, func(n string) bool { return !strings.Contains(n, mark) })
}

// tokenWithheld says that plan kept the token of the environment to itself.
func tokenWithheld() string {
	return fmt.Sprintf("plan does not send the token of %s %s", tokenVar(), withheldMark)
}

// unpinnedCANote is plan's note on a CA fetched over plain http:// without a caSha256: whoever
// is on the path decides what plan and every sidecar trust. It gives the digest of the CA plan
// fetched, for the operator to check and pin.
func unpinnedCANote(ctx context.Context, who string, s *spec.SecretsServer) string {
	if s.CAFetchURL == "" || s.CASHA256 != "" || !openbao.PlainHTTP(s.CAFetchURL) {
		return ""
	}
	got := "fetch it to learn its digest"
	if b, err := openbao.FetchCA(ctx, s.CAFetchURL, ""); err == nil {
		got = "the CA fetched now has caSha256 " + openbao.CADigest(b) + ": check it, then pin it"
	}
	return fmt.Sprintf("%s: its CA comes over plain http:// from %s with no caSha256 pin: anyone on the path can give plan and the sidecars another CA (%s)", who, s.CAFetchURL, got)
}

// checkSecretsRole checks the role node u logs in as: a note when plan cannot, an error when
// the role is missing or binds otherwise.
func checkSecretsRole(ctx context.Context, srv Server, g *spec.Group, ns string, u roleUse) (string, error) {
	s := u.srv
	who := fmt.Sprintf("node %s: secretsFrom.openbao (%s:%d)", u.node, g.File, s.Line)
	path := "auth/" + s.AuthMount + "/role/" + s.Role
	role, err := srv.KubernetesRole(ctx, s.AuthMount, s.Role)
	switch {
	case errors.Is(err, openbao.ErrTokenWithheld):
		return fmt.Sprintf("%s: server %s answers; %s: %s is not checked (give an https:// address)", who, s.Address, tokenWithheld(), path), nil
	case errors.Is(err, openbao.ErrNoToken):
		return fmt.Sprintf("%s: server %s answers; set %s or %s to a token that may read %s %s", who, s.Address, openbao.EnvToken, openbao.EnvTokenFile, path, noTokenMark), nil
	case errors.Is(err, openbao.ErrForbidden):
		return fmt.Sprintf("%s: the token of %s may not read %s (permission denied): plan cannot check the role", who, tokenVar(), path), nil
	case err != nil:
		return fmt.Sprintf("%s: plan cannot check the role: %v", who, err), nil
	case role == nil:
		return "", fmt.Errorf("%s: server %s has no role %s at auth/%s: an operator must write it (and its policy):\n    %s", who, s.Address, s.Role, s.AuthMount, baoWriteRole(u, ns))
	}
	sa := spec.ServiceAccountName(u.node)
	var wrong []string
	if !slices.Contains(role.ServiceAccounts, sa) && !slices.Contains(role.ServiceAccounts, "*") {
		wrong = append(wrong, fmt.Sprintf("binds service accounts %s, not %s", listOrNone(role.ServiceAccounts), sa))
	}
	if !slices.Contains(role.Namespaces, ns) && !slices.Contains(role.Namespaces, "*") && role.NamespaceSelector == "" {
		wrong = append(wrong, fmt.Sprintf("binds namespaces %s, not %s", listOrNone(role.Namespaces), ns))
	}
	if role.Audience != s.Audience {
		wrong = append(wrong, fmt.Sprintf("has audience %q, not %q", role.Audience, s.Audience))
	}
	if len(wrong) > 0 {
		return "", fmt.Errorf("%s: role %s of server %s %s: an operator must write it:\n    %s", who, s.Role, s.Address, strings.Join(wrong, ", "), baoWriteRole(u, ns))
	}
	if !slices.ContainsFunc(role.Policies, func(p string) bool { return p != "default" }) {
		return fmt.Sprintf("%s: role %s of server %s has no policy but default: its sidecars will be refused their secrets (bao policy write, then token_policies=…)", who, s.Role, s.Address), nil
	}
	if role.NamespaceSelector != "" && !slices.Contains(role.Namespaces, ns) && !slices.Contains(role.Namespaces, "*") {
		return fmt.Sprintf("%s: role %s of server %s picks namespaces by the selector %s: plan cannot check that it picks %s", who, s.Role, s.Address, role.NamespaceSelector, ns), nil
	}
	return "", nil
}

// baoWriteRole is the command that makes u's role as its sidecars need it; the policy is
// named after the role, the operator's to write.
func baoWriteRole(u roleUse, ns string) string {
	s := u.srv
	return fmt.Sprintf("bao write auth/%s/role/%s bound_service_account_names=%s bound_service_account_namespaces=%s audience=%s token_policies=%s token_ttl=10m",
		s.AuthMount, s.Role, spec.ServiceAccountName(u.node), ns, s.Audience, s.Role)
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

// tokenVar names the variable the token came from.
func tokenVar() string {
	if strings.TrimSpace(os.Getenv(openbao.EnvToken)) != "" {
		return openbao.EnvToken
	}
	return openbao.EnvTokenFile
}
