package central

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// The S3 part of the lane (central.s3): key pairs and buckets on an S3 server with the
// Versity S3 Gateway's admin API. A key pair is a user whose access key is the pair's
// CentralName; its secret key is made once, kept in the deployment's KV entry
// <kvMount>/slipway/<identity>/s3/<pair> (fields access_key and secret_key, the deployment in
// its custom metadata) and never made again. The server's users carry no label, so the mark
// of a user is that entry: a user is the deployment's when the entry is (its metadata) and
// holds the user's secret key. The entry is written before the user is made, so a user of
// slipway's is never without it. A bucket is made with its tag slipway.dev/deployment=<identity>
// in the same request, owned by one of the key pairs.

// S3 is what the lane asks of the S3 server, as its admin.
type S3 interface {
	// Users returns the users: access key → secret key (compared, never shown).
	Users(ctx context.Context) (map[string]string, error)
	// Buckets returns the buckets: name → the owner's access key.
	Buckets(ctx context.Context) (map[string]string, error)
	BucketTags(ctx context.Context, bucket string) (map[string]string, error)
	// CreateUser makes a user of role user; ErrUserExists when one of that access key is.
	CreateUser(ctx context.Context, access, secret string) error
	DeleteUser(ctx context.Context, access string) error
	CreateBucket(ctx context.Context, bucket, owner string, tags map[string]string) error
	SetBucketOwner(ctx context.Context, bucket, owner string) error
	// RemoveBucket removes the bucket and everything in it.
	RemoveBucket(ctx context.Context, bucket string) error
}

func (l *Lane) pairPath(key string) string { return spec.CentralKeyPairPath(l.Identity, key) }

func (l *Lane) bucketName(key string) string { return spec.CentralBucketName(l.Identity, key) }

// pair is what the KV and the server say of one key pair.
type pair struct {
	key, access    string
	marked, stored bool   // the entry carries the mark; it holds a key pair
	secret         string // the stored secret key
}

// readPair reads a key pair's KV entry; an entry of another's mark is a conflict.
func (l *Lane) readPair(ctx context.Context, key string) (pair, error) {
	p := pair{key: key, access: l.name(key)}
	path := l.pairPath(key)
	meta, err := l.Bao.Read(ctx, l.metaPath(path))
	if err != nil || meta == nil {
		return p, err
	}
	if owner := ownerOf(meta); owner != l.Identity {
		return p, &ConflictError{What: "KV entry", Name: l.Central.KVMount + "/" + path, Holder: markText(owner)}
	}
	p.marked = true
	if seconds(meta["current_version"]) <= 0 {
		return p, nil
	}
	d, err := l.Bao.Read(ctx, l.dataPath(path))
	if err != nil || d == nil {
		return p, err
	}
	data, _ := d["data"].(map[string]any)
	p.secret = str(data[spec.CentralS3SecretField])
	p.stored = p.secret != "" && str(data[spec.CentralS3AccessField]) == p.access
	return p, nil
}

// owns reports whether the server's user secret is the pair's: the mark of the user.
func (p pair) owns(secret string) bool {
	return p.stored && subtle.ConstantTimeCompare([]byte(p.secret), []byte(secret)) == 1
}

func (p pair) conflict() error {
	return &ConflictError{What: "S3 user", Name: p.access,
		Why: "has a secret key the deployment's KV entry does not hold"}
}

// listPairs lists the key pairs of the deployment's KV (their keys).
func (l *Lane) listPairs(ctx context.Context) ([]string, error) {
	keys, err := l.Bao.List(ctx, l.metaPath("slipway/"+l.Identity+"/s3"))
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(keys, func(k string) bool { return strings.HasSuffix(k, "/") }), nil
}

