package s3test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

var dnsBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

func TestBucketName(t *testing.T) {
	for _, name := range []string{
		"TestX",
		"TestLoad/CSV_with_gzip/#01",
		"--__--",
		"",
		strings.Repeat("VeryLongTestName_", 10),
		"Test" + strings.Repeat("a", 49) + "/b",
	} {
		got := UniqueBucketName(name)
		if len(got) > 63 || !dnsBucket.MatchString(got) || !strings.HasPrefix(got, "tl-") || strings.Contains(got, "--") {
			t.Errorf("UniqueBucketName(%q) = %q: not a valid bucket name", name, got)
		}
	}
	if a, b := UniqueBucketName("TestX"), UniqueBucketName("TestX"); a == b {
		t.Errorf("bucketName is not unique: %q twice", a)
	}
}

func TestS3ServerConditionalPut(t *testing.T) {
	srv := FromEnv(t)
	client := srv.Client(t)
	bucket := srv.NewBucket(t)
	ctx := t.Context()

	put := func() error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:      aws.String(bucket),
			Key:         aws.String("metadata/v1.metadata.json"),
			Body:        strings.NewReader(`{"format-version":2}`),
			IfNoneMatch: aws.String("*"),
		})
		return err
	}
	if err := put(); err != nil {
		t.Fatalf("first conditional put: %v", err)
	}
	err := put()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
		t.Fatalf("second conditional put: want HTTP 412, got %v", err)
	}

	out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "metadata/v1.metadata.json" {
		t.Fatalf("list: got %d objects, want exactly metadata/v1.metadata.json", len(out.Contents))
	}
}

// TestS3ServerBucketCleanup checks that NewBucket's cleanup empties a bucket holding more
// than one list page of objects (and nested keys) and then deletes it.
func TestS3ServerBucketCleanup(t *testing.T) {
	srv := FromEnv(t)
	client := srv.Client(t)
	ctx := context.Background()

	var bucket string
	t.Run("fill", func(t *testing.T) {
		bucket = srv.NewBucket(t)
		for i := range 5 {
			key := fmt.Sprintf("data/day=2026-01-0%d/part-%d.parquet", 1+i%2, i)
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x"),
			}); err != nil {
				t.Fatalf("put %s: %v", key, err)
			}
		}
		var n int
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(2)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			n += len(page.Contents)
		}
		if n != 5 {
			t.Fatalf("paginated list: got %d objects, want 5", n)
		}
	})
	if t.Failed() {
		return
	}
	// The subtest's cleanup has run: the bucket must be gone.
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotFound {
		t.Fatalf("HeadBucket after cleanup: want 404, got %v", err)
	}
}
