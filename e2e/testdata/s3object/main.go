// Command s3object is the S3 client of TestRealCentralS3's service image: it reads a key pair
// from the files its secrets sidecar wrote, puts an object into a bucket with it, reads it
// back and prints what it read (never the key pair). Static, so it runs in a busybox tree.
//
//	s3object <endpoint> <bucket> <object> <body>
package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "s3object:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: s3object <endpoint> <bucket> <object> <body>")
	}
	access, err := os.ReadFile("/run/secrets/s3-access")
	if err != nil {
		return err
	}
	secret, err := os.ReadFile("/run/secrets/s3-secret")
	if err != nil {
		return err
	}
	u, err := url.Parse(args[0])
	if err != nil {
		return err
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(string(access), string(secret), ""),
		Secure: u.Scheme == "https", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bucket, object, body := args[1], args[2], args[3]
	if _, err := c.PutObject(ctx, bucket, object, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, object, err)
	}
	o, err := c.GetObject(ctx, bucket, object, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("get %s/%s: %w", bucket, object, err)
	}
	got, err := io.ReadAll(o)
	if err != nil {
		return fmt.Errorf("get %s/%s: %w", bucket, object, err)
	}
	fmt.Print(string(got))
	return nil
}