// planS3 compares central.s3 with the server (what the file has not is removed, unless
// keepClaims keeps a bucket and its owner).
func (l *Lane) planS3(ctx context.Context, keepClaims bool, p *Planned) error {
	users, err := l.S3.Users(ctx)
	if err != nil {
		return err
	}
	buckets, err := l.S3.Buckets(ctx)
	if err != nil {
		return err
	}
	s := l.Central.S3
	if s == nil {
		s = &spec.CentralS3{}
	}
	for _, kp := range s.KeyPairs {
		pr, err := l.readPair(ctx, kp.Key)
		if err != nil {
			return err
		}
		secret, exists := users[pr.access]
		switch {
		case exists && !pr.owns(secret):
			return pr.conflict()
		case exists:
		case pr.stored:
			p.add(plan.CentralKeyPair, kp.Key, pr.access, plan.Create, "the user is made again with the secret key kept in KV")
		default:
			p.add(plan.CentralKeyPair, kp.Key, pr.access, plan.Create, "a new secret key, kept in "+l.Central.KVMount+"/"+l.pairPath(kp.Key))
		}
	}
	for _, b := range s.Buckets {
		n, owner := l.bucketName(b.Key), l.name(b.Owner)
		have, ok := buckets[n]
		if !ok {
			p.add(plan.CentralBucket, b.Key, n, plan.Create, "owner "+owner)
			continue
		}
		if err := l.bucketMine(ctx, n); err != nil {
			return err
		}
		if have != owner {
			p.add(plan.CentralBucket, b.Key, n, plan.Update, "owner "+have+" → "+owner)
		}
		l.recordedBucketProtect(b, p)
	}
	return l.planS3Removals(ctx, buckets, keepClaims, false, p)
}

// planS3Removals adds the removal of the deployment's buckets and key pairs: those the file
// no longer has (a plan), or every one (destroy). keepClaims keeps the buckets and their
// owners; a protected bucket refuses.
func (l *Lane) planS3Removals(ctx context.Context, buckets map[string]string, keepClaims, destroy bool, p *Planned) error {
	keys, err := l.listPairs(ctx)
	if err != nil {
		return err
	}
	mine, err := l.myBuckets(ctx, buckets, keys)
	if err != nil {
		return err
	}
	dropped, lost, pairWhy := " is no longer in the file and", "no longer in the file: its objects are lost", "no longer in the file"
	if destroy {
		dropped, lost, pairWhy = "", "its objects are lost", ""
	}
	keep := map[string]bool{}
	var protected []string
	for _, n := range mine {
		switch {
		case !destroy && l.fileBucket(n) != nil:
		case keepClaims:
			keep[buckets[n]] = true
			p.Notes = append(p.Notes, fmt.Sprintf("central: bucket %s%s stays (--keep-claims), with its owner %s", n, dropped, buckets[n]))
		case l.bucketProtected(n):
			protected = append(protected, n)
		default:
			p.add(plan.CentralBucket, "", n, plan.Delete, lost)
		}
	}
	if len(protected) > 0 {
		return &ProtectedBucketsError{Buckets: protected, Removed: l.protectedRemoved(protected)}
	}
	for _, k := range keys {
		if keep[l.name(k)] || (!destroy && l.Central.S3 != nil && l.Central.S3.KeyPair(k) != nil) {
			continue
		}
		p.add(plan.CentralKeyPair, k, l.name(k), plan.Delete, pairWhy)
	}
	return nil
}

