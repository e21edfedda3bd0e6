package devcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Two dev environments on one machine (the shared one and one under --dir) must never break
// each other, yet some of what they run is machine-wide: the real node's bridge and pod range,
// its kubelet's ports and cgroups, the SPIRE server's address on lo. Each environment holds a
// slot, and the slot names all of these; slot 0 keeps the values the dev environment always
// had (slipway0, 10.244.0.0/24, 198.51.100.1, ports 10250/10248, cgroups at the root), and
// goes to the default data directory, so its env exports and the tests reading them are
// unchanged. Any other directory gets a slot derived from a hash of its path, the next free
// one on a collision. The claims live under runDir/slots (one file per slot, naming the
// directory); what an environment made machine-wide is recorded in its own directory
// (hostFile), and dev down removes exactly that and nothing of another slot.

// runDir holds the machine-wide files of the dev environments (under /run: gone at a reboot,
// as the bridges and addresses they name are). A variable for the unit tests.
var runDir = "/run/slipway-dev"

// maxSlot bounds the slots: 10.244.<slot>.0/24 and 198.51.100.<slot+1> stay valid.
const maxSlot = 200

// hostFile records, in an environment's data directory, its slot and what it made.
const hostFile = "host.json"

// HostShare is an environment's share of the machine: the names and ranges of its slot, and
// what it made with them (Made), which dev down undoes.
type HostShare struct {
	Slot        int    `json:"slot"`
	Bridge      string `json:"bridge"`      // the real node's CNI bridge (≤ 15 characters)
	PodCIDR     string `json:"podCIDR"`     // the real node's pod range
	Gateway     string `json:"gateway"`     // the bridge's address: the first of PodCIDR
	SpireAddr   string `json:"spireAddr"`   // the SPIRE server's address, a /32 on lo
	KubeletPort int    `json:"kubeletPort"` // the real node's kubelet
	HealthzPort int    `json:"healthzPort"`
	// CgroupRoot is the kubelet's cgroupRoot: "/" in slot 0 (kubepods at each hierarchy's
	// root, as before), its own directory otherwise, so two kubelets never see each other's
	// pods as orphans.
	CgroupRoot string `json:"cgroupRoot"`
	Made       []Made `json:"made,omitempty"`
}

// BridgeMAC is the bridge's own MAC, locally administered and one per slot. A bridge without
// one takes the lowest MAC of its ports, a new one whenever that pod goes: the other pods'
// ARP entry of their gateway then names a port that is gone, and they lose this machine (the
// secrets server, SPIRE, the answers to their probes) for up to half a minute (seen here: the
// bridge's MAC changed 82 times in 33 minutes of e2e tests; a pod lost its gateway for 26 s).
func (h HostShare) BridgeMAC() string { return fmt.Sprintf("02:73:6c:77:00:%02x", h.Slot) }

// Made is one machine-wide thing an environment made: a bridge, an address on lo, a cgroup
// tree (in every hierarchy), or ip_forward turned on (Name holds the value it found).
type Made struct {
	Kind string `json:"kind"` // madeBridge, madeLoAddr, madeCgroup, madeIPForward
	Name string `json:"name"`
}

const (
	madeBridge    = "bridge"
	madeLoAddr    = "lo-address"
	madeCgroup    = "cgroup"
	madeIPForward = "ip_forward"
)

// slotShare is slot n's names and ranges.
func slotShare(n int) HostShare {
	if n == 0 {
		return HostShare{Bridge: Bridge, PodCIDR: PodCIDR, Gateway: BridgeGateway, SpireAddr: SpireHostAddr,
			KubeletPort: KubeletPort, HealthzPort: KubeletHealthzPort, CgroupRoot: "/"}
	}
	return HostShare{
		Slot:        n,
		Bridge:      "slipway" + strconv.Itoa(n),
		PodCIDR:     fmt.Sprintf("10.244.%d.0/24", n),
		Gateway:     fmt.Sprintf("10.244.%d.1", n),
		SpireAddr:   fmt.Sprintf("198.51.100.%d", n+1),
		KubeletPort: KubeletPort + 10*n,
		HealthzPort: KubeletHealthzPort + 10*n,
		CgroupRoot:  "/slipway-dev-" + strconv.Itoa(n),
	}
}

// kubepods is the cgroup tree the kubelet of this share makes pods in, relative to each
// hierarchy's root.
func (h HostShare) kubepods() string {
	if h.CgroupRoot == "/" || h.CgroupRoot == "" {
		return "/kubepods"
	}
	return h.CgroupRoot
}

