package central

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"

	"slipway.dev/slipway/internal/spec"
)

// S3Client is the S3 server: its S3 API through minio-go, as the admin, and the Versity S3
// Gateway's admin API (users, buckets and their owners), whose requests minio-go's signer
// signs with the admin's key pair (SigV4, as the gateway's own admin tool does).
type S3Client struct {
	s3            *minio.Client
	admin         *url.URL
	access        string
	secret        string
	region        string
	http          *http.Client
	Reads, Writes int // requests, for the benchmark
}

// ConnectS3 makes the S3 client from the environment. need: the file asks for S3, and a
// missing variable is an error naming it; otherwise (a file without central.s3, whose
// deployment may have left buckets) it is nil, no error, when SLIPWAY_S3_ENDPOINT is unset.
func ConnectS3(need bool) (*S3Client, error) {
	if !need && os.Getenv(spec.EnvCentralS3Endpoint) == "" {
		return nil, nil
	}
	vars := map[string]string{}
	for _, v := range []struct{ name, what string }{
		{spec.EnvCentralS3Endpoint, "the S3 server's URL (http:// or https://)"},
		{spec.EnvCentralS3AdminEndpoint, "the URL of the S3 server's admin API (the Versity S3 Gateway's)"},
		{spec.EnvCentralS3Credentials, "the file with the S3 admin's access_key= and secret_key= lines"},
	} {
		if vars[v.name] = os.Getenv(v.name); vars[v.name] == "" {
			return nil, fmt.Errorf("central: %s is not set: %s", v.name, v.what)
		}
	}
	access, secret, err := readS3Credentials(vars[spec.EnvCentralS3Credentials])
	if err != nil {
		return nil, err
	}
	region := os.Getenv(spec.EnvCentralS3Region)
	if region == "" {
		region = "us-east-1"
	}
	return NewS3Client(vars[spec.EnvCentralS3Endpoint], vars[spec.EnvCentralS3AdminEndpoint], access, secret, region)
}

// NewS3Client is the client of the S3 server at endpoint (its admin API at adminEndpoint) as
// the admin access, secret.
func NewS3Client(endpoint, adminEndpoint, access, secret, region string) (*S3Client, error) {
	ep, err := url.Parse(endpoint)
	if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
		return nil, fmt.Errorf("central: %s is not an http:// or https:// URL", spec.EnvCentralS3Endpoint)
	}
	admin, err := url.Parse(adminEndpoint)
	if err != nil || (admin.Scheme != "http" && admin.Scheme != "https") || admin.Host == "" {
		return nil, fmt.Errorf("central: %s is not an http:// or https:// URL", spec.EnvCentralS3AdminEndpoint)
	}
	c, err := minio.New(ep.Host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""),
		Secure: ep.Scheme == "https", Region: region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("central: S3 %s: %w", ep.Host, err)
	}
	return &S3Client{s3: c, admin: admin, access: access, secret: secret, region: region,
		http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// readS3Credentials reads the admin's key pair; an error names the file, never a line of it.
func readS3Credentials(path string) (access, secret string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("central: %s: %w", spec.EnvCentralS3Credentials, err)
	}
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch strings.TrimSpace(k) {
		case "access_key":
			access = strings.TrimSpace(v)
		case "secret_key":
			secret = strings.TrimSpace(v)
		}
	}
	if access == "" || secret == "" {
		return "", "", fmt.Errorf("central: %s (%s) needs an access_key= and a secret_key= line", spec.EnvCentralS3Credentials, path)
	}
	return access, secret, nil
}

// adminCall sends one request of the admin API (all are PATCH) and decodes its XML answer
// into out when out is not nil. An error quotes the server's code and message, which name
// users and buckets, never a secret.
func (c *S3Client) adminCall(ctx context.Context, path string, query url.Values, header http.Header, body []byte, out any) error {
	u := *c.admin
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	sum := sha256.Sum256(body)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req.ContentLength = int64(len(body))
	req = signer.SignV4(*req, c.access, c.secret, "", c.region)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("S3 admin API %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("S3 admin API %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		var e struct{ Code, Message string }
		_ = xml.Unmarshal(b, &e)
		return &S3Error{Op: path, Status: resp.StatusCode, Code: e.Code, Message: e.Message}
	}
	if out != nil {
		if err := xml.Unmarshal(b, out); err != nil {
			return fmt.Errorf("S3 admin API %s: its answer: %w", path, err)
		}
	}
	return nil
}

