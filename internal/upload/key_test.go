package upload

import (
	"strings"
	"testing"
	"time"
)

func TestExt(t *testing.T) {
	tests := []struct{ name, want string }{
		{"readings.csv", ".csv"},
		{"/var/spool/tl/readings.CSV", ".csv"},
		{"readings.csv.gz", ".csv.gz"},
		{"readings.TSV.GZ", ".tsv.gz"},
		{"a.b.parquet", ".parquet"},
		{"data.gz", ".gz"},
		{"readings", ""},
		{".profile", ""},
		{".x.gz", ".gz"},
	}
	for _, tt := range tests {
		if got := Ext(tt.name); got != tt.want {
			t.Errorf("Ext(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestGeneratedKey(t *testing.T) {
	at := time.Date(2026, 1, 5, 11, 0, 0, 999, time.FixedZone("CET", 3600))
	sum := "1a2b3c4d5e6f" + strings.Repeat("0", 52)
	tests := []struct {
		name, prefix, gateway, ext string
		want, wantErr              string
	}{
		{name: "plain", gateway: "gateway-7", ext: ".csv", want: "gateway-7/20260105T100000Z-1a2b3c4d.csv"},
		{name: "gzip", gateway: "gateway-7", ext: ".csv.gz", want: "gateway-7/20260105T100000Z-1a2b3c4d.csv.gz"},
		{name: "prefix", prefix: "site-3/raw", gateway: "gw_1.a", ext: ".parquet", want: "site-3/raw/gw_1.a/20260105T100000Z-1a2b3c4d.parquet"},
		{name: "no ext", gateway: "g", want: "g/20260105T100000Z-1a2b3c4d"},
		{name: "slash in gateway", gateway: "a/b", wantErr: "invalid gateway"},
		{name: "dot-dot gateway", gateway: "..", wantErr: "invalid gateway"},
		{name: "empty gateway", gateway: "", wantErr: "invalid gateway"},
		{name: "control char", gateway: "g\x01", wantErr: "invalid gateway"},
		{name: "too long", prefix: strings.Repeat("p", 1000), gateway: "g", ext: ".csv", wantErr: "longer than 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := GeneratedKey(tt.prefix, tt.gateway, at, sum, tt.ext)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("GeneratedKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestJoinKeyAndPrefix(t *testing.T) {
	tests := []struct {
		prefix, key, want, wantErr string
	}{
		{key: "gateway-7/20260105T1000.csv", want: "gateway-7/20260105T1000.csv"},
		{prefix: "raw", key: "a.csv", want: "raw/a.csv"},
		{key: "/a.csv", wantErr: "must not start with /"},
		{key: "a/../b.csv", wantErr: `".."`},
		{key: "a\nb.csv", wantErr: "control characters"},
		{key: strings.Repeat("k", 1025), wantErr: "longer than 1024"},
	}
	for _, tt := range tests {
		got, err := JoinKey(tt.prefix, tt.key)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("JoinKey(%q, %q): err = %v, want %q", tt.prefix, tt.key, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("JoinKey(%q, %q) = %q, %v; want %q", tt.prefix, tt.key, got, err, tt.want)
		}
	}
	for in, want := range map[string]string{"": "", "/site-3/": "site-3", "a/b": "a/b"} {
		if got, err := NormalizePrefix(in); err != nil || got != want {
			t.Errorf("NormalizePrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := NormalizePrefix("a/../b"); err == nil {
		t.Error(`NormalizePrefix("a/../b") succeeded`)
	}
}
