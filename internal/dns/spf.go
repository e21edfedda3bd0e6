package dns

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The zone's SPF is one TXT record among the apex's others, and a zone has one SPF record
// (RFC 7208 3.2): slipway's owner TXT for it names which value is slipway's, by a digest
// (`,spf=<digest>`), so that another party's SPF beside it is told apart. Theirs is a
// conflict for a publish, and is never removed with slipway's (issue 35 item 7).

// spfDigest names an SPF value in the owner TXT: the text itself may hold `,` and `=`.
func spfDigest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:8])
}

// OwnerTextOf is the owner TXT's text of s: OwnerText, and for the SPF the digest of its value.
func (s Set) OwnerTextOf(owner string) string {
	text := OwnerText(owner, s.Node)
	if s.Kind == KindSPF && len(s.Values) == 1 {
		text += ",spf=" + spfDigest(s.Values[0])
	}
	return text
}

// splitSPF parts the SPF records seen at the apex into slipway's (mine) and the others, by
// the digest the owner TXT (ours, one text) names. An owner TXT written before the digest
// was (none in it) owns the one SPF record; with more, which is slipway's is not known: ok
// is false.
func splitSPF(seen Seen) (mine, others []Record, ok bool) {
	digest := ""
	for part := range strings.SplitSeq(seen.Owner[0], ",") {
		if v, found := strings.CutPrefix(part, "spf="); found {
			digest = v
		}
	}
	if digest == "" {
		return seen.Records, nil, len(seen.Records) <= 1
	}
	for _, r := range seen.Records {
		if spfDigest(r.Value) == digest {
			mine = append(mine, r)
		} else {
			others = append(others, r)
		}
	}
	return mine, others, true
}
