package spire

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	agentv1 "github.com/spiffe/spire-api-sdk/proto/spire/api/server/agent/v1"
	bundlev1 "github.com/spiffe/spire-api-sdk/proto/spire/api/server/bundle/v1"
	entryv1 "github.com/spiffe/spire-api-sdk/proto/spire/api/server/entry/v1"
	"github.com/spiffe/spire-api-sdk/proto/spire/api/types"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"slipway.dev/slipway/internal/plan"
)

// Server is the registration API of a SPIRE server over TCP, reached with an admin
// X.509-SVID and verified as spiffe://<trust domain>/spire/server against the bundle.
type Server struct {
	conn    *grpc.ClientConn
	entries entryv1.EntryClient
	bundle  bundlev1.BundleClient
	agents  agentv1.AgentClient
}

var _ Registrar = (*Server)(nil)

// DialServer connects to the server at addr; certFile and keyFile hold the admin SVID,
// bundleFile the bundle that verifies the server (PEM each). It does not wait for the
// connection: the first call does.
func DialServer(addr, trustDomain, certFile, keyFile, bundleFile string) (*Server, error) {
	conn, err := DialAdmin(addr, trustDomain, certFile, keyFile, bundleFile)
	if err != nil {
		return nil, err
	}
	return &Server{conn: conn, entries: entryv1.NewEntryClient(conn), bundle: bundlev1.NewBundleClient(conn),
		agents: agentv1.NewAgentClient(conn)}, nil
}

// DialAdmin is the gRPC connection DialServer makes: mutual TLS with the admin SVID, the
// server verified as spiffe://<trust domain>/spire/server against the bundle. (The e2e tests
// read the server's agents through it too.)
func DialAdmin(addr, trustDomain, certFile, keyFile, bundleFile string) (*grpc.ClientConn, error) {
	td, err := spiffeid.TrustDomainFromString(trustDomain)
	if err != nil {
		return nil, fmt.Errorf("spire server %s: trust domain %q: %w", addr, trustDomain, err)
	}
	svid, err := x509svid.Load(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("spire server %s: admin SVID (%s, %s): %w", addr, certFile, keyFile, err)
	}
	bundle, err := x509bundle.Load(td, bundleFile)
	if err != nil {
		return nil, fmt.Errorf("spire server %s: trust bundle %s: %w", addr, bundleFile, err)
	}
	serverID, err := spiffeid.FromSegments(td, "spire", "server")
	if err != nil {
		return nil, err
	}
	tc := tlsconfig.MTLSClientConfig(svid, bundle, tlsconfig.AuthorizeID(serverID))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		return nil, fmt.Errorf("spire server %s: %w", addr, err)
	}
	return conn, nil
}

// Close closes the connection.
func (s *Server) Close() error { return s.conn.Close() }

// Bundle is the server's X.509 authorities as PEM, in the server's order.
func (s *Server) Bundle(ctx context.Context) (string, error) {
	b, err := s.bundle.GetBundle(ctx, &bundlev1.GetBundleRequest{})
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, a := range b.X509Authorities {
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: a.Asn1}); err != nil {
			return "", err
		}
	}
	return out.String(), nil
}

