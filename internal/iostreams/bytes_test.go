package iostreams

import (
	"testing"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {4657, "4.5 KiB"},
		{1258291, "1.2 MiB"}, {3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}, {3 << 50, "3.0 PiB"}, {2048 << 50, "2048.0 PiB"},
	} {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
