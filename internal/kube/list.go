package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"slipway.dev/slipway/internal/plan"
)

// listObjects lists the objects of gvk in ns that carry selector, without their managed
// fields: the callers compare specs and read labels, never the field managers' records, which
// are about half of a small object (a 1,000-node plan holds 5,000 objects for its whole run).
//
// A built-in kind comes as protobuf into the client's types (listTyped), anything else as
// JSON decoded in one pass: the dynamic client decodes a LIST twice over, the list with its
// items kept as raw JSON, then every item again. For a 1,000-node plan that was 38 % of its
// CPU (issue 17).
func (c *Client) listObjects(ctx context.Context, gvk schema.GroupVersionKind, ns, selector string) ([]plan.Object, error) {
	req, err := c.listRequest(gvk, ns, selector)
	if err != nil {
		return nil, err
	}
	if list, ok := typedList(gvk); ok {
		return listTyped(ctx, req, list, gvk)
	}
	items, err := listJSON(ctx, req, gvk)
	if err != nil {
		return nil, err
	}
	out := make([]plan.Object, len(items))
	for i, u := range items {
		out[i] = u
	}
	return out, nil
}

// listRaw is listObjects with every item unstructured.
func (c *Client) listRaw(ctx context.Context, gvk schema.GroupVersionKind, ns, selector string) ([]*unstructured.Unstructured, error) {
	objs, err := c.listObjects(ctx, gvk, ns, selector)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		if out[i], err = AsUnstructured(o); err != nil {
			return nil, fmt.Errorf("decode %s list: %w", gvk.Kind, err)
		}
	}
	return out, nil
}

// listRequest is the LIST of gvk in ns ("": in every namespace) that carry selector.
func (c *Client) listRequest(gvk schema.GroupVersionKind, ns, selector string) (*rest.Request, error) {
	mapping, err := c.mappingFor(gvk)
	if err != nil {
		return nil, err
	}
	p := "/api"
	if gvk.Group != "" {
		p = path.Join("/apis", gvk.Group)
	}
	p = path.Join(p, gvk.Version)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && ns != "" { // "": every namespace
		p = path.Join(p, "namespaces", ns)
	}
	p = path.Join(p, mapping.Resource.Resource)
	req := c.Clientset.CoreV1().RESTClient().Get().AbsPath(p)
	if selector != "" {
		req = req.Param("labelSelector", selector)
	}
	return req, nil
}

// listJSON runs req as JSON and decodes its items.
func listJSON(ctx context.Context, req *rest.Request, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	raw, err := req.SetHeader("Accept", runtime.ContentTypeJSON).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	return decodeList(raw, gvk)
}

// typedList is an empty list of gvk's kind when the client-go scheme knows it (the built-in
// kinds, which the API server sends as protobuf).
func typedList(gvk schema.GroupVersionKind) (runtime.Object, bool) {
	list, err := scheme.Scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return list, err == nil
}

// listTyped runs req into list and returns its items, typed, without their managed fields,
// which nothing reads, and with their kind set (a list's items carry none). The API server
// encodes a 1,000-node group's LISTs as protobuf for about a third of the CPU JSON costs it
// (issue 17), on the cores slipway runs on, and their managed fields arrive as one opaque
// field each. The items hold what a JSON LIST gives (TestListAsProtobufMatchesJSON), but for
// fields newer than this client's types, which protobuf drops: nothing slipway compares or
// reads. They stay typed: a plan compares them with the rendered objects as they are
// (plan.SubsetBothTyped), and turns into maps (AsUnstructured) only those it must read so.
func listTyped(ctx context.Context, req *rest.Request, list runtime.Object, gvk schema.GroupVersionKind) ([]plan.Object, error) {
	if err := decodeListBody(ctx, req, list); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("decode %s list: %w", gvk.Kind, err)
	}
	out := make([]plan.Object, 0, len(items))
	for _, it := range items {
		o, ok := it.(plan.Object)
		if !ok {
			return nil, fmt.Errorf("decode %s list: an item of type %T", gvk.Kind, it)
		}
		o.SetManagedFields(nil)
		o.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, o)
	}
	return out, nil
}

// decodeListBody runs req and decodes its body into list. It reads the body itself where
// client-go's Do would read it with io.ReadAll: a LIST comes without a length, and ReadAll
// grows its slice a quarter at a time, so that a 1,000-node group's 3 MB of Deployments were
// copied and cleared many times over (a tenth of a no-op plan's CPU, issue 17); a buffer that
// doubles copies each byte about once more.
func decodeListBody(ctx context.Context, req *rest.Request, list runtime.Object) error {
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, 64<<10))
	if _, err := buf.ReadFrom(body); err != nil {
		return err
	}
	// The universal deserializer takes protobuf and JSON alike, whichever the server chose.
	_, _, err = scheme.Codecs.UniversalDeserializer().Decode(buf.Bytes(), nil, list)
	return err
}

// AsUnstructured is o as unstructured: o itself when it is, else the maps its JSON round trip
// makes (jsonMap, one reflection walk; the round trip itself where it declines).
func AsUnstructured(o plan.Object) (*unstructured.Unstructured, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, nil
	}
	var buf bytes.Buffer
	m, err := itemMap(o, &buf)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// itemMap is the JSON round trip of a typed item, by jsonMap where it can; buf is scratch.
func itemMap(it runtime.Object, buf *bytes.Buffer) (map[string]any, error) {
	if m, ok := jsonMap(it); ok {
		return m, nil
	}
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(it); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(buf.Bytes(), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeList decodes the items of a LIST response, each given gvk (a list's items carry none).
// raw is consumed: its bytes are reused.
func decodeList(raw []byte, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var list struct {
		Items []map[string]any `json:"items"`
	}
	raw, _ = withoutManagedFields(raw)
	if err := utiljson.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decode %s list: %w", gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for _, obj := range list.Items {
		u := &unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out, nil
}
