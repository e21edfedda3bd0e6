// Package kube is slipway's only door to the Kubernetes API: it alone imports client-go. It
// applies objects with server-side apply under one field manager, reads and watches what the
// engine needs, and turns API errors into sentences that name the object. It assumes a
// reachable API server described by a kubeconfig; it keeps no state between calls beyond the
// clients and one discovery (REST mapping) per run.
package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"slipway.dev/slipway/internal/netaddr"
	"slipway.dev/slipway/internal/plan"
)

// FieldManager is the one field manager slipway applies with.
const FieldManager = "slipway"

// Client holds the typed and dynamic clients of one cluster.
type Client struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface

	mapperOnce sync.Once
	mapper     meta.RESTMapper
	mapperErr  error

	gatewayOnce sync.Once // the Gateway API client, made on first use (gateway.go)
	gateway     gatewayAPI
	gatewayErr  error

	// Answers that hold for the cluster while the process runs, asked once: every group of a
	// waves run shares the client, and asked them once each (issue 38: 100 of a no-op's 800
	// requests were the same /version).
	mu      sync.Mutex
	version string // Ping's, once it answered
	stopSig *bool  // StopSignalSupported's, once it answered
}

// New connects to the cluster of the kubeconfig file at path (context "" = its current
// context): Open with one explicit file.
func New(path, context string) (*Client, error) {
	return Open(Kubeconfig{Explicit: path}, context)
}

// NewForConfig builds a Client from a rest.Config, turning client-side throttling off.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	cfg.Burst = -1
	cfg.RateLimiter = nil
	if onLoopback(cfg.Host) {
		cfg.DisableCompression = true
		// client-go gives a plain-HTTP server (kubectl proxy, a counting proxy) Go's default
		// transport, which ignores DisableCompression and asks for gzip: the header says it.
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return identityEncoding{rt} })
	}
	cs, err := kubernetes.NewForConfig(protobufConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return &Client{Config: cfg, Clientset: cs, Dynamic: dyn}, nil
}

// onLoopback reports whether host (a URL or host[:port]) names this machine. An API server
// there is asked for uncompressed responses: gzip only moves the cost of a LIST from the
// link, which loopback does not have, to the CPU both ends share (a 1,000-node plan's five
// LISTs: 0.17 s of the API server's CPU gzipped, 0.14 s not, issue 17).
func onLoopback(host string) bool {
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return netaddr.Loopback(host)
}

// identityEncoding asks for every response uncompressed, unless the request names an
// encoding itself (a client the counting proxy forwards).
type identityEncoding struct{ rt http.RoundTripper }

func (t identityEncoding) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Accept-Encoding") != "" {
		return t.rt.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it is given
	r.Header.Set("Accept-Encoding", "identity")
	return t.rt.RoundTrip(r)
}

// protobufConfig is cfg for the typed clients, whose kinds are all built in: they speak
// protobuf, JSON only where the server offers nothing else. Encoding a 1,000-node group's
// LISTs as JSON cost the API server about three times the CPU protobuf does (issue 17),
// on the same cores as slipway.
func protobufConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return cfg
}

// Mapper returns a REST mapper built from one discovery of the server, made on first use.
func (c *Client) Mapper() (meta.RESTMapper, error) {
	c.mapperOnce.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
		if err != nil {
			c.mapperErr = err
			return
		}
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	})
	return c.mapper, c.mapperErr
}

// ToUnstructured converts a typed object (with its TypeMeta set or registered in the client-go
// scheme) into an unstructured one with apiVersion and kind filled in.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil, fmt.Errorf("object %T: unknown kind: %v", obj, err)
		}
		gvk = gvks[0]
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	delete(u.Object["metadata"].(map[string]any), "creationTimestamp")
	if st, ok := u.Object["status"].(map[string]any); ok && len(st) == 0 {
		delete(u.Object, "status")
	}
	return u, nil
}

// ApplyOptions controls one server-side apply.
type ApplyOptions struct {
	DryRun bool // server-side dry run: nothing is stored
	Force  bool // take over fields another manager holds
}

// Apply server-side-applies obj (no GET first) and returns the object as the server has it.
// With DryRun the server validates strictly and returns what it would store.
func (c *Client) Apply(ctx context.Context, obj runtime.Object, opts ApplyOptions) (*unstructured.Unstructured, error) {
	u, err := ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if plan.IsStub(u) {
		// Applied, a stub would take every field slipway owns away from its object.
		return nil, fmt.Errorf("%s %s: a stub of the plan, not the object: not applied", u.GetKind(), u.GetName())
	}
	ri, err := c.resourceFor(u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	po := metav1.PatchOptions{FieldManager: FieldManager, Force: &opts.Force, FieldValidation: "Strict"}
	if opts.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	out, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, po)
	if err != nil {
		return nil, fmt.Errorf("%s %s: apply: %w", u.GetKind(), qualified(u.GetNamespace(), u.GetName()), err)
	}
	if u.GetKind() == "Secret" {
		withoutSecretValues(out) // the values went to the server; they go nowhere else
	}
	return out, nil
}

// mappingFor is the resource of gvk and whether it is namespaced, from the cached discovery.
func (c *Client) mappingFor(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := c.Mapper()
	if err != nil {
		return nil, err
	}
	return m.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func (c *Client) resourceFor(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	mapping, err := c.mappingFor(gvk)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(mapping.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(mapping.Resource), nil
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
