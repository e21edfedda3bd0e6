package publish

import (
	"fmt"
	"strings"

	"slipway.dev/slipway/internal/dns"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/state"
)

// refuseLeftRecords refuses a group whose file has no `publish:` while its state lists record
// sets slipway published (issue 35 item 16): without it slipway has no server to retire them
// on, and apply or destroy would give back the addresses they point at, for the cluster to
// hand to someone else.
func refuseLeftRecords(t lane.Target, doc *state.Document) error {
	if t.Group.Publish != nil {
		return nil
	}
	var names []string
	for _, it := range recordedDNS(doc, nil) {
		n := it.name
		if it.kind != dns.KindAddress {
			n += " (" + string(it.kind) + ")"
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("group %s: the file has no publish: but the state lists DNS records slipway published: %s: "+
		"without publish: slipway cannot reach their server to retire them, and they would point at addresses the cluster gives back: "+
		"put publish: back without those names (and without mail:), apply to retire them, then remove it",
		t.Group.Name, strings.Join(names, ", "))
}
