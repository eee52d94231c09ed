package lake

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/storage"
)

// Every path a table's metadata names (manifest lists, manifests, data and
// delete files, load history segments) is untrusted: anyone who can write
// the metadata can write any path there. Timelake reads, writes and deletes
// a path only when it lies inside the table's location (<warehouse>/<ns>/
// <table>, where timelake keeps the table, whatever the metadata's own
// "location" says): every file access of a Table goes through tableFS,
// which refuses any other with ErrOutsideTable (docs/table-format.md,
// "Paths in the metadata").

// ErrOutsideTable is returned (wrapped in an *fs.PathError naming the path)
// for a path that is not inside the table's location: another scheme,
// bucket or folder, a "..", "." or empty segment, a backslash or a control
// character. Nothing is read, written or deleted there.
var ErrOutsideTable = errors.New("outside the table's location")

// tableRel returns the slash-separated path of uri below table n's folder,
// or an error wrapping ErrOutsideTable. Accepted: for an S3 warehouse
// s3://<bucket>/<prefix>/<ns>/<table>/... (or s3a://), the key as it is;
// for a local one a file:// URI (decoded) or an absolute path below
// <warehouse>/<ns>/<table>. The rest must be a valid key (storage.
// ValidateKey: no empty, "." or ".." segment, no backslash or control
// character).
func (l *Lake) tableRel(n TableName, uri string) (string, error) {
	var rest string
	var ok bool
	if l.loc.IsS3() {
		key := ""
		for _, scheme := range []string{"s3://", "s3a://"} {
			if k, found := strings.CutPrefix(uri, scheme+l.loc.Bucket+"/"); found {
				key, ok = k, true
				break
			}
		}
		if ok {
			rest, ok = strings.CutPrefix(key, strings.TrimPrefix(l.loc.Prefix+"/"+catalog.TablePrefix(n), "/"))
		}
	} else {
		p := uri
		if strings.HasPrefix(uri, "file:") {
			u, err := url.Parse(uri)
			if err != nil || (u.Host != "" && u.Host != "localhost") {
				return "", outside(uri)
			}
			p = u.Path
		}
		if filepath.IsAbs(filepath.FromSlash(p)) {
			rest, ok = strings.CutPrefix(filepath.ToSlash(p), filepath.ToSlash(filepath.Join(l.loc.Dir, n.Namespace, n.Name))+"/")
		}
	}
	if !ok || storage.ValidateKey(rest) != nil {
		if !l.loc.IsS3() && l.movedTable(uri, n) {
			return "", fmt.Errorf("%w: %q: the metadata names the table's files under another folder: "+
				"was the warehouse moved or copied? Iceberg metadata holds absolute paths, so a local warehouse "+
				"is used where it was written (move it back, or copy its tables with an engine that rewrites them)", ErrOutsideTable, uri)
		}
		return "", outside(uri)
	}
	return rest, nil
}

func outside(uri string) error { return fmt.Errorf("%w: %q", ErrOutsideTable, uri) }

// movedTable reports whether uri, refused by tableRel in a local
// warehouse, is a path of the table's own layout (/<ns>/<table>/ in it,
// no "..") below another folder than the warehouse: what the metadata of
// a warehouse copied or moved elsewhere holds.
func (l *Lake) movedTable(uri string, n TableName) bool {
	p := strings.TrimPrefix(strings.TrimPrefix(uri, "file://"), "localhost")
	own := filepath.ToSlash(filepath.Join(l.loc.Dir, n.Namespace, n.Name)) + "/"
	return strings.HasPrefix(p, "/") && !strings.HasPrefix(p, own) && !strings.Contains(p, "/../") &&
		strings.Contains(p, "/"+n.Namespace+"/"+n.Name+"/")
}

// fsF is the file system of the table's files for iceberg-go (the
// table.FSysF of the iceberg-go tables this package makes): the warehouse's,
// confined to the table's location.
func (t *Table) fsF(ctx context.Context) (icebergio.IO, error) {
	if !t.lake.loc.IsS3() {
		return &localTableFS{lake: t.lake, name: t.name, dir: filepath.Join(t.lake.loc.Dir, t.name.Namespace, t.name.Name)}, nil
	}
	inner, err := t.lake.fsF(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := inner.(icebergio.WriteFileIO)
	if !ok {
		return nil, errors.New("internal: the warehouse's file system cannot write")
	}
	return &tableFS{lake: t.lake, name: t.name, inner: wfs}, nil
}

// tableFS is an object store's file system (storeIO) confined to one
// table's location: every path is checked by tableRel before it is used.
type tableFS struct {
	lake  *Lake
	name  TableName
	inner icebergio.WriteFileIO
}

func (f *tableFS) check(op, uri string) error {
	if _, err := f.lake.tableRel(f.name, uri); err != nil {
		return &iofs.PathError{Op: op, Path: uri, Err: err}
	}
	return nil
}

func (f *tableFS) Open(name string) (icebergio.File, error) {
	if err := f.check("open", name); err != nil {
		return nil, err
	}
	return f.inner.Open(name)
}

func (f *tableFS) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

func (f *tableFS) Create(name string) (icebergio.FileWriter, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	return f.inner.Create(name)
}

func (f *tableFS) WriteFile(name string, p []byte) error {
	if err := f.check("write", name); err != nil {
		return err
	}
	return f.inner.WriteFile(name, p)
}

// Stat lets iceberg-go size an embedded manifest without opening it.
func (f *tableFS) Stat(name string) (iofs.FileInfo, error) {
	if err := f.check("stat", name); err != nil {
		return nil, err
	}
	if s, ok := f.inner.(icebergio.StatIO); ok {
		return s.Stat(name)
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return file.Stat()
}

// localTableFS is a local table's folder as a file system: every path is
// checked by tableRel, then reached through an os.Root of the folder with
// no symbolic link on the way (storage.CheckLinks), as a LocalStore does:
// no path and no link leads out of the table's folder.
type localTableFS struct {
	lake *Lake
	name TableName
	dir  string
}

// open checks uri and opens the table's folder (created first when
// create): the os.Root to use (the caller closes it) and the path in it.
func (f *localTableFS) open(op, uri string, create bool) (*os.Root, string, error) {
	rel, err := f.lake.tableRel(f.name, uri)
	if err != nil {
		return nil, "", &iofs.PathError{Op: op, Path: uri, Err: err}
	}
	if create {
		if err := os.MkdirAll(f.dir, 0o755); err != nil {
			return nil, "", &iofs.PathError{Op: op, Path: uri, Err: err}
		}
	}
	r, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, "", &iofs.PathError{Op: op, Path: uri, Err: err}
	}
	if err := storage.CheckLinks(r, rel); err != nil {
		r.Close()
		return nil, "", &iofs.PathError{Op: op, Path: uri, Err: err}
	}
	return r, filepath.FromSlash(rel), nil
}

func (f *localTableFS) Open(name string) (icebergio.File, error) {
	r, p, err := f.open("open", name, false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(p)
}

func (f *localTableFS) Remove(name string) error {
	r, p, err := f.open("remove", name, false)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(p)
}

func (f *localTableFS) Create(name string) (icebergio.FileWriter, error) {
	r, p, err := f.open("create", name, true)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := r.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return r.Create(p)
}

func (f *localTableFS) WriteFile(name string, b []byte) error {
	r, p, err := f.open("write", name, true)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return r.WriteFile(p, b, 0o644)
}

// Stat lets iceberg-go size an embedded manifest without opening it.
func (f *localTableFS) Stat(name string) (iofs.FileInfo, error) {
	r, p, err := f.open("stat", name, false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Stat(p)
}
