package engine

import (
	"testing"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/engine/publish"
	"slipway.dev/slipway/internal/plan"
)

// fakeDNS is the DNS server's stand-in the lanes' tests share.
type fakeDNS = enginetest.DNS

func newFakeDNS() *fakeDNS { return enginetest.NewDNS() }

var _ publish.Server = (*fakeDNS)(nil)

// publishLane is e's publishing lane, for the tests that call one of its parts alone.
func publishLane(e *Engine) *publish.Lane {
	for _, l := range e.lanes {
		if p, ok := l.(*publish.Lane); ok {
			return p
		}
	}
	panic("the engine has no publishing lane")
}

// No step kind has two executors (two lanes', or the root's and a lane's): runStep would run
// one of them and the other never.
func TestStepKindsHaveOneExecutor(t *testing.T) {
	owner := map[plan.StepKind]string{}
	for k := range executors {
		owner[k] = "the root"
	}
	for _, l := range New(Options{}).lanes {
		s, ok := l.(lane.Stepper)
		if !ok {
			continue
		}
		for k := range s.Executors() {
			if o, dup := owner[k]; dup {
				t.Errorf("step %s: executors of both %s and lane %s", k, o, l.Name())
			}
			owner[k] = "lane " + l.Name()
		}
	}
}
