package storage

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// rangeIgnorer is a server that answers every GET with the whole object,
// whatever its Range header asks.
type rangeIgnorer struct {
	S3API
	body []byte
}

func (r rangeIgnorer) GetObject(_ context.Context, _ *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(r.body)), ContentLength: aws.Int64(int64(len(r.body)))}, nil
}

// TestGetRangeRefusesIgnoredRange: a server that ignores Range is an
// error, not the object's first bytes read as those at the offset.
func TestGetRangeRefusesIgnoredRange(t *testing.T) {
	s := NewS3Store(rangeIgnorer{body: []byte("0123456789")}, "b", "", S3StoreOptions{})
	if rc, err := s.GetRange(t.Context(), "k", 4, 3); err == nil || !strings.Contains(err.Error(), "does not honour Range requests") {
		if rc != nil {
			rc.Close()
		}
		t.Fatalf("a range the server ignored: %v", err)
	}
}
