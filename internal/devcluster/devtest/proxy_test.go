package devtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProxyRecords(t *testing.T) {
	// The backend answers with the Host it was asked for, so the test sees what the proxy sent.
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Host)
	}))
	t.Cleanup(backend.Close)
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	for _, tc := range []struct {
		method, path string
		want         Request
	}{
		{"GET", "/api/v1/namespaces/demo/pods", Request{Method: "GET", Path: "/api/v1/namespaces/demo/pods", Verb: "LIST"}},
		{"GET", "/api/v1/namespaces/demo/pods/web-0", Request{Method: "GET", Path: "/api/v1/namespaces/demo/pods/web-0", Verb: "GET"}},
		{"GET", "/apis/apps/v1/namespaces/demo/deployments?watch=true", Request{Method: "GET", Path: "/apis/apps/v1/namespaces/demo/deployments", Verb: "WATCH"}},
		{"GET", "/api/v1/namespaces", Request{Method: "GET", Path: "/api/v1/namespaces", Verb: "LIST"}},
		{"GET", "/api/v1/namespaces/demo", Request{Method: "GET", Path: "/api/v1/namespaces/demo", Verb: "GET"}},
		{"PATCH", "/apis/apps/v1/namespaces/demo/deployments/web?dryRun=All", Request{Method: "PATCH", Path: "/apis/apps/v1/namespaces/demo/deployments/web", Verb: "PATCH", DryRun: true}},
		{"DELETE", "/api/v1/namespaces/demo/configmaps", Request{Method: "DELETE", Path: "/api/v1/namespaces/demo/configmaps", Verb: "DELETECOLLECTION"}},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/web", Request{Method: "DELETE", Path: "/api/v1/namespaces/demo/configmaps/web", Verb: "DELETE"}},
		{"GET", "/version", Request{Method: "GET", Path: "/version", Verb: "GET"}},
		{"HEAD", "/v2/demo/web/blobs/sha256:00", Request{Method: "HEAD", Path: "/v2/demo/web/blobs/sha256:00", Verb: "HEAD"}},
		{"POST", "/v2/demo/web/blobs/uploads/", Request{Method: "POST", Path: "/v2/demo/web/blobs/uploads/", Verb: "POST"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			p.Reset()
			req, err := http.NewRequest(tc.method, p.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.method != "HEAD" && string(body) != p.Host() {
				t.Errorf("backend saw Host %q, want the proxy's %q", body, p.Host())
			}
			if diff := cmp.Diff([]Request{tc.want}, p.Take()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProxySummaries(t *testing.T) {
	reqs := []Request{
		{Method: "GET", Verb: "LIST"}, {Method: "GET", Verb: "LIST"}, {Method: "GET", Verb: "WATCH"},
		{Method: "PATCH", Verb: "PATCH", DryRun: true}, {Method: "PATCH", Verb: "PATCH"}, {Method: "HEAD", Verb: "HEAD"},
	}
	want := map[string]int{"LIST": 2, "WATCH": 1, "PATCH dry-run": 1, "PATCH": 1, "HEAD": 1}
	if diff := cmp.Diff(want, ByVerb(reqs)); diff != "" {
		t.Errorf("ByVerb (-want +got):\n%s", diff)
	}
	var writes []string
	for _, r := range reqs {
		if r.Write() {
			writes = append(writes, r.Verb)
		}
	}
	if diff := cmp.Diff([]string{"PATCH", "PATCH"}, writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if got := (&Proxy{URL: "http://127.0.0.1:1"}).Kubeconfig(); !strings.Contains(got, `server: "http://127.0.0.1:1"`) {
		t.Errorf("kubeconfig does not point at the proxy:\n%s", got)
	}
}