// S3Error is a refusal of the S3 server's admin API.
type S3Error struct {
	Op            string
	Status        int
	Code, Message string
}

func (e *S3Error) Error() string {
	return fmt.Sprintf("S3 admin API %s: %d %s: %s", e.Op, e.Status, e.Code, e.Message)
}

// Users returns the server's users: access key → secret key. The admin API gives the secret
// keys; the lane only compares them with the deployment's KV (the mark of its users).
func (c *S3Client) Users(ctx context.Context) (map[string]string, error) {
	c.Reads++
	var res struct {
		Accounts []struct{ Access, Secret string }
	}
	if err := c.adminCall(ctx, "/list-users", nil, nil, nil, &res); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(res.Accounts))
	for _, a := range res.Accounts {
		out[a.Access] = a.Secret
	}
	return out, nil
}

// Buckets returns the server's buckets: name → owner's access key.
func (c *S3Client) Buckets(ctx context.Context) (map[string]string, error) {
	c.Reads++
	var res struct {
		Buckets []struct{ Name, Owner string }
	}
	if err := c.adminCall(ctx, "/list-buckets", nil, nil, nil, &res); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(res.Buckets))
	for _, b := range res.Buckets {
		out[b.Name] = b.Owner
	}
	return out, nil
}

func (c *S3Client) BucketTags(ctx context.Context, bucket string) (map[string]string, error) {
	c.Reads++
	t, err := c.s3.GetBucketTagging(ctx, bucket)
	if err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchTagSet" {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("S3: tags of bucket %s: %w", bucket, err)
	}
	return t.ToMap(), nil
}

// ErrUserExists is CreateUser refused: a user of that access key exists.
var ErrUserExists = errors.New("the S3 user exists")

func (c *S3Client) CreateUser(ctx context.Context, access, secret string) error {
	c.Writes++
	body, err := xml.Marshal(struct {
		XMLName        xml.Name `xml:"Account"`
		Access, Secret string
		Role           string
	}{Access: access, Secret: secret, Role: "user"})
	if err != nil {
		return err
	}
	err = c.adminCall(ctx, "/create-user", nil, nil, body, nil)
	var se *S3Error
	if errors.As(err, &se) && se.Code == "XAdminUserExists" {
		return ErrUserExists
	}
	return err
}

func (c *S3Client) DeleteUser(ctx context.Context, access string) error {
	c.Writes++
	return c.adminCall(ctx, "/delete-user", url.Values{"access": {access}}, nil, nil, nil)
}

// CreateBucket makes the bucket owned by owner with its tags in one request (the tags are
// part of the bucket's creation, so a bucket is never without its mark).
func (c *S3Client) CreateBucket(ctx context.Context, bucket, owner string, tg map[string]string) error {
	c.Writes++
	type tag struct{ Key, Value string }
	cfg := struct {
		XMLName xml.Name `xml:"CreateBucketConfiguration"`
		Tags    []tag    `xml:"Tags>Tag"`
	}{}
	for k, v := range tg {
		cfg.Tags = append(cfg.Tags, tag{k, v})
	}
	body, err := xml.Marshal(cfg)
	if err != nil {
		return err
	}
	return c.adminCall(ctx, "/"+url.PathEscape(bucket)+"/create", nil, http.Header{"X-Vgw-Owner": {owner}}, body, nil)
}

func (c *S3Client) SetBucketOwner(ctx context.Context, bucket, owner string) error {
	c.Writes++
	return c.adminCall(ctx, "/change-bucket-owner", url.Values{"bucket": {bucket}, "owner": {owner}}, nil, nil, nil)
}

// RemoveBucket removes the bucket with its objects and unfinished uploads: S3 removes only
// an empty bucket.
func (c *S3Client) RemoveBucket(ctx context.Context, bucket string) error {
	c.Writes++
	for u := range c.s3.ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err != nil {
			return fmt.Errorf("S3: uploads in bucket %s: %w", bucket, u.Err)
		}
		if err := c.s3.RemoveIncompleteUpload(ctx, bucket, u.Key); err != nil {
			return fmt.Errorf("S3: bucket %s: abort an upload: %w", bucket, err)
		}
	}
	objs := c.s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true})
	for e := range c.s3.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
		if e.Err != nil {
			return fmt.Errorf("S3: bucket %s: remove object %s: %w", bucket, e.ObjectName, e.Err)
		}
	}
	if err := c.s3.RemoveBucket(ctx, bucket); err != nil {
		return fmt.Errorf("S3: remove bucket %s: %w", bucket, err)
	}
	return nil
}
