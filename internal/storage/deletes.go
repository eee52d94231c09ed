package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"
)

// Batch delete tuning.
const (
	// MaxDeleteBatch is the most keys one S3 DeleteObjects request takes
	// (S3 API reference, DeleteObjects).
	MaxDeleteBatch = 1000
	// DeleteBatchConcurrency is the number of DeleteObjects requests in
	// flight at once.
	DeleteBatchConcurrency = 4
	// SingleDeleteConcurrency is the number of DeleteObject requests in
	// flight at once on a server that refuses DeleteObjects.
	SingleDeleteConcurrency = 16
)

// BatchDeleter is the optional capability of a Store that deletes many
// keys in few requests. DeleteKeys (the function) uses it when the store
// has it, and single deletes otherwise.
type BatchDeleter interface {
	// DeleteKeys deletes keys as DeleteKeys (the function) describes.
	DeleteKeys(ctx context.Context, keys []string) ([]bool, error)
}

// DeleteKeys deletes keys from s and reports which are gone: done[i] is
// true once keys[i] was deleted or found missing (a missing key is no
// error, as for Delete). On S3 it sends DeleteObjects requests of up to
// MaxDeleteBatch keys in Quiet mode, DeleteBatchConcurrency at a time; a
// server that refuses DeleteObjects (NotImplemented, MethodNotAllowed: some
// S3-compatible stores lack it) gets single deletes instead, and the store
// remembers the refusal. A folder store removes the files one by one.
//
// The error joins one error per key not deleted (classified as Delete's:
// errors.Is finds ErrNotExist or the SDK's error) and, when ctx ends
// before every key was tried, ctx's error: the keys of requests not sent,
// or whose answer was cut, stay false. done always has len(keys) entries.
func DeleteKeys(ctx context.Context, s Store, keys []string) ([]bool, error) {
	if len(keys) == 0 {
		return []bool{}, nil
	}
	if bd, ok := s.(BatchDeleter); ok {
		return bd.DeleteKeys(ctx, keys)
	}
	return deleteEach(ctx, s, keys, 1)
}

// deleteEach deletes keys with Delete, limit requests at a time.
func deleteEach(ctx context.Context, s Store, keys []string, limit int) ([]bool, error) {
	done := make([]bool, len(keys))
	var (
		mu   sync.Mutex
		errs []error
	)
	var g errgroup.Group
	g.SetLimit(limit)
	for i, k := range keys {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			err := s.Delete(ctx, k)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ctx.Err() == nil {
					errs = append(errs, err)
				}
				return nil
			}
			done[i] = true
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil && countFalse(done) > 0 {
		errs = append(errs, fmt.Errorf("delete %d keys: %d not deleted: %w", len(keys), countFalse(done), err))
	}
	return done, errors.Join(errs...)
}

func countFalse(done []bool) int {
	n := 0
	for _, d := range done {
		if !d {
			n++
		}
	}
	return n
}

// DeleteKeys removes the files one by one (Delete: cheap on a folder),
// until ctx ends.
func (s *LocalStore) DeleteKeys(ctx context.Context, keys []string) ([]bool, error) {
	return deleteEach(ctx, s, keys, 1)
}

