package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// S3Client is a connection to an S3 service (NewS3Client): the AWS SDK's
// client, which only this package calls. The rest of the program opens
// stores on it (NewS3Store) and asks it what env check reports (Region,
// ServiceURL, Credentials, ProbeAuth); no SDK type leaves this package but
// the one SigV4Config returns for iceberg-go's REST catalog client.
type S3Client struct {
	c *s3.Client
}

// What the store and its uploads ask of the client by type assertion
// (Upload's multipart path, abortStrays), as of the SDK's own client.
var (
	_ S3API           = (*S3Client)(nil)
	_ tm.S3APIClient  = (*S3Client)(nil)
	_ multipartLister = (*S3Client)(nil)
)

// The S3API methods, for S3Store.

func (c *S3Client) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return c.c.ListObjectsV2(ctx, in, opts...)
}

func (c *S3Client) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return c.c.GetObject(ctx, in, opts...)
}

func (c *S3Client) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return c.c.HeadObject(ctx, in, opts...)
}

func (c *S3Client) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return c.c.PutObject(ctx, in, opts...)
}

func (c *S3Client) CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	return c.c.CopyObject(ctx, in, opts...)
}

func (c *S3Client) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return c.c.DeleteObject(ctx, in, opts...)
}

func (c *S3Client) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return c.c.DeleteObjects(ctx, in, opts...)
}

// The multipart upload methods, for Upload (the transfer manager) and
// abortStrays.

func (c *S3Client) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return c.c.CreateMultipartUpload(ctx, in, opts...)
}

func (c *S3Client) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	return c.c.UploadPart(ctx, in, opts...)
}

func (c *S3Client) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return c.c.CompleteMultipartUpload(ctx, in, opts...)
}

func (c *S3Client) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return c.c.AbortMultipartUpload(ctx, in, opts...)
}

func (c *S3Client) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return c.c.ListMultipartUploads(ctx, in, opts...)
}

// Region is the client's signing region.
func (c *S3Client) Region() string { return c.c.Options().Region }

// ServiceURL is the AWS S3 regional endpoint of the client's region, with
// path-style addressing (https://s3.<region>.amazonaws.com): where a client
// without an endpoint setting sends its requests.
func (c *S3Client) ServiceURL(ctx context.Context) (string, error) {
	region := c.Region()
	ep, err := s3.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, s3.EndpointParameters{
		Region: aws.String(region), ForcePathStyle: aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("resolve the AWS S3 endpoint of region %q: %w", region, err)
	}
	return ep.URI.String(), nil
}

// Credentials are the credentials a client signs with, without the secret.
type Credentials struct {
	AccessKeyID string
	// Source names the provider they came from (the SDK's name, e.g.
	// SharedConfigCredentials); "" when it does not say.
	Source string
}

// ErrNoCredentialsProvider is returned by Credentials for a client that
// has no way to find credentials.
var ErrNoCredentialsProvider = errors.New("no credentials provider")

// Credentials retrieves the credentials the client signs with (from the
// keys, the profile or the AWS chain; an instance role or a web identity
// may ask a service). Errors: ErrNoCredentialsProvider, or why none were
// found.
func (c *S3Client) Credentials(ctx context.Context) (Credentials, error) {
	prov := c.c.Options().Credentials
	if prov == nil {
		return Credentials{}, ErrNoCredentialsProvider
	}
	creds, err := prov.Retrieve(ctx)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{AccessKeyID: creds.AccessKeyID, Source: creds.Source}, nil
}

// ProbeAuth sends the cheapest signed request, ListBuckets with
// MaxBuckets=1, to prove the credentials: an answer, or an S3 error
// (ErrorCode) whose code says whether the server took the signature.
func (c *S3Client) ProbeAuth(ctx context.Context) error {
	_, err := c.c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	if notS3Answer(err) {
		return &opError{fmt.Sprintf("ListBuckets: %v", ErrNotS3), ErrNotS3, err}
	}
	return err
}

// ErrorCode is the error code of the S3 service's answer in err
// ("AccessDenied", "InvalidAccessKeyId", ...); "" when err holds none (a
// network error, a client-side failure).
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// SigV4Config is the one SDK value that leaves this package: the AWS
// configuration (credentials and region) iceberg-go's REST catalog client
// signs its requests with when the catalog wants SigV4 (AWS Glue, S3
// Tables). Its option for SigV4 (rest.WithAwsConfig) takes an aws.Config
// and nothing else, so the configuration is handed over as it is, built
// here from the S3 client's; the caller gives it to that option and reads
// nothing else from it. region "" is the client's.
//
// client is the lake's S3 client: an *S3Client, or the SDK's own client
// that test helpers give the lake. Errors: a client whose credentials
// cannot be had from it (a fake of S3API).
func SigV4Config(client S3API, region string) (aws.Config, error) {
	var o s3.Options
	switch c := client.(type) {
	case *S3Client:
		if c == nil {
			return aws.Config{}, errors.New("no S3 client to sign with")
		}
		o = c.c.Options()
	case interface{ Options() s3.Options }: // *s3.Client
		o = c.Options()
	default:
		return aws.Config{}, fmt.Errorf("%T holds no credentials to sign with", client)
	}
	if region == "" {
		region = o.Region
	}
	return aws.Config{Credentials: o.Credentials, Region: region}, nil
}
