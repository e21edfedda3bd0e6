package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"

	"slipway.dev/slipway/internal/parallel"
	"slipway.dev/slipway/internal/spec"
)

// StampApplied sets spec.AnnotationAppliedHash on o's top-level metadata: the first 16 hex
// digits of the SHA-256 of o's JSON without that annotation (encoding/json writes struct
// fields in their order and map keys sorted, so the same object gives the same hash). An
// object whose hash annotation differs from its live one is not Subset of it: that is how the
// plan sees a field slipway applied before and no longer sets (SPEC "plan shows every
// change") without a request for each unchanged object.
func StampApplied(o Object) error {
	a := maps.Clone(o.GetAnnotations())
	delete(a, spec.AnnotationAppliedHash)
	if len(a) == 0 {
		a = nil
	}
	o.SetAnnotations(a)
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("%s %s: applied hash: %w", kindOf(o), o.GetName(), err)
	}
	sum := sha256.Sum256(data)
	if a == nil {
		a = map[string]string{}
	}
	a[spec.AnnotationAppliedHash] = hex.EncodeToString(sum[:8])
	o.SetAnnotations(a)
	return nil
}

// stampAll stamps objs on every CPU: marshalling costs some 10 µs an object, 5,000 of them in a
// group of a thousand nodes.
func stampAll(objs []Object) error {
	errs := make([]error, len(objs))
	chunks := max(min(runtime.GOMAXPROCS(0), len(objs)), 1)
	parallel.ForEach(chunks, parallel.Indexes(chunks), func(c int) {
		for i := c; i < len(objs); i += chunks {
			errs[i] = StampApplied(objs[i])
		}
	})
	return errors.Join(errs...)
}
