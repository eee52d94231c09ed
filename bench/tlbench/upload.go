package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/upload"
)

func init() {
	extraModes["upload"] = uploadSpool
	extraModes["sdkupload"] = sdkUpload
}

// uploadSpool runs `timelake upload --spool` (validation on, default
// parallelism) on a spool folder that runCase filled with the case's files
// before the timer started.
func uploadSpool(ctx context.Context, c *s3.Client, s Setup, spool string, r *Result) error {
	rep, err := upload.Run(ctx, upload.Config{
		Store: storage.NewS3Store(c, s.Copy, "", storage.S3StoreOptions{}),
		Spool: spool, Gateway: "gateway-00", Validate: true,
	})
	if err != nil {
		return err
	}
	r.Files, r.Bytes = rep.Uploaded+rep.AlreadyUploaded, rep.Bytes
	return nil
}

// sdkUpload is the baseline: the SDK's transfer manager uploads the same
// files, as many at once as timelake upload does.
func sdkUpload(ctx context.Context, c *s3.Client, s Setup, data string, r *Result) error {
	paths, keys, err := localFiles(data)
	if err != nil {
		return err
	}
	tm := transfermanager.New(c)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(upload.DefaultParallel)
	var total int64
	for _, k := range keys {
		fi, err := os.Stat(paths[k])
		if err != nil {
			return err
		}
		total += fi.Size()
		g.Go(func() error {
			f, err := os.Open(paths[k])
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = tm.UploadObject(gctx, &transfermanager.UploadObjectInput{
				Bucket: aws.String(s.Copy), Key: aws.String(k), Body: io.Reader(f)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	r.Files, r.Bytes = len(keys), total
	return nil
}

// copyTree copies the generated files into a fresh spool folder.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		// A flat spool: gateways spool their own files in one folder.
		out := filepath.Join(dst, filepath.Base(filepath.Dir(rel))+"-"+filepath.Base(rel))
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.Create(out)
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
}
