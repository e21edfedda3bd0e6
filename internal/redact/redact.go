// Package redact hides what a URL may carry that grants access: the password of its user info
// and the values of its query (an access token, a pre-signed URL's signature), so that a URL can
// be named in a message, a lock or a listing. The image pushes and the HTTP state backend share
// it (issue 35).
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Hidden replaces each hidden value.
const Hidden = "REDACTED"

// URL is raw with its password shown as xxxxx and the value of every query parameter for which
// keep is false (keep may be nil: none is kept) shown as REDACTED. A URL that does not parse
// keeps its scheme, host and path and loses its user info and query.
func URL(raw string, keep func(param string) bool) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsable(raw)
	}
	return Parsed(u, keep)
}

// Parsed is URL for a parsed URL; u is not changed.
func Parsed(u *url.URL, keep func(param string) bool) string {
	c := *u
	if c.RawQuery != "" {
		q := c.Query()
		for k, vs := range q {
			if keep == nil || !keep(k) {
				for i := range vs {
					vs[i] = Hidden
				}
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// unparsable cuts what may be a credential out of a URL url.Parse refused.
func unparsable(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + "?" + Hidden
	}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		if i := strings.Index(s, "://"); i >= 0 && i < at {
			return s[:i+3] + "xxxxx" + s[at:]
		}
	}
	return s
}

// URLErrors rewrites, in place, the URL of every *url.Error inside err (wrapped or joined)
// with URL, so that the error names the request without its credentials.
func URLErrors(err error, keep func(param string) bool) {
	switch e := err.(type) {
	case nil:
		return
	case *url.Error:
		e.URL = URL(e.URL, keep)
	case interface{ Unwrap() []error }:
		// Joined errors (uploads that ran side by side) may each carry a URL.
		for _, x := range e.Unwrap() {
			URLErrors(x, keep)
		}
		return
	}
	URLErrors(errors.Unwrap(err), keep)
}
