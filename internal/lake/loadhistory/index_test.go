package loadhistory

import "testing"

func TestIndexRoundTrip(t *testing.T) {
	recs := []Record{
		{Key: "gw/a.csv", SHA256: "aa"},
		{Key: "gw/b.csv.gz", SHA256: "bb", ContentSHA256: "cc"},
		{Key: "gw/c.csv"},
	}
	info := SegmentInfo{Name: "_load-history-1-3-x.parquet", Records: 3}
	b := EncodeIndex(IndexSegment(info, recs))
	ix, ok := DecodeIndex(info, b)
	if !ok || ix.Segment != info {
		t.Fatalf("decode: %+v, %v", ix, ok)
	}
	for _, k := range []string{"gw/a.csv", "gw/b.csv.gz", "gw/c.csv"} {
		if !ix.MayHoldKey(Fingerprint(k)) {
			t.Errorf("key %s not in the index", k)
		}
	}
	if ix.MayHoldKey(Fingerprint("gw/d.csv")) {
		t.Error("a key the segment lacks is in the index")
	}
	if !ix.MayHoldContent(Fingerprint("aa")) || !ix.MayHoldContent(Fingerprint("cc")) || ix.MayHoldContent(Fingerprint("bb")) {
		t.Error("the content hashes: the decompressed content's of a compressed file, else the file's")
	}
	for _, torn := range [][]byte{b[:len(b)-3], b[:10], append([]byte("TLHIDX00"), b[8:]...)} {
		if _, ok := DecodeIndex(info, torn); ok {
			t.Errorf("a torn or foreign index of %d bytes was read", len(torn))
		}
	}
}
