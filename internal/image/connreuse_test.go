package image

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"slipway.dev/slipway/internal/parallel"
)

// A plan HEADs every node's tag, 32 at a time (engine.resolveImages): the registry transport
// must keep as many idle connections per host as that, or every HEAD past the pool opens a
// connection of its own (net/http keeps 2 per host by default). Issue 17.
func TestLookupsReuseConnections(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(reg)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	pub, err := NewPublisher(Options{Registry: host})
	if err != nil {
		t.Fatal(err)
	}
	const lookups, atOnce = 400, 32
	errs := make([]error, lookups)
	parallel.ForEach(atOnce, parallel.Indexes(lookups), func(i int) {
		_, _, errs[i] = pub.Lookup(context.Background(), Repository(host, "demo", fmt.Sprintf("n%03d", i))+":c-0123456789ab")
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("lookup %d: %v", i, err)
		}
	}
	// A pool that keeps what it needs opens about one connection per lookup in flight, plus
	// some dialled in a race with a connection being released (net/http dials while it waits,
	// and pools the winner and the loser both); net/http's default of 2 idle per host opened
	// 168 here. 2 × atOnce leaves room for the race on a loaded machine.
	if n := conns.Load(); n > 2*atOnce {
		t.Errorf("%d lookups, %d at a time, opened %d connections; want at most %d", lookups, atOnce, n, 2*atOnce)
	}
}