// myBuckets are the buckets with the deployment's tag among those it may have made: owned
// by one of its key pairs (keys), or of a name it would give.
func (l *Lane) myBuckets(ctx context.Context, buckets map[string]string, keys []string) ([]string, error) {
	owners := map[string]bool{}
	for _, k := range keys {
		owners[l.name(k)] = true
	}
	var out []string
	for n, owner := range buckets {
		if !owners[owner] && !strings.HasPrefix(n, l.Identity+".") && l.fileBucket(n) == nil {
			continue
		}
		tg, err := l.S3.BucketTags(ctx, n)
		if err != nil {
			return nil, err
		}
		if tg[spec.CentralS3Tag] == l.Identity {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// bucketMine is nil when bucket n carries the deployment's tag, a conflict otherwise.
func (l *Lane) bucketMine(ctx context.Context, n string) error {
	tg, err := l.S3.BucketTags(ctx, n)
	if err != nil {
		return err
	}
	if v := tg[spec.CentralS3Tag]; v != l.Identity {
		return &ConflictError{What: "S3 bucket", Name: n, Holder: markText(v)}
	}
	return nil
}

// fileBucket is the file's bucket of S3 name n, or nil.
func (l *Lane) fileBucket(n string) *spec.CentralBucket {
	if l.Central.S3 == nil {
		return nil
	}
	for i, b := range l.Central.S3.Buckets {
		if l.bucketName(b.Key) == n {
			return &l.Central.S3.Buckets[i]
		}
	}
	return nil
}

// applyS3 makes a key pair or a bucket, or gives a bucket its owner.
func (l *Lane) applyS3(ctx context.Context, c plan.CentralChange) error {
	if c.What == plan.CentralBucket {
		b := l.fileBucket(c.Name)
		if b == nil {
			return fmt.Errorf("bucket %s is not in the file", c.Name)
		}
		if c.Action == plan.Update {
			if err := l.bucketMine(ctx, c.Name); err != nil {
				return err
			}
			return l.S3.SetBucketOwner(ctx, c.Name, l.name(b.Owner))
		}
		return l.S3.CreateBucket(ctx, c.Name, l.name(b.Owner), map[string]string{spec.CentralS3Tag: l.Identity})
	}
	if l.Central.S3 == nil || l.Central.S3.KeyPair(c.Key) == nil {
		return fmt.Errorf("key pair %s is not in the file", c.Key)
	}
	pr, err := l.storePair(ctx, c.Key)
	if err != nil {
		return err
	}
	err = l.S3.CreateUser(ctx, pr.access, pr.secret)
	if errors.Is(err, ErrUserExists) {
		// Made meanwhile: the deployment's only when it has the stored secret key.
		users, err := l.S3.Users(ctx)
		if err != nil {
			return err
		}
		if !pr.owns(users[pr.access]) {
			return pr.conflict()
		}
		return nil
	}
	return err
}

// storePair writes the key pair's entry unless it holds one: the mark first, then a new
// secret key with check-and-set 0, so that no run replaces one made before; it returns what
// the entry holds.
func (l *Lane) storePair(ctx context.Context, key string) (pair, error) {
	pr, err := l.readPair(ctx, key)
	if err != nil || pr.stored {
		return pr, err
	}
	path := l.pairPath(key)
	if !pr.marked {
		if err := l.Bao.Write(ctx, l.metaPath(path), map[string]any{
			"custom_metadata": map[string]any{spec.CentralMetaKey: l.Identity}}); err != nil {
			return pr, err
		}
	}
	secret, err := l.Random(spec.CentralS3SecretLength, spec.DefaultCentralAlphabet)
	if err != nil {
		return pr, err
	}
	err = l.Bao.Write(ctx, l.dataPath(path), map[string]any{"options": map[string]any{"cas": 0},
		"data": map[string]any{spec.CentralS3AccessField: pr.access, spec.CentralS3SecretField: secret}})
	if err != nil && !strings.Contains(err.Error(), "check-and-set") {
		return pr, err
	}
	if pr, err = l.readPair(ctx, key); err == nil && !pr.stored {
		err = fmt.Errorf("KV entry %s/%s holds no key pair for %s (written by someone else?)", l.Central.KVMount, path, pr.access)
	}
	return pr, err
}

// removeS3 removes a bucket (with its objects) or a key pair (the user, then its entry),
// each after its mark is read again.
func (l *Lane) removeS3(ctx context.Context, c plan.CentralChange) error {
	if c.What == plan.CentralBucket {
		// A saved plan is a file anyone may edit: a protected bucket is never removed.
		if l.bucketProtected(c.Name) {
			return &ProtectedBucketsError{Buckets: []string{c.Name}}
		}
		buckets, err := l.S3.Buckets(ctx)
		if err != nil {
			return err
		}
		if _, ok := buckets[c.Name]; !ok {
			return nil
		}
		if err := l.bucketMine(ctx, c.Name); err != nil {
			return err
		}
		return l.S3.RemoveBucket(ctx, c.Name)
	}
	key := c.Key
	if key == "" || l.name(key) != c.Name {
		return fmt.Errorf("key pair %s: the change names no key pair of the deployment", c.Name)
	}
	pr, err := l.readPair(ctx, key)
	if err != nil || !pr.marked {
		return err
	}
	users, err := l.S3.Users(ctx)
	if err != nil {
		return err
	}
	if secret, ok := users[pr.access]; ok {
		if !pr.owns(secret) {
			return pr.conflict()
		}
		if err := l.S3.DeleteUser(ctx, pr.access); err != nil {
			return err
		}
	}
	return l.Bao.Delete(ctx, l.metaPath(l.pairPath(key)))
}

// ConnectS3 gives the lane its S3 server from the environment: need, when the file has
// central.s3 (a missing variable is then an error naming it); otherwise only when
// SLIPWAY_S3_ENDPOINT is set, to find what the deployment left there.
func (l *Lane) ConnectS3(need bool) error {
	c, err := ConnectS3(need)
	if err == nil && c != nil {
		l.S3 = c
	}
	return err
}

// planDestroyS3 adds the removal of every bucket and key pair with the deployment's mark; a
// protected bucket refuses destroy unless keepClaims keeps the buckets (and their owners).
func (l *Lane) planDestroyS3(ctx context.Context, keepClaims bool, p *Planned) error {
	buckets, err := l.S3.Buckets(ctx)
	if err != nil {
		return err
	}
	return l.planS3Removals(ctx, buckets, keepClaims, true, p)
}