// slotOrder is the order in which dir tries the slots: the default directory slot 0 first,
// every directory then from a slot derived from its path on.
func slotOrder(dir, defaultDir string) []int {
	var order []int
	if dir == defaultDir {
		order = append(order, 0)
	}
	f := fnv.New32a()
	f.Write([]byte(dir))
	first := int(f.Sum32() % maxSlot)
	for i := range maxSlot {
		order = append(order, 1+(first+i)%maxSlot)
	}
	return order
}

// systemDefaultDir is the default data directory without $SLIPWAY_DEV_DIR: the shared
// environment's, which holds slot 0.
func systemDefaultDir() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "slipway", "dev")
}

func slotFile(n int) string { return filepath.Join(runDir, "slots", strconv.Itoa(n)) }

// slotOwner is the data directory holding slot n, "" when none does. Slot 0 falls back on
// ownerFile: a slipway older than the slots wrote only that.
func slotOwner(n int) string {
	if b, err := os.ReadFile(slotFile(n)); err == nil {
		return strings.TrimSpace(string(b))
	}
	if n == 0 {
		if b, err := os.ReadFile(ownerFile()); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// envLives reports whether the environment of dir still exists: its data directory or its
// real node's directory. A claim of one that does not is stale.
func envLives(dir string) bool {
	if _, err := os.Stat(dir); err == nil {
		return true
	}
	_, err := os.Stat(nodeDirFor(dir))
	return err == nil
}

// claimHost returns the slot of the environment in dir, claiming one when it holds none. A
// slot other than 0 whose bridge or SPIRE address exists on the machine without a live claim
// is passed over.
func claimHost(dir string) (HostShare, error) {
	order := slotOrder(dir, systemDefaultDir())
	if err := os.MkdirAll(filepath.Join(runDir, "slots"), 0o755); err != nil {
		// Not root: there is no real node, no bridge and no address on lo to make, so nothing
		// machine-wide to share; the slot's values go unused.
		return slotShare(order[0]), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unlock, err := lockFile(ctx, filepath.Join(runDir, "slots.lock"))
	if err != nil {
		return HostShare{}, err
	}
	defer unlock()
	for _, n := range order {
		if slotOwner(n) == dir {
			return slotShare(n), writeSlot(n, dir)
		}
	}
	for _, n := range order {
		owner := slotOwner(n)
		if owner != "" && envLives(owner) {
			continue
		}
		s := slotShare(n)
		if n != 0 && slotInUse(s) {
			// Its bridge or address is there without a live claim: an environment that never
			// went down, maybe still running. Slot 0 is the shared environment's whatever is
			// left of it, as it always was.
			continue
		}
		return s, writeSlot(n, dir)
	}
	return HostShare{}, fmt.Errorf("dev cluster: every one of the %d machine-wide slots (bridge, pod range, SPIRE address) is held by another dev environment", maxSlot+1)
}

func writeSlot(n int, dir string) error {
	if err := os.WriteFile(slotFile(n), []byte(dir+"\n"), 0o644); err != nil {
		return fmt.Errorf("dev cluster: claim slot %d: %w", n, err)
	}
	return nil
}

// releaseHost gives up dir's slot (dev down), unless another directory holds it by now.
func releaseHost(dir string, h HostShare) {
	if b, err := os.ReadFile(slotFile(h.Slot)); err == nil && strings.TrimSpace(string(b)) == dir {
		_ = os.Remove(slotFile(h.Slot))
	}
	if h.Slot == 0 && strings.TrimSpace(readString(ownerFile())) == dir {
		_ = os.Remove(ownerFile())
	}
}

// otherLiveSlots reports whether an environment other than dir holds a slot.
func otherLiveSlots(dir string) bool {
	entries, _ := os.ReadDir(filepath.Join(runDir, "slots"))
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(runDir, "slots", en.Name()))
		if owner := strings.TrimSpace(string(b)); err == nil && owner != dir && envLives(owner) {
			return true
		}
	}
	return false
}

// loadHost reads dir's record; without one (a slipway older than the slots started the
// environment) it infers what that slipway made: the slot-0 bridge, cgroups and ip_forward
// when ownerFile names dir, the SPIRE address when the SPIRE server listened on it and dir is
// the shared environment's.
func loadHost(dir string) (HostShare, bool) {
	var h HostShare
	if b, err := os.ReadFile(filepath.Join(dir, hostFile)); err == nil && json.Unmarshal(b, &h) == nil && h.Bridge != "" {
		return h, true
	}
	h = slotShare(0)
	owner := strings.TrimSpace(readString(ownerFile()))
	if owner == dir {
		h.Made = append(h.Made, Made{madeBridge, h.Bridge}, Made{madeCgroup, h.kubepods()})
		if b, err := os.ReadFile(filepath.Join(nodeDirFor(dir), "ip_forward")); err == nil {
			h.Made = append(h.Made, Made{madeIPForward, strings.TrimSpace(string(b))})
		}
	}
	if owner != dir && dir != systemDefaultDir() {
		// Another environment's: that slipway shared the SPIRE address with the one holding
		// slot 0, which keeps it (the bug of issue 45 was dropping it here).
		return h, false
	}
	var s Spire
	if b, err := os.ReadFile(filepath.Join(spireDir(dir), "spire.json")); err == nil && json.Unmarshal(b, &s) == nil {
		if host, _, err := net.SplitHostPort(s.Addr); err == nil && host == SpireHostAddr {
			h.Made = append(h.Made, Made{madeLoAddr, SpireHostAddr})
		}
	}
	return h, false
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// hostShare is the environment's share of the machine, read from its record (or its claim)
// once.
func (e *Env) hostShare() *HostShare {
	if e.host == nil {
		h, ok := loadHost(e.Dir)
		if !ok {
			if c, err := claimHost(e.Dir); err == nil {
				c.Made = h.Made
				h = c
			}
		}
		e.host = &h
	}
	return e.host
}

// HostShare is what the environment holds machine-wide (its slot) and what it made there.
func (e *Env) HostShare() HostShare { return *e.hostShare() }

// made records that the environment made m (once), in its directory, before making it: an
// interrupted dev up leaves nothing dev down would not find.
func (e *Env) made(m Made) error {
	h := e.hostShare()
	for _, x := range h.Made {
		// ip_forward keeps the value found first: the one to restore.
		if x.Kind == m.Kind && (x.Name == m.Name || m.Kind == madeIPForward) {
			return nil
		}
	}
	h.Made = append(h.Made, m)
	return e.saveHost()
}

// saveHost writes the record into the data directory.
func (e *Env) saveHost() error {
	if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return fmt.Errorf("dev cluster: %w", err)
	}
	return writeJSON(filepath.Join(e.Dir, hostFile), e.hostShare())
}

// undo is one step of taking down what an environment made machine-wide.
type undo struct {
	kind, name string
	run        func() error
}

// undoPlan lists, for h's record, what dev down removes: only what h made, last made first.
// ip_forward goes back to what it was only when no other environment holds a slot.
func undoPlan(dir string, h HostShare, ops hostOps) []undo {
	var plan []undo
	for i := len(h.Made) - 1; i >= 0; i-- {
		m := h.Made[i]
		switch m.Kind {
		case madeBridge:
			plan = append(plan, undo{m.Kind, m.Name, func() error { return ops.deleteLink(m.Name) }})
		case madeLoAddr:
			plan = append(plan, undo{m.Kind, m.Name, func() error { return ops.deleteLoAddr(m.Name) }})
		case madeCgroup:
			plan = append(plan, undo{m.Kind, m.Name, func() error { ops.removeCgroups(m.Name); return nil }})
		case madeIPForward:
			if !ops.othersLive(dir) {
				plan = append(plan, undo{m.Kind, m.Name, func() error { return ops.setIPForward(m.Name) }})
			}
		}
	}
	return plan
}

// hostOps are the machine-wide operations of undoPlan (the machine's, machineOps, but for
// the unit tests).
type hostOps interface {
	deleteLink(name string) error
	deleteLoAddr(ip string) error
	removeCgroups(tree string)
	setIPForward(value string) error
	othersLive(dir string) bool
}

// undoHostKinds removes what dir's environment made machine-wide of the given kinds, and
// drops them from its record.
func undoHostKinds(dir string, progress io.Writer, kinds ...string) {
	h, recorded := loadHost(dir)
	var these, rest []Made
	for _, m := range h.Made {
		if slices.Contains(kinds, m.Kind) {
			these = append(these, m)
		} else {
			rest = append(rest, m)
		}
	}
	if len(these) == 0 {
		return
	}
	for _, u := range undoPlan(dir, HostShare{Made: these}, machineOps{}) {
		if err := u.run(); err != nil {
			fmt.Fprintf(progress, "dev: warning: remove %s %s: %v\n", u.kind, u.name, err)
		}
	}
	if recorded {
		h.Made = rest
		_ = writeJSON(filepath.Join(dir, hostFile), h)
	}
}

// slotInUse reports whether slot s's bridge or SPIRE address is on the machine (a variable
// for the unit tests, which run beside the shared environment's).
var slotInUse = func(s HostShare) bool { return interfaceExists(s.Bridge) || hasAddr(s.SpireAddr) }

func interfaceExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}