// DeleteKeys sends DeleteObjects requests of up to MaxDeleteBatch keys
// (Quiet: the answer lists the keys not deleted), DeleteBatchConcurrency
// at a time. The SDK adds the checksum S3 requires on DeleteObjects
// (x-amz-checksum-crc32: the operation requires one, whatever the client's
// RequestChecksumCalculation). A key XML 1.0 cannot carry (control
// characters, invalid UTF-8) goes as a single DeleteObject. After a
// refusal of DeleteObjects the store sends single deletes from then on; the
// keys of a request whose answer was lost are deleted one by one.
func (s *S3Store) DeleteKeys(ctx context.Context, keys []string) ([]bool, error) {
	if s.noBatchDelete.Load() {
		return deleteEach(ctx, s, keys, SingleDeleteConcurrency)
	}
	done := make([]bool, len(keys))
	var batchIdx, singleIdx []int
	for i, k := range keys {
		if xmlSafe(k) {
			batchIdx = append(batchIdx, i)
		} else {
			singleIdx = append(singleIdx, i)
		}
	}
	var (
		mu      sync.Mutex
		errs    []error
		refused []int // indexes of keys whose batch the server refused
	)
	var g errgroup.Group
	g.SetLimit(DeleteBatchConcurrency)
	for start := 0; start < len(batchIdx); start += MaxDeleteBatch {
		if ctx.Err() != nil {
			break
		}
		idx := batchIdx[start:min(start+MaxDeleteBatch, len(batchIdx))]
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			if s.noBatchDelete.Load() {
				mu.Lock()
				refused = append(refused, idx...)
				mu.Unlock()
				return nil
			}
			ok, kerrs, err := s.deleteBatch(ctx, keys, idx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && refusesBatch(err):
				s.noBatchDelete.Store(true)
				refused = append(refused, idx...)
			case err != nil && ctx.Err() == nil && !IsPermanent(err):
				// The answer was lost or cut (a connection lost, a 5xx
				// after the SDK's retries, a body that does not read):
				// deletes are idempotent, so its keys are deleted one
				// by one, and a key already gone counts as deleted.
				refused = append(refused, idx...)
			case err != nil:
				if ctx.Err() == nil {
					errs = append(errs, classify("delete", fmt.Sprintf("%d keys (%s ... %s)", len(idx), keys[idx[0]], keys[idx[len(idx)-1]]), err))
				}
			default:
				for j, i := range idx {
					done[i] = ok[j]
				}
				errs = append(errs, kerrs...)
			}
			return nil
		})
	}
	g.Wait()
	singleIdx = append(singleIdx, refused...)
	if len(singleIdx) > 0 && ctx.Err() == nil {
		single := make([]string, len(singleIdx))
		for j, i := range singleIdx {
			single[j] = keys[i]
		}
		sd, err := deleteEach(ctx, s, single, SingleDeleteConcurrency)
		for j, i := range singleIdx {
			done[i] = sd[j]
		}
		if err != nil {
			errs = append(errs, err)
		}
	} else if err := ctx.Err(); err != nil && countFalse(done) > 0 {
		errs = append(errs, fmt.Errorf("delete %d keys: %d not deleted: %w", len(keys), countFalse(done), err))
	}
	return done, errors.Join(errs...)
}

// deleteBatch sends one DeleteObjects request for keys[idx...] and returns
// which were deleted (ok[j] for keys[idx[j]]) and the errors of the keys
// the server did not delete; err is the request's own error (nothing is
// known deleted then).
func (s *S3Store) deleteBatch(ctx context.Context, keys []string, idx []int) (ok []bool, kerrs []error, err error) {
	objs := make([]types.ObjectIdentifier, len(idx))
	pos := make(map[string][]int, len(idx)) // full key -> positions in idx
	for j, i := range idx {
		full := s.prefix + keys[i]
		objs[j] = types.ObjectIdentifier{Key: aws.String(full)}
		pos[full] = append(pos[full], j)
	}
	var extra []func(*s3.Options)
	if s.consistentWrites || s.consistentAll {
		extra = append(extra, withHeader(TigrisConsistentHeader, "true"))
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(s.bucket),
		Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
	}, extra...)
	if err != nil {
		return nil, nil, err
	}
	ok = make([]bool, len(idx))
	for j := range ok {
		ok[j] = true
	}
	for _, e := range out.Errors {
		full := aws.ToString(e.Key)
		js, found := pos[full]
		if !found {
			if dec, derr := url.QueryUnescape(full); derr == nil {
				js, found = pos[dec]
			}
		}
		code := aws.ToString(e.Code)
		ae := &smithy.GenericAPIError{Code: code, Message: aws.ToString(e.Message)}
		if code == "NoSuchKey" {
			continue // missing: gone, as for Delete
		}
		key := full
		if found {
			key = keys[idx[js[0]]]
			for _, j := range js {
				ok[j] = false
			}
		} else {
			// A key the request did not name as sent: which of its keys
			// failed is unknown, so none counts as deleted.
			for j := range ok {
				ok[j] = false
			}
		}
		kerrs = append(kerrs, classify("delete", key, ae))
	}
	return ok, kerrs, nil
}

// refusesBatch reports a server that does not implement DeleteObjects:
// 501 NotImplemented or 405 MethodNotAllowed.
func refusesBatch(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NotImplemented", "MethodNotAllowed":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotImplemented, http.StatusMethodNotAllowed:
			return true
		}
	}
	return false
}

// xmlSafe reports whether key can travel in a DeleteObjects request's XML
// body unchanged: valid UTF-8 with no control character (XML 1.0 has no
// way to write most of them, and its parsers turn a carriage return into
// a newline).
func xmlSafe(key string) bool {
	if !utf8.ValidString(key) {
		return false
	}
	for _, r := range key {
		if unicode.IsControl(r) || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}
