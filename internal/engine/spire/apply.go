package spire

import (
	"context"
	"errors"
	"fmt"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// Apply makes the changes plan found, in the order a node's agent needs them: the
// token-review account's rights, then its kubeconfig and the allow list on the spire node
// (one SSH session, one reconfiguration of the server), then the entries and the agents; on
// destroy the rights go last.
func (l *Lane) Apply(ctx context.Context, cs []plan.SpireChange) error {
	if len(cs) == 0 {
		return nil
	}
	cluster := cs[0].Cluster
	var rbac, rbacGone, remote bool
	var kubeconfig *plan.SpireChange
	var creates, updates []plan.SpireEntryDef
	var deletes, agents []string
	for i, c := range cs {
		switch c.What {
		case plan.SpireClusterRole, plan.SpireRoleBinding:
			if c.Action == plan.Delete {
				rbacGone = true
			} else {
				rbac = true
			}
		case plan.SpireKubeconfig:
			kubeconfig, remote = &cs[i], true
		case plan.SpireAllow:
			remote = true
		case plan.SpireAgent:
			agents = append(agents, c.Name)
		case plan.SpireEntry:
			switch c.Action {
			case plan.Create:
				creates = append(creates, *c.Entry)
			case plan.Update:
				updates = append(updates, *c.Entry)
			case plan.Delete:
				deletes = append(deletes, c.Entry.ID)
			}
		}
	}
	if rbac {
		if err := l.Kube.ApplySpireRBAC(ctx, l.Namespace, l.Group); err != nil {
			return fmt.Errorf("spire: %w", err)
		}
	}
	if remote {
		if err := l.applyRemote(ctx, cluster, cs, kubeconfig); err != nil {
			return err
		}
	}
	var errs []error
	if len(deletes) > 0 {
		errs = append(errs, l.Server.DeleteEntries(ctx, deletes))
	}
	if len(creates) > 0 {
		errs = append(errs, l.Server.CreateEntries(ctx, creates))
	}
	if len(updates) > 0 {
		errs = append(errs, l.Server.UpdateEntries(ctx, updates))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("spire server %s: entries: %w", l.Spire.Server, err)
	}
	// Last on the server: by now the allow list and the entries are gone, so an agent still
	// running cannot attest again, nor get an SVID.
	if len(agents) > 0 {
		if err := l.Server.EvictAgents(ctx, agents); err != nil {
			return fmt.Errorf("spire server %s: agents: %w", l.Spire.Server, err)
		}
	}
	if rbacGone {
		if err := l.Kube.DeleteSpireRBAC(ctx, l.Namespace); err != nil {
			return fmt.Errorf("spire: %w", err)
		}
	}
	return nil
}

// applyRemote changes the spire node's files in one session; a kubeconfig created or
// updated gets a new token, which goes in the session's stdin and nowhere else.
func (l *Lane) applyRemote(ctx context.Context, cluster string, cs []plan.SpireChange, kc *plan.SpireChange) error {
	text := ""
	if kc != nil && kc.Action != plan.Delete {
		host, ca, err := l.apiServer()
		if err != nil {
			return err
		}
		tok, err := l.Kube.ServiceAccountToken(ctx, l.Namespace, spec.SpireServerAccount, TokenLife)
		if err != nil {
			return fmt.Errorf("spire: %w", err)
		}
		text = kubeconfigText(cluster, kubeconfigShape{server: host, ca: ca, namespace: l.Namespace},
			kubeconfigHeader(tok.AccountUID, tok.Issued, tok.Expires), tok.Token)
	}
	if _, err := l.Node.Run(ctx, syncScript(l.Spire, cluster, cs, text)); err != nil {
		return fmt.Errorf("spire node %s: k8s_psat.d: %w", l.Spire.SSH, err)
	}
	return nil
}
