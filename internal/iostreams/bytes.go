package iostreams

import "strconv"

// HumanBytes renders a size (bytes) with binary units: "512 B", "4.5 KiB",
// "1.2 MiB", "3.0 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit && v > -unit || u == "PiB" {
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
	}
	return "" // unreachable
}
