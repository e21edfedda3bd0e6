package devcluster

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Slot 0 keeps the values the dev environment always had (its env exports and the tests that
// read them are unchanged); every slot's names and ranges are valid and apart from every other
// slot's.
func TestSlotShare(t *testing.T) {
	want := HostShare{Bridge: "slipway0", PodCIDR: "10.244.0.0/24", Gateway: "10.244.0.1", SpireAddr: "198.51.100.1",
		KubeletPort: 10250, HealthzPort: 10248, CgroupRoot: "/"}
	if diff := cmp.Diff(want, slotShare(0)); diff != "" {
		t.Errorf("slot 0 (-want +got):\n%s", diff)
	}
	seen := map[string]int{}
	for n := 0; n <= maxSlot; n++ {
		s := slotShare(n)
		if len(s.Bridge) > 15 {
			t.Errorf("slot %d: bridge %q is over 15 characters (IFNAMSIZ)", n, s.Bridge)
		}
		_, cidr, err := net.ParseCIDR(s.PodCIDR)
		if err != nil || !cidr.Contains(net.ParseIP(s.Gateway)) {
			t.Errorf("slot %d: gateway %s not in pod range %s (%v)", n, s.Gateway, s.PodCIDR, err)
		}
		if ip := net.ParseIP(s.SpireAddr); ip == nil || ip.To4() == nil {
			t.Errorf("slot %d: SPIRE address %q", n, s.SpireAddr)
		}
		if mac, err := net.ParseMAC(s.BridgeMAC()); err != nil || len(mac) != 6 || mac[0]&0b11 != 0b10 {
			t.Errorf("slot %d: bridge MAC %q is no locally administered unicast MAC (%v)", n, s.BridgeMAC(), err)
		}
		for _, k := range []string{"bridge " + s.Bridge, "mac " + s.BridgeMAC(), "cidr " + s.PodCIDR, "spire " + s.SpireAddr, "cgroup " + s.kubepods(),
			"port " + strconv.Itoa(s.KubeletPort), "port " + strconv.Itoa(s.HealthzPort)} {
			if m, ok := seen[k]; ok {
				t.Errorf("slot %d shares %s with slot %d", n, k, m)
			}
			seen[k] = n
		}
	}
}

// testRunDir points the machine-wide files at a temporary directory, makes the shared
// environment's directory the one under a temporary XDG_STATE_HOME, and lets no slot look taken
// by what runs on this machine.
func testRunDir(t *testing.T) (defaultDir string) {
	t.Helper()
	old, oldInUse := runDir, slotInUse
	runDir = t.TempDir()
	slotInUse = func(HostShare) bool { return false }
	t.Cleanup(func() { runDir, slotInUse = old, oldInUse })
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	return filepath.Join(state, "slipway", "dev")
}

// The default directory holds slot 0; another directory a slot of its own, the same one again
// when it asks again; a slot whose environment is gone is taken over.
func TestClaimHost(t *testing.T) {
	def := testRunDir(t)
	if err := os.MkdirAll(def, 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := claimHost(def)
	if err != nil || a.Slot != 0 {
		t.Fatalf("default dir: slot %d, %v; want slot 0", a.Slot, err)
	}
	other := t.TempDir()
	b, err := claimHost(other)
	if err != nil || b.Slot == 0 {
		t.Fatalf("second dir: slot %d, %v; want a slot of its own", b.Slot, err)
	}
	if again, _ := claimHost(other); again.Slot != b.Slot {
		t.Errorf("second dir again: slot %d, want %d", again.Slot, b.Slot)
	}
	if again, _ := claimHost(def); again.Slot != 0 {
		t.Errorf("default dir again: slot %d, want 0", again.Slot)
	}
	// A directory that hashes to the second's slot while it lives gets the next one.
	if err := os.WriteFile(slotFile(slotOrder("/third", def)[0]), []byte(other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The next one is its second unless the second dir (a temporary directory, so a slot that
	// varies from run to run) holds that one too: then its third.
	next := slotOrder("/third", def)[1:]
	if next[0] == b.Slot {
		next = next[1:]
	}
	c, err := claimHost("/third")
	if err != nil || c.Slot == b.Slot || c.Slot == 0 || c.Slot != next[0] {
		t.Errorf("third dir: slot %d, %v; want %d", c.Slot, err, next[0])
	}
	// A claim whose environment is gone (no data directory, no node directory) is stale.
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.WriteFile(slotFile(slotOrder("/fourth", def)[0]), []byte(gone+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, _ := claimHost("/fourth"); d.Slot != slotOrder("/fourth", def)[0] {
		t.Errorf("fourth dir: slot %d, want the stale slot %d", d.Slot, slotOrder("/fourth", def)[0])
	}
	// Slot 0 held by a live environment elsewhere (an older slipway's ownerFile): the default
	// directory takes another.
	releaseHost(def, a)
	if err := os.WriteFile(ownerFile(), []byte(other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, _ := claimHost(def); e.Slot == 0 {
		t.Errorf("default dir with slot 0 held by %s: got slot 0", other)
	}
}

// fakeOps records the machine-wide operations of undoPlan (a stand-in for machineOps).
type fakeOps struct {
	calls  []string
	others bool
}

func (f *fakeOps) deleteLink(n string) error    { f.calls = append(f.calls, "link "+n); return nil }
func (f *fakeOps) deleteLoAddr(ip string) error { f.calls = append(f.calls, "lo "+ip); return nil }
func (f *fakeOps) removeCgroups(tree string)    { f.calls = append(f.calls, "cgroup "+tree) }
func (f *fakeOps) setIPForward(v string) error {
	f.calls = append(f.calls, "ip_forward "+v)
	return nil
}
func (f *fakeOps) othersLive(string) bool { return f.others }

// dev down of a second environment removes what it recorded, and nothing of the shared one's:
// not slipway0, not 198.51.100.1 on lo, not the kubepods cgroups, and ip_forward stays while
// the shared one runs.
func TestDownRemovesOnlyItsOwn(t *testing.T) {
	shared := slotShare(0)
	second := slotShare(7)
	second.Made = []Made{{madeIPForward, "0"}, {madeBridge, second.Bridge}, {madeCgroup, second.kubepods()}, {madeLoAddr, second.SpireAddr}}
	run := func(h HostShare, others bool) []string {
		ops := &fakeOps{others: others}
		for _, u := range undoPlan("/tmp/second", h, ops) {
			if err := u.run(); err != nil {
				t.Fatal(err)
			}
		}
		return ops.calls
	}
	got := run(second, true)
	want := []string{"lo 198.51.100.8", "cgroup /slipway-dev-7", "link slipway7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second env down beside the shared one (-want +got):\n%s", diff)
	}
	for _, c := range got {
		for _, theirs := range []string{shared.Bridge, shared.SpireAddr, shared.kubepods()} {
			if strings.HasSuffix(c, " "+theirs) {
				t.Errorf("second env down touches the shared env's %s", theirs)
			}
		}
	}
	if got := run(second, false); !slices.Contains(got, "ip_forward 0") {
		t.Errorf("last env down: %q, want ip_forward restored to 0", got)
	}
	// An environment that made nothing machine-wide (no real node, no SPIRE) removes nothing.
	if got := run(slotShare(7), false); len(got) != 0 {
		t.Errorf("env that made nothing: %q, want nothing removed", got)
	}
}

// A record is written before what it names is made, read back by dev down, and a cluster
// started by a slipway older than the slots is read as what that slipway made: the slot-0
// bridge and cgroups when ownerFile names it, the SPIRE address when its server listened there.
func TestLoadHost(t *testing.T) {
	testRunDir(t)
	dir := t.TempDir()
	e := &Env{Dir: dir}
	if err := e.made(Made{madeBridge, e.hostShare().Bridge}); err != nil {
		t.Fatal(err)
	}
	if err := e.made(Made{madeIPForward, "0"}); err != nil {
		t.Fatal(err)
	}
	if err := e.made(Made{madeIPForward, "1"}); err != nil { // the value found first stays
		t.Fatal(err)
	}
	h, ok := loadHost(dir)
	want := []Made{{madeBridge, e.hostShare().Bridge}, {madeIPForward, "0"}}
	if diff := cmp.Diff(want, h.Made); !ok || diff != "" {
		t.Errorf("recorded (%v) (-want +got):\n%s", ok, diff)
	}

	legacy := t.TempDir()
	if err := os.WriteFile(ownerFile(), []byte(legacy+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(spireDir(legacy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(spireDir(legacy), "spire.json"), Spire{Addr: "198.51.100.1:4000"}); err != nil {
		t.Fatal(err)
	}
	h, ok = loadHost(legacy)
	want = []Made{{madeBridge, "slipway0"}, {madeCgroup, "/kubepods"}, {madeLoAddr, "198.51.100.1"}}
	if diff := cmp.Diff(want, h.Made); ok || diff != "" {
		t.Errorf("legacy (%v) (-want +got):\n%s", ok, diff)
	}
	// An older slipway's second environment made nothing machine-wide of its own: its SPIRE
	// server listened on the shared address, which stays.
	if err := os.WriteFile(ownerFile(), []byte("/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, _ = loadHost(legacy); len(h.Made) != 0 {
		t.Errorf("legacy second env: made %v, want nothing", h.Made)
	}
}

// A slot whose bridge is on the machine without a live claim (an environment that never went
// down) is passed over; slot 0 is the default directory's whatever is left of it.
func TestClaimHostPassesOverLeftovers(t *testing.T) {
	def := testRunDir(t)
	slotInUse = func(HostShare) bool { return true }
	if s, err := claimHost(def); err != nil || s.Slot != 0 {
		t.Errorf("default dir with slipway0 left over: slot %d, %v; want 0", s.Slot, err)
	}
	order := slotOrder("/other", def)
	if s, err := claimHost("/other"); err == nil {
		t.Errorf("every slot in use: got slot %d (first choice %d), want an error", s.Slot, order[0])
	}
	used := order[0]
	slotInUse = func(s HostShare) bool { return s.Slot == used }
	if s, err := claimHost("/other"); err != nil || s.Slot != order[1] {
		t.Errorf("first choice %d in use: slot %d, %v; want %d", used, s.Slot, err, order[1])
	}
}
