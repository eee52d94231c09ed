package storage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/storage"
)

// oddKeys are keys an XML listing cannot carry as they are (ESC), or that
// url-encoding changes (%, +, a space, a tab, a newline, non-ASCII).
var oddKeys = []string{"gw/esc\x1b[31mred.csv", "gw/tab\there.csv", "gw/new\nline.csv", "gw/100%.csv", "gw/a+b.csv",
	"gw/with space.csv", "gw/température-ü.csv"}

// TestListDecodesURLEncodedKeys: S3Store.List asks for url-encoded keys
// and decodes them when the answer says they are (AWS S3, MinIO, Tigris),
// and keeps them as they are when it does not (a server that ignores the
// parameter). The server here answers ListObjectsV2 as AWS S3 documents it
// (S3 API reference, ListObjectsV2, "EncodingType").
func TestListDecodesURLEncodedKeys(t *testing.T) {
	for _, encodes := range []bool{true, false} {
		t.Run(fmt.Sprintf("server encodes: %v", encodes), func(t *testing.T) {
			var asked []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = append(asked, r.URL.Query().Get("encoding-type"))
				var b strings.Builder
				b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><IsTruncated>false</IsTruncated>`)
				if encodes {
					b.WriteString(`<EncodingType>url</EncodingType>`)
				}
				keys := oddKeys
				if !encodes {
					keys = []string{"gw/100%.csv", "gw/a+b.csv", "gw/%41.csv"} // kept as they are, not decoded
				}
				for _, k := range keys {
					if encodes {
						k = url.QueryEscape(k)
					}
					fmt.Fprintf(&b, `<Contents><Key>%s</Key><LastModified>2026-01-05T10:00:00.000Z</LastModified><ETag>"e"</ETag><Size>3</Size></Contents>`, k)
				}
				b.WriteString(`</ListBucketResult>`)
				w.Header().Set("Content-Type", "application/xml")
				fmt.Fprint(w, b.String())
			}))
			defer srv.Close()
			client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider("id", "secret", "")})
			st := storage.NewS3Store(client, "b", "", storage.S3StoreOptions{})
			var got []string
			if err := st.List(context.Background(), "gw/", func(o storage.ObjectInfo) error { got = append(got, o.Key); return nil }); err != nil {
				t.Fatal(err)
			}
			want := oddKeys
			if !encodes {
				want = []string{"gw/100%.csv", "gw/a+b.csv", "gw/%41.csv"}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("keys %q, want %q", got, want)
			}
			if !slices.Equal(asked, []string{"url"}) {
				t.Fatalf("encoding-type asked: %q, want url", asked)
			}
		})
	}
}