// Entries lists every entry, page by page.
func (s *Server) Entries(ctx context.Context) ([]plan.SpireEntryDef, error) {
	var out []plan.SpireEntryDef
	token := ""
	for {
		r, err := s.entries.ListEntries(ctx, &entryv1.ListEntriesRequest{PageSize: 500, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range r.Entries {
			out = append(out, fromEntry(e))
		}
		if token = r.NextPageToken; token == "" {
			return out, nil
		}
	}
}

// CreateEntries creates es with their IDs; one that exists already is fine (a retried apply).
func (s *Server) CreateEntries(ctx context.Context, es []plan.SpireEntryDef) error {
	req := &entryv1.BatchCreateEntryRequest{}
	for _, e := range es {
		te, err := toEntry(e)
		if err != nil {
			return err
		}
		req.Entries = append(req.Entries, te)
	}
	r, err := s.entries.BatchCreateEntry(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for i, res := range r.Results {
		if c := codes.Code(res.GetStatus().GetCode()); c != codes.OK && c != codes.AlreadyExists {
			errs = append(errs, fmt.Errorf("create %s: %s", es[i].ID, res.GetStatus().GetMessage()))
		}
	}
	return errors.Join(errs...)
}

// UpdateEntries sets the SPIFFE ID, parent and selectors of es.
func (s *Server) UpdateEntries(ctx context.Context, es []plan.SpireEntryDef) error {
	req := &entryv1.BatchUpdateEntryRequest{InputMask: &types.EntryMask{SpiffeId: true, ParentId: true, Selectors: true}}
	for _, e := range es {
		te, err := toEntry(e)
		if err != nil {
			return err
		}
		req.Entries = append(req.Entries, te)
	}
	r, err := s.entries.BatchUpdateEntry(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for i, res := range r.Results {
		if c := codes.Code(res.GetStatus().GetCode()); c != codes.OK {
			errs = append(errs, fmt.Errorf("update %s: %s", es[i].ID, res.GetStatus().GetMessage()))
		}
	}
	return errors.Join(errs...)
}

// DeleteEntries deletes the entries ids; one gone already is fine.
func (s *Server) DeleteEntries(ctx context.Context, ids []string) error {
	r, err := s.entries.BatchDeleteEntry(ctx, &entryv1.BatchDeleteEntryRequest{Ids: ids})
	if err != nil {
		return err
	}
	var errs []error
	for _, res := range r.Results {
		if c := codes.Code(res.GetStatus().GetCode()); c != codes.OK && c != codes.NotFound {
			errs = append(errs, fmt.Errorf("delete %s: %s", res.GetId(), res.GetStatus().GetMessage()))
		}
	}
	return errors.Join(errs...)
}

// AgentPath is the path of the SPIFFE IDs of the agents k8s_psat attests for cluster (one
// per kube node: <path><kube node UID>).
func AgentPath(cluster string) string { return "/spire/agent/k8s_psat/" + cluster + "/" }

// Agents lists the agents attested with k8s_psat for cluster, page by page.
func (s *Server) Agents(ctx context.Context, cluster string) ([]string, error) {
	var out []string
	token := ""
	for {
		r, err := s.agents.ListAgents(ctx, &agentv1.ListAgentsRequest{PageSize: 500, PageToken: token,
			Filter:     &agentv1.ListAgentsRequest_Filter{ByAttestationType: "k8s_psat"},
			OutputMask: &types.AgentMask{}})
		if err != nil {
			return nil, err
		}
		for _, a := range r.Agents {
			if strings.HasPrefix(a.GetId().GetPath(), AgentPath(cluster)) {
				out = append(out, idString(a.Id))
			}
		}
		if token = r.NextPageToken; token == "" {
			slices.Sort(out)
			return out, nil
		}
	}
}

// EvictAgents deletes the agents ids (SPIFFE IDs); one gone already is fine.
func (s *Server) EvictAgents(ctx context.Context, ids []string) error {
	var errs []error
	for _, id := range ids {
		sid, err := spiffeid.FromString(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("evict %s: %w", id, err))
			continue
		}
		_, err = s.agents.DeleteAgent(ctx, &agentv1.DeleteAgentRequest{Id: &types.SPIFFEID{TrustDomain: sid.TrustDomain().Name(), Path: sid.Path()}})
		if err != nil && status.Code(err) != codes.NotFound {
			errs = append(errs, fmt.Errorf("evict %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func fromEntry(e *types.Entry) plan.SpireEntryDef {
	d := plan.SpireEntryDef{ID: e.Id, SPIFFEID: idString(e.SpiffeId), ParentID: idString(e.ParentId)}
	for _, s := range e.Selectors {
		d.Selectors = append(d.Selectors, s.Type+":"+s.Value)
	}
	slices.Sort(d.Selectors)
	return d
}

func idString(id *types.SPIFFEID) string {
	if id == nil {
		return ""
	}
	return "spiffe://" + id.TrustDomain + id.Path
}

func toEntry(d plan.SpireEntryDef) (*types.Entry, error) {
	e := &types.Entry{Id: d.ID}
	for _, x := range []struct {
		s   string
		dst **types.SPIFFEID
	}{{d.SPIFFEID, &e.SpiffeId}, {d.ParentID, &e.ParentId}} {
		id, err := spiffeid.FromString(x.s)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", d.ID, err)
		}
		*x.dst = &types.SPIFFEID{TrustDomain: id.TrustDomain().Name(), Path: id.Path()}
	}
	for _, s := range d.Selectors {
		t, v, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("entry %s: selector %q is not type:value", d.ID, s)
		}
		e.Selectors = append(e.Selectors, &types.Selector{Type: t, Value: v})
	}
	return e, nil
}
