package state

// State migrations (SPEC §6a): what a rollout means for a node's state version and the copy
// of /var/lib its volume may hold. The migrate lane and the rollout both change them, through
// these.

// Migrating records, before the template of a migration to version to is applied, that the
// volume may hold a copy: taken at the version the node ran ready with, or the copy held
// already (a migration that never ran ready: the data it holds is still the last good).
func (ns *NodeState) Migrating(to string) {
	if ns.Copy == nil {
		ns.Copy = &StateCopy{From: ns.StateVersion}
	}
	ns.Copy.To = to
}

// RanReady sets what a template at version that ran ready means for the state: the version
// is the data's now; a copy taken at that version was put back by its state step, and any
// other copy is no longer a backup (the remove-copy step removes it).
func (ns *NodeState) RanReady(version string) {
	ns.StateVersion = version
	if ns.Copy == nil {
		return
	}
	if ns.Copy.From == version {
		ns.Copy = nil
		return
	}
	ns.Copy.To = version
}

// VersionText is a state version as messages say it: "none" for a node that had none.
func VersionText(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
