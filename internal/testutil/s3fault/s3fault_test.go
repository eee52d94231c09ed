package s3fault_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

func client(srv s3test.Server, endpoint string, attempts int) *s3.Client {
	return s3.New(s3.Options{
		Region: srv.Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		}),
	})
}

func put(ctx context.Context, c *s3.Client, bucket, key, body string, ifAbsent bool) error {
	in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)}
	if ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := c.PutObject(ctx, in)
	return err
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestProxy(t *testing.T) {
	srv := s3test.FromEnv(t)
	bucket := srv.NewBucket(t)
	p := s3fault.StartT(t, srv.Endpoint, 1)
	ctx := context.Background()
	once := client(srv, p.URL, 1)
	retried := client(srv, p.URL, 5)
	direct := srv.Client(t)

	t.Run("forwards signed requests unchanged", func(t *testing.T) {
		if err := put(ctx, once, bucket, "plain/a.csv", "a", false); err != nil {
			t.Fatal(err)
		}
		out, err := direct.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("plain/a.csv")})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != "a" {
			t.Fatalf("body %q", b)
		}
	})

	t.Run("fail before forwarding", func(t *testing.T) {
		r := p.Add(s3fault.Rule{Name: "slowdown", Method: http.MethodPut, Bucket: bucket, Key: "fail/*",
			Action: s3fault.Fail, Status: http.StatusServiceUnavailable, Code: "SlowDown", Times: 1})
		err := put(ctx, once, bucket, "fail/x.csv", "x", false)
		if code(err) != "SlowDown" {
			t.Fatalf("error %v, want SlowDown", err)
		}
		if _, err := direct.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("fail/x.csv")}); err == nil {
			t.Fatal("a failed request reached the server")
		}
		// Times: 1, so the SDK's retry goes through.
		if err := put(ctx, retried, bucket, "fail/x.csv", "x", false); err != nil {
			t.Fatal(err)
		}
		if c := p.Counts(r.Name); c.Matched != 2 || c.Injected != 1 {
			t.Fatalf("counts %+v", c)
		}
	})

	t.Run("a lost response: the write landed, the retry meets it", func(t *testing.T) {
		p.Add(s3fault.Rule{Name: "lose", Method: http.MethodPut, Bucket: bucket, Key: "lease/*", Header: "If-None-Match",
			Action: s3fault.LoseResponse, Times: 1})
		err := put(ctx, retried, bucket, "lease/t.json", "mine", true)
		if code(err) != "PreconditionFailed" {
			t.Fatalf("error %v: want the retry's 412 for its own write", err)
		}
		out, err := direct.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("lease/t.json")})
		if err != nil {
			t.Fatalf("the write did not land: %v", err)
		}
		out.Body.Close()
		if c := p.Counts("lose"); c.Injected != 1 {
			t.Fatalf("counts %+v", c)
		}
	})

	t.Run("drop: the request never ran", func(t *testing.T) {
		p.Add(s3fault.Rule{Name: "drop", Method: http.MethodPut, Bucket: bucket, Key: "drop/*", Action: s3fault.Drop})
		if err := put(ctx, once, bucket, "drop/x", "x", false); err == nil {
			t.Fatal("a dropped request succeeded")
		}
		if _, err := direct.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("drop/x")}); err == nil {
			t.Fatal("a dropped request reached the server")
		}
	})

	t.Run("skip, probability and delay", func(t *testing.T) {
		p.Add(s3fault.Rule{Name: "skip", Method: http.MethodPut, Bucket: bucket, Key: "skip/*",
			Action: s3fault.Fail, Status: 500, Skip: 2})
		for i, want := range []string{"", "", "InternalError"} {
			if got := code(put(ctx, once, bucket, "skip/x", "x", false)); got != want {
				t.Fatalf("request %d: code %q, want %q", i+1, got, want)
			}
		}
		p.Add(s3fault.Rule{Name: "half", Method: http.MethodPut, Bucket: bucket, Key: "prob/*",
			Action: s3fault.Fail, Status: 500, Prob: 0.5})
		for range 40 {
			_ = put(ctx, once, bucket, "prob/x", "x", false)
		}
		if c := p.Counts("half"); c.Matched != 40 || c.Injected < 8 || c.Injected > 32 {
			t.Fatalf("Prob 0.5 over 40 requests: %+v", c)
		}
		p.Add(s3fault.Rule{Name: "slow", Method: http.MethodGet, Bucket: bucket, Key: "plain/*", Delay: 50 * time.Millisecond})
		start := time.Now()
		out, err := once.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("plain/a.csv")})
		if err != nil {
			t.Fatal(err)
		}
		out.Body.Close()
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("delayed request took %s", d)
		}
	})

	if p.Requests("") == 0 || p.Injected(s3fault.Forward) == 0 || p.Injected(s3fault.LoseResponse) != 1 {
		t.Fatalf("totals: %d requests, %d injected, %d lost", p.Requests(""), p.Injected(s3fault.Forward), p.Injected(s3fault.LoseResponse))
	}
}

// TestProxyNextRule: a matching rule that lets a request through (its
// Skip, Times or Prob) leaves it to the rules after it.
func TestProxyNextRule(t *testing.T) {
	srv := s3test.FromEnv(t)
	bucket := srv.NewBucket(t)
	p := s3fault.StartT(t, srv.Endpoint, 1)
	ctx := context.Background()
	once := client(srv, p.URL, 1)
	p.Add(s3fault.Rule{Name: "second on", Method: http.MethodPut, Bucket: bucket, Key: "next/*",
		Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError", Skip: 1})
	p.Add(s3fault.Rule{Name: "first only", Method: http.MethodPut, Bucket: bucket, Key: "next/*",
		Action: s3fault.Fail, Status: http.StatusServiceUnavailable, Code: "SlowDown", Times: 1})
	for i, want := range []string{"SlowDown", "InternalError", "InternalError"} {
		if got := code(put(ctx, once, bucket, "next/x", "x", false)); got != want {
			t.Fatalf("request %d: code %q, want %q", i+1, got, want)
		}
	}
	if c := p.Counts("first only"); c.Matched != 1 || c.Injected != 1 {
		t.Fatalf("first only: %+v, want the first request alone", c)
	}
}
