package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"go.yaml.in/yaml/v3"
)

// `central.s3`: a deployment's S3 buckets and key pairs (issue 44). A key pair is a user of
// the S3 server (its access key the pair's CentralName), its secret key made once and kept in
// the deployment's KV; a bucket is owned by one of the key pairs, which may read and write it.
const (
	// The S3 server is the environment's: the S3 API, the admin API (the Versity S3
	// Gateway's: users, buckets and their owners) and a file with its admin's key pair
	// (access_key= and secret_key= lines).
	EnvCentralS3Endpoint      = "SLIPWAY_S3_ENDPOINT"
	EnvCentralS3AdminEndpoint = "SLIPWAY_S3_ADMIN_ENDPOINT"
	EnvCentralS3Credentials   = "SLIPWAY_S3_CREDENTIALS_FILE"
	// EnvCentralS3Region is the region requests are signed for; us-east-1 unless set.
	EnvCentralS3Region = "SLIPWAY_S3_REGION"

	// The fields of a key pair's KV entry.
	CentralS3AccessField = "access_key"
	CentralS3SecretField = "secret_key"
	// CentralS3SecretLength is the length of a generated secret key (A–Z a–z 0–9), as AWS's.
	CentralS3SecretLength = 40
	// CentralS3Tag is the bucket tag that names the deployment (the mark of ownership).
	CentralS3Tag = CentralMetaKey

	maxBucketName = 63
)

// CentralS3 is `central.s3`.
type CentralS3 struct {
	Buckets  []CentralBucket
	KeyPairs []CentralKeyPair
	Line     int
}

// CentralBucket is a bucket the deployment owns.
type CentralBucket struct {
	Key     string // the file's name of it; its S3 name is CentralBucketName(identity, Key)
	Owner   string // the key of a key pair
	Protect bool   // destroy refuses to remove it
	Line    int
}

// CentralKeyPair is an S3 user of the deployment.
type CentralKeyPair struct {
	Key  string
	Line int
}

// KeyPair returns the key pair called key, or nil.
func (s *CentralS3) KeyPair(key string) *CentralKeyPair {
	for i := range s.KeyPairs {
		if s.KeyPairs[i].Key == key {
			return &s.KeyPairs[i]
		}
	}
	return nil
}

// CentralBucketName is the S3 name of a deployment's bucket: `<identity>.<key>` (lowercase
// letters, digits, '-' and '.', as bucket names are). S3 cuts names at 63 characters, so a
// longer one is its first 49 characters (without a trailing '.' or '-'), '.', '0' and 12 hex
// digits of the SHA-256 of the whole: its last label starts with a digit, a key with a
// letter, so a shortened name never equals a whole one.
func CentralBucketName(identity, key string) string {
	n := identity + "." + key
	if len(n) <= maxBucketName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return strings.TrimRight(n[:maxBucketName-1-1-centralHashChars], ".-") + ".0" + hex.EncodeToString(sum[:])[:centralHashChars]
}

// CentralKeyPairPath is where a deployment's key pair lives in the KV mount: beside its
// entries, under s3/ (an entry's name is a DNS label, so never "s3/…").
func CentralKeyPairPath(identity, key string) string {
	return "slipway/" + identity + "/s3/" + key
}

// centralS3 decodes `central.s3`.
func (d *decoder) centralS3(n *yaml.Node, p string) *CentralS3 {
	m, ok := d.mapping(n, p, centralS3Fields)
	if !ok {
		return nil
	}
	s := &CentralS3{Line: deref(n).Line}
	for _, e := range d.entries(m["keyPairs"], p+".keyPairs") {
		q := p + ".keyPairs." + e.key
		d.centralKey(e, q)
		d.mapping(e.val, q, centralKeyPairFields)
		s.KeyPairs = append(s.KeyPairs, CentralKeyPair{Key: e.key, Line: e.keyNode.Line})
	}
	for _, e := range d.entries(m["buckets"], p+".buckets") {
		q := p + ".buckets." + e.key
		d.centralKey(e, q)
		b := CentralBucket{Key: e.key, Line: e.keyNode.Line}
		bm, ok := d.mapping(e.val, q, centralBucketFields)
		if !ok {
			continue
		}
		if x := bm["owner"]; x != nil {
			if v, ok := d.str(x, q+".owner"); ok {
				b.Owner = v
				if s.KeyPair(v) == nil {
					d.errAt(deref(x), q+".owner", "%q is not a key pair of central.s3.keyPairs", v)
				}
			}
		} else {
			d.lacks(deref(e.val), q, "owner", "is required: the key pair that owns the bucket")
		}
		if x := bm["protect"]; x != nil {
			b.Protect, _ = d.boolean(x, q+".protect")
		}
		s.Buckets = append(s.Buckets, b)
	}
	if len(s.Buckets)+len(s.KeyPairs) == 0 {
		d.add(s.Line, p, "has no buckets or key pairs: leave the section out")
	}
	return s
}
