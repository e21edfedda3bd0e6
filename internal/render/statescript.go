package render

import "slipway.dev/slipway/internal/spec"

// The state step of a versioned node (SPEC §6a, FR-006b). It runs as the init container
// InitContainerState of the node's pod (mode "start", before the node's own container) and as
// the removal Job after a successful migration (mode "remove"). The same text runs in both,
// and statescript_test.go runs exactly this text with /bin/sh.
const (
	InitContainerState = spec.InitContainerState
	// EnvStateVersion is the state version of the template the step runs for; "" is a node
	// deployed before it declared one.
	EnvStateVersion = "SLIPWAY_STATE_VERSION"
	// EnvStateRestore is set only in the template a failed migration goes back to: the
	// version the failed release was handed, whose copy (taken at EnvStateVersion) its state
	// step puts back (issue 35: a copy of another hand-over is refused, not put back).
	EnvStateRestore = "SLIPWAY_STATE_RESTORE"
	// StateMetaDir is slipway's directory on the state volume, beside the node's own data:
	// version (the version the data was last handed to), copy/ (the copy held: data/, from,
	// to, complete), copy.partial/ (a copy being made), restore/ (a restore under way), removing/.
	StateMetaDir = ".slipway-state"
)

// StateScript needs sh, cp (or tar), mv, rm, mkdir, cat, df and du: what coreutils or busybox
// give any node image. Every step can be killed and run again: each phase ends with a marker
// (a file written last, or an atomic rename on the volume), and a rerun resumes from it.
//
// A copy records the version it was taken at (from) and the version the data was handed to
// with it (to, issue 35): it is tied to the hand-over in progress while the data is at its
// "to" (or still at its "from": killed before the hand-over). A copy that is not tied is
// never put back and never kept as a backup: its data is not the one the node was handed.
// A copy an older slipway left, without "to", is tied to no hand-over: it may be the data
// before a release that never ran ready, or one that ran for months since. It is never put
// back nor handed on: a migration drops it and copies afresh; going back to its version, or a
// rollback template, refuses with nothing changed.
//
// In mode start, with V the template's version, D the version the data was handed to, and R
// the hand-over a rollback template names (EnvStateRestore; "" in every other template):
//   - a restore under way is finished first;
//   - R set (the template a failed migration to R goes back to): the copy taken at V and
//     handed to R goes back into place by renames, the failed data dropped; with the data
//     at V already, nothing; anything else is refused, nothing changed;
//   - a copy from V tied to D, D not V: the file went back to V before the release after V
//     ran ready: the copy goes back into place; an older slipway's copy from V is refused;
//   - D is V: nothing (a restart, or a release that keeps the layout), but a copy taken at V
//     itself (killed before D changed) is dropped;
//   - else a migration from D to V: a copy tied to D (of the data the last good release ran
//     on) is kept and handed to V; one not tied (an older slipway's included) is dropped;
//     without a copy the free space is checked and the data copied; then D becomes V.
//
// In mode remove (the removal Job after the release at V ran ready), the copy goes.
const StateScript = `set -eu
root=${SLIPWAY_STATE_ROOT:-/var/lib}
to=${SLIPWAY_STATE_VERSION-}
back=${SLIPWAY_STATE_RESTORE-}
meta=$root/` + StateMetaDir + `
say() { printf 'slipway-state: %s\n' "$*"; }
fail() { say "$*" >&2; exit 1; }
# each calls "$1" with every entry of directory $2 the copy covers, and its name: all but
# slipway's own directory and lost+found, which belongs to the file system.
each() {
	for e in "$2"/* "$2"/.[!.]* "$2"/..?*; do
		if [ ! -e "$e" ] && [ ! -L "$e" ]; then continue; fi
		n=${e##*/}
		case $n in ` + StateMetaDir + `|lost+found) continue ;; esac
		"$1" "$e" "$n"
	done
}
dataversion() { if [ -f "$meta/version" ]; then cat "$meta/version"; fi; }
setversion() {
	printf '%s' "$1" >"$meta/version.new"
	mv -f "$meta/version.new" "$meta/version"
}
# drop removes a directory of meta: renamed first, so that a kill never leaves half of it
# where a rerun would read it.
drop() {
	rm -rf "$meta/removing"
	if [ -e "$1" ]; then mv "$1" "$meta/removing"; fi
	rm -rf "$meta/removing"
}
mark() { found=1; }
held() { [ -f "$meta/copy/complete" ]; }
copyfrom() { cat "$meta/copy/from"; }
# legacy: the copy was left by an older slipway, which did not record its hand-over.
legacy() { [ ! -f "$meta/copy/to" ]; }
# copyto is the version the data was handed to with the copy; an older slipway's copy has
# none, and is tied to no hand-over (no version is "").
copyto() { if legacy; then printf '%s' '(not recorded)'; else cat "$meta/copy/to"; fi; }
handto() {
	printf '%s' "$1" >"$meta/copy/to.new"
	mv -f "$meta/copy/to.new" "$meta/copy/to"
}
held_text() {
	if ! held; then
		printf 'no copy'
	elif legacy; then
		printf "a copy taken at version '%s' by an older slipway, which did not record the version it was handed to" "$(copyfrom)"
	else
		printf "a copy taken at version '%s' and handed to '%s'" "$(copyfrom)" "$(copyto)"
	fi
}
addsize() { need=$((need + $(du -sk -- "$1" | { read -r k _; echo "$k"; }))); }
copy() {
	need=0
	each addsize "$root"
	avail=$(df -Pk "$root" | { read -r _; read -r _ _ _ a _; echo "$a"; })
	if [ "$need" -gt "$avail" ]; then
		fail "not enough free space to copy $root before the migration to version '$to': it needs ${need} KiB, the volume has ${avail} KiB free; nothing was changed"
	fi
	p=$meta/copy.partial
	mkdir -p "$p/data"
	: >"$p/probe"
	if cp -a --reflink=auto "$p/probe" "$p/probe2" 2>/dev/null; then
		how=reflink
	elif cp -a "$p/probe" "$p/probe2" 2>/dev/null; then
		how=cp
	elif tar --xattrs -cf /dev/null -C "$p" probe 2>/dev/null; then
		how=tarx
	else
		how=tar
	fi
	rm -f "$p/probe" "$p/probe2"
	# One cp (or tar) for every entry, so that hard links between them stay links.
	set --
	for e in "$root"/* "$root"/.[!.]* "$root"/..?*; do
		if [ ! -e "$e" ] && [ ! -L "$e" ]; then continue; fi
		case ${e##*/} in ` + StateMetaDir + `|lost+found) continue ;; esac
		case $how in tar*) set -- "$@" "./${e##*/}" ;; *) set -- "$@" "$e" ;; esac
	done
	case $how in
	reflink) cp -a --reflink=auto -- "$@" "$p/data/" ;;
	cp) cp -a -- "$@" "$p/data/" ;;
	tarx) (cd "$root" && tar --xattrs -cf - -- "$@") | (cd "$p/data" && tar --xattrs --xattrs-include='*' -xpf -) ;;
	tar) (cd "$root" && tar -cf - -- "$@") | (cd "$p/data" && tar -xpf -) ;;
	esac
	printf '%s' "$(dataversion)" >"$p/from"
	printf '%s' "$to" >"$p/to"
	: >"$p/complete"
	mv "$p" "$meta/copy"
	say "copied $root (${need} KiB, $how) before the migration from version '$(cat "$meta/copy/from")' to '$to'"
}
moveout() {
	if [ -e "$meta/restore/out/$2" ] || [ -L "$meta/restore/out/$2" ]; then fail "restore: $meta/restore/out/$2 is in the way"; fi
	mv -- "$1" "$meta/restore/out/$2"
}
movein() {
	if [ -e "$root/$2" ] || [ -L "$root/$2" ]; then fail "restore: $root/$2 is in the way"; fi
	mv -- "$1" "$root/$2"
}
# restore puts the copy back by renames on the volume, in three phases each ended by its
# marker: the data of the failed release out, the copy in (and the version back), clean up.
restore() {
	if [ ! -f "$meta/restore/from" ]; then
		drop "$meta/restore"
		mkdir -p "$meta/restore/out"
		cat "$meta/copy/from" >"$meta/restore/from.new"
		mv "$meta/restore/from.new" "$meta/restore/from"
	fi
	if [ ! -f "$meta/restore/moved-out" ]; then
		each moveout "$root"
		: >"$meta/restore/moved-out"
	fi
	if [ ! -f "$meta/restore/moved-in" ]; then
		if [ -d "$meta/copy/data" ]; then each movein "$meta/copy/data"; fi
		setversion "$(cat "$meta/restore/from")"
		: >"$meta/restore/moved-in"
	fi
	drop "$meta/copy"
	drop "$meta/restore"
	say "put back the copy of $root taken at version '$(dataversion)'; the data of the failed release is removed"
}
mkdir -p "$meta"
rm -rf "$meta/copy.partial" "$meta/removing" "$meta/version.new" "$meta/copy/to.new"
case ${1:-start} in
start)
	if [ -d "$meta/restore" ]; then
		if [ -f "$meta/restore/from" ]; then restore; else drop "$meta/restore"; fi
	fi
	d=$(dataversion)
	if [ -n "$back" ]; then
		if [ "$d" = "$to" ]; then
			# The failed release's pod never handed the data on (or the restore is done).
			if held && [ "$(copyfrom)" = "$to" ]; then drop "$meta/copy"; fi
		elif [ "$d" = "$back" ] && held && [ "$(copyfrom)" = "$to" ] && [ "$(copyto)" = "$back" ]; then
			restore
		else
			fail "refusing to put a copy back: this template goes back to version '$to' from the migration to '$back', but the data is at version '$d' and the volume holds $(held_text); nothing was changed: the node stays down until the volume is fixed by hand or another release is applied"
		fi
	elif held && [ "$(copyfrom)" = "$to" ] && [ "$d" != "$to" ] && [ "$(copyto)" = "$d" ]; then
		restore
	elif held && legacy && [ "$(copyfrom)" = "$to" ] && [ "$d" != "$to" ]; then
		fail "refusing to go back to version '$to' from the data at version '$d': the volume holds $(held_text), so slipway cannot tell whether it is the data before the release at '$d' or older; nothing was changed. To put it back, move $meta/copy/data/* into $root in place of the data and write '$to' to $meta/version; to run version '$to' on the data as it is, remove $meta/copy; or apply the release at '$d' again"
	elif [ "$d" = "$to" ]; then
		# A copy taken at this very version was never handed on (killed before the version
		# changed): it is no backup of anything, and would go stale.
		if held && [ "$(copyfrom)" = "$to" ]; then drop "$meta/copy"; fi
	else
		if held && legacy; then
			say "dropping $(held_text): it is tied to no hand-over, so it is no backup of the data at version '$d'"
			drop "$meta/copy"
		elif held && [ "$(copyto)" != "$d" ] && [ "$(copyfrom)" != "$d" ]; then
			say "dropping $(held_text): the data was handed to version '$d' since, so it is no backup of it"
			drop "$meta/copy"
		fi
		if held; then
			say "keeping the copy taken at version '$(copyfrom)': no release has run ready since"
			handto "$to"
		else
			found=
			each mark "$root"
			if [ -n "$found" ]; then copy; fi
		fi
		setversion "$to"
	fi
	;;
remove)
	if [ -d "$meta/restore" ]; then fail "a restore is under way: the copy stays"; fi
	d=$(dataversion)
	if [ "$d" != "$to" ]; then fail "the data is at version '$d', not '$to': the copy stays"; fi
	drop "$meta/copy"
	say "removed the copy of $root"
	;;
*) fail "unknown mode $1" ;;
esac
`
