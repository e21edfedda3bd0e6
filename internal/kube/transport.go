package kube

import (
	"net/http"

	"k8s.io/client-go/rest"
)

// Transport returns an http.RoundTripper that authenticates to the cluster as the client does
// (tests put a counting proxy in front of the API server with it).
func Transport(cfg *rest.Config) (http.RoundTripper, error) { return rest.TransportFor(cfg) }
