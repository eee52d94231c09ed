package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/timelake/timelake/internal/storage"
)

// catalog is where a table's versions live and how the next one is
// committed: the only two things the commit protocol (commit.go) needs. The
// catalog-free implementation, metadataFiles, keeps each version as
// metadata/vN.metadata.json created with a conditional create
// (timelake-format.md, "Commit protocol"); an Iceberg REST catalog would be
// a second implementation (load-table, then commit-table with the
// requirements and updates that turn base into next), with no change to the
// mutations (append, expire, rollback, rewrite, alter).
type catalog interface {
	// latest returns the newest version of table n, parsed by parse
	// (parseHead validates it whole; indexHead only indexes it), and its
	// number. ErrTableNotFound when the table has no version.
	latest(ctx context.Context, n TableName, parse func([]byte) (*head, error)) (*head, int, error)
	// create makes body version v of table n, on the condition that v does
	// not exist yet. errVersionTaken when another writer created v first;
	// any other error leaves the outcome unknown (the write may have landed).
	create(ctx context.Context, n TableName, v int, body []byte) error
	// holds reports whether version v of table n exists with exactly body:
	// how a writer recognises its own write after a lost response (the
	// SDK's retry of a conditional PUT that succeeded reads 412). false,
	// nil when v does not exist or holds another body.
	holds(ctx context.Context, n TableName, v int, body []byte) (bool, error)
}

// errVersionTaken is returned by catalog.create when another writer created
// the version first (S3 412 PreconditionFailed or 409
// ConditionalRequestConflict on If-None-Match: *; an existing file on disk).
var errVersionTaken = errors.New("version already exists")

// metadataFiles is the catalog-free catalog: the versions of a table are
// the files <table>/metadata/vN.metadata.json of the lake's store, the
// newest is found by listing (never by the version hint), and a version is
// created with a conditional create.
type metadataFiles struct{ l *Lake }

var _ catalog = metadataFiles{}

// tablePrefix is the store prefix of table n's folder.
func tablePrefix(n TableName) string { return n.Namespace + "/" + n.Name + "/" }

func metadataPrefix(n TableName) string { return tablePrefix(n) + "metadata/" }

// metadataKey is the store key of vN.metadata.json.
func metadataKey(n TableName, version int) string {
	return metadataPrefix(n) + "v" + strconv.Itoa(version) + ".metadata.json"
}

// parseVersion returns N for "vN.metadata.json", or false.
func parseVersion(base string) (int, bool) {
	if !strings.HasPrefix(base, "v") || !strings.HasSuffix(base, ".metadata.json") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "v"), ".metadata.json"))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// latestVersion lists metadata/ and returns the highest N (0 if none). The
// listing, not the version hint, is the truth (timelake-format.md, "Layout").
func (l *Lake) latestVersion(ctx context.Context, n TableName) (int, error) {
	latest := 0
	var seen []int
	err := l.store.List(ctx, metadataPrefix(n)+"v", func(o storage.ObjectInfo) error {
		if v, ok := parseVersion(strings.TrimPrefix(o.Key, metadataPrefix(n))); ok {
			latest = max(latest, v)
			seen = append(seen, v)
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotExist) {
		return 0, nil // a warehouse folder not created yet: no table
	}
	if err != nil {
		return 0, fmt.Errorf("list metadata of %s: %w", n, err)
	}
	l.mu.Lock()
	if l.listed == nil {
		l.listed = map[TableName][]int{}
	}
	l.listed[n] = seen
	l.mu.Unlock()
	return latest, nil
}

// listedBelow returns the versions of n the newest listing found below v
// and forgets them.
func (l *Lake) listedBelow(n TableName, v int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var below, rest []int
	for _, x := range l.listed[n] {
		if x < v {
			below = append(below, x)
		} else {
			rest = append(rest, x)
		}
	}
	l.listed[n] = rest
	return below
}

// readVersion reads vN.metadata.json and parses it with parse.
func (l *Lake) readVersion(ctx context.Context, n TableName, version int, parse func([]byte) (*head, error)) (*head, error) {
	b, _, err := storage.ReadAll(ctx, l.store, metadataKey(n, version))
	if err != nil {
		return nil, fmt.Errorf("read metadata of %s: %w", n, err)
	}
	h, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", metadataKey(n, version), err)
	}
	return h, nil
}

func (c metadataFiles) latest(ctx context.Context, n TableName, parse func([]byte) (*head, error)) (*head, int, error) {
	l := c.l
	for range 5 {
		v, err := l.latestVersion(ctx, n)
		if err != nil {
			return nil, 0, err
		}
		if v == 0 {
			return nil, 0, fmt.Errorf("%s in %s: %w", n, l.URI(), ErrTableNotFound)
		}
		if h := l.cached(n, v); h != nil {
			return h, v, nil
		}
		h, err := l.readVersion(ctx, n, v, parse)
		if err == nil {
			l.remember(n, v, h)
		}
		if errors.Is(err, storage.ErrNotExist) {
			continue // removed between list and read (metadata cleanup): list again
		}
		return h, v, err
	}
	return nil, 0, fmt.Errorf("load %s: metadata kept changing while reading", n)
}

func (c metadataFiles) create(ctx context.Context, n TableName, v int, body []byte) error {
	_, err := c.l.store.Put(ctx, metadataKey(n, v), bytes.NewReader(body),
		storage.PutOptions{IfAbsent: true, ContentType: "application/json"})
	if errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("v%d.metadata.json of %s: %w", v, n, errVersionTaken)
	}
	return err
}

func (c metadataFiles) holds(ctx context.Context, n TableName, v int, body []byte) (bool, error) {
	got, _, err := storage.ReadAll(ctx, c.l.store, metadataKey(n, v))
	if errors.Is(err, storage.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, body), nil
}
