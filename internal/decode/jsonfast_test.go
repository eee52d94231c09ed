package decode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// readLines reads the objects of text (JSON Lines) with readObject, the
// line scan on or off, and describes what each line gave: its values, or
// its error.
func readLines(t testing.TB, text string, scan bool) string {
	ro := &resolved{key: "t.jsonl"}
	src := Source{Key: "t.jsonl", R: strings.NewReader(text), Size: int64(len(text))}
	s, err := openJSONStream(ro, src, false)
	if err != nil {
		return "open: " + err.Error()
	}
	defer s.close()
	var out strings.Builder
	var buf []byte
	for {
		ok, err := s.nextObject(&buf)
		if err != nil {
			fmt.Fprintf(&out, "next: %v\n", err)
			if s.array {
				break
			}
			continue
		}
		if !ok {
			break
		}
		if !scan && !s.array && s.pending {
			s.pending = false
			s.lineBuf.Reset(s.cur)
			s.dec.Reset(&s.lineBuf)
		}
		err = s.readObject(func(path []byte, k jsonKind, text []byte) error {
			fmt.Fprintf(&out, "%q %d %q; ", path, k, text)
			if bytes.Equal(path, []byte("stop")) {
				return fmt.Errorf("stop at %q", text)
			}
			return nil
		})
		fmt.Fprintf(&out, "row %d line %d: %v\n", s.row, s.line, err)
		if err != nil && s.array {
			break
		}
	}
	return out.String()
}

// jsonFastLines are lines the line scan reads, and lines it must leave
// to the tokenizer (each must give what the tokenizer gives).
var jsonFastLines = []string{
	`{}`, ` { } `, "{}\r", `{"a":1}`, `{"a":-0}`, `{"a":0.5e-3}`, `{"a":1E+2}`, `{"a":-12.25}`,
	`{"a":"x","b":true,"c":false,"d":null}`, `{"a":{"b":{"c":1}},"d":2}`, `{"a":{}}`,
	`{"a" : "b" , "c" : 1 }`, "{\t\"a\"\t:\t1\t}", `{"é":"ü","日本":"語"}`, `{"stop":"x","a":"bad\x"}`,
	`{"a":1,"stop":2,"a":3}`,
	// What only the tokenizer reads or refuses.
	`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":+1}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":--1}`,
	`{"a":0x10}`, `{"a":1.5.5}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":-Infinity}`, `{"a":nan}`,
	`{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":nullx}`, `{"a":falsey}`, `{"a":True}`,
	`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"a":{"b":1},"b":{"b":2}}`, `{"a\u0062":1,"ab":2}`,
	`{"a":"x\"y"}`, `{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"\ud800"}`, `{"a":"\n"}`,
	"{\"a\":\"x\ty\"}", "{\"a\":\"x\x01\"}", "{\"a\x1f\":1}", "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}",
	"{\"\xc3\":1}", "{\"a\":\"\xc3\xa9\xc3\"}", "{\"a\":\"\xef\xbf\xbf\"}", "{\"a\":\"\xf4\x90\x80\x80\"}",
	`{"a":[1,2]}`, `{"a":[]}`, `[1]`, `1`, `"x"`, `null`, `{"a":1} x`, `{"a":1}{"b":2}`, `{"a":1},`,
	`{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":}`, `{"a"}`, `{a:1}`, `{'a':1}`, `{"a":1`, `{"a":"x`, `{"a`,
	`{`, `{"a":{"b":1}`, `{"a":1}}`, `{"a":1 "b":2}`, `{"a":1,,"b":2}`, `{"a":"x"1}`, `{"a":1/*c*/}`,
	"{\"a\":1}\v", "\f{\"a\":1}", "\xef\xbb\xbf{\"a\":1}", `{"":1}`, `{"a":{"":{"":1}}}`, `{"a":"x","":"y"}`,
	`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":{"k":{"l":{"m":{"n":{"o":{"p":{"q":1}}}}}}}}}}}}}}}}}`,
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	`{"` + strings.Repeat("k", 1100) + `":1}`, `{"` + strings.Repeat("k", 1024) + `":1}`,
	`{"` + strings.Repeat("k", 600) + `":{"` + strings.Repeat("j", 423) + `":1}}`,
	`{"` + strings.Repeat("k", 600) + `":{"` + strings.Repeat("j", 424) + `":1}}`,
	`{"a":123456789012345678901234567890}`, `{"a":-9223372036854775809}`, `{"a":1e400}`,
}

// TestJSONLineScan: every line gives the same values or the same error
// with the line scan as with the tokenizer alone, alone in a file and
// among others (its row and line in the error), and as JSON Lines of many
// keys.
func TestJSONLineScan(t *testing.T) {
	var wide strings.Builder
	wide.WriteString("{")
	for i := range fastKeys + 2 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":%d`, i, i)
	}
	wide.WriteString("}")
	lines := append(jsonFastLines, wide.String(), wide.String()[:wide.Len()-1]+`,"k3":1}`)
	// Each byte that is not plain in a string, at each place of keys and
	// values up to twenty bytes long (the scan reads eight at a time).
	for _, c := range []string{"\"", "\\", "\\n", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "\xc3", "\xe2\x82", "€"} {
		for n := range 20 {
			for at := 0; at <= n; at++ {
				str := strings.Repeat("a", at) + c + strings.Repeat("b", n-at)
				lines = append(lines, `{"k":"`+str+`"}`, `{"`+str+`":1}`)
			}
		}
	}
	for _, line := range lines {
		for _, text := range []string{line, line + "\n", `{"x":1}` + "\n\n" + line + "\r\n" + `{"y":"z"}`} {
			fast, slow := readLines(t, text, true), readLines(t, text, false)
			if fast != slow {
				t.Errorf("%q:\nline scan %s\ntokenizer %s", text, fast, slow)
			}
		}
	}
}

// jsonShapeLines are lines of one shape and lines that differ from it by a
// byte, a value's kind, white space, a key or its nesting.
var jsonShapeLines = []string{
	`{"t":"2026-01-01T00:00:00Z","d":"x","v":1.5,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"2026-01-01T00:01:00Z","d":"y","v":-2,"n":{"a":null,"b":true},"e":{}}`,
	`{"t":null,"d":false,"v":"s","n":{"a":"1","b":1e5},"e":{}}`,
	`{"t":"é","d":"日本","v":0,"n":{"a":0.5,"b":""},"e":{}}` + "\r",
	`  {"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}  `,
	`{"t":"x","d":"y","v":1 ,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":{"a":1},"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":[1],"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":01,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":1.,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":NaN,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":tru,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":nullx,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x\"y","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x` + "\x01" + `","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"` + "\xff" + `","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}} x`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{},"t":1}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"a":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s","c":2},"e":{}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1},"b":"s","e":{}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{"f":1}}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":1}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}{}`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}},`,
	`{"t":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}` + "\v",
	`{"stop":"x","d":"y","v":1,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":123456789012345678901234567890,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"t":"x","d":"y","v":-1e400,"n":{"a":1,"b":"s"},"e":{}}`,
	`{"a":1}`, `{"a":"x"}`, `{"a":null}`, `{}`, ` {} `, `{"a":{}}`, `{"a":1,"b":2}`, `{"b":1,"a":2}`,
}

// TestJSONLineShape: a line read after another, of its shape or not, gives
// what the tokenizer gives (a line of the last line's shape is read by
// comparing the bytes between values).
func TestJSONLineShape(t *testing.T) {
	lines := append(append([]string{}, jsonShapeLines...), jsonFastLines[:40]...)
	for _, a := range lines {
		for _, b := range lines {
			text := a + "\n" + b + "\n" + a + "\n" + b
			fast, slow := readLines(t, text, true), readLines(t, text, false)
			if fast != slow {
				t.Errorf("%q:\nline scan %s\ntokenizer %s", text, fast, slow)
			}
		}
	}
	// The shape is what the line scan reads.
	var s lineScan
	for i, line := range []string{jsonShapeLines[0], jsonShapeLines[1], jsonShapeLines[2], jsonShapeLines[3], `{"a":1}`} {
		if !s.scan([]byte(line)) {
			t.Fatalf("line %d not read by the line scan", i)
		}
		if want := i >= 1 && i <= 3; s.matched != want {
			t.Errorf("line %d: matched %v, want %v", i, s.matched, want)
		}
	}
}

// FuzzJSONFastPath: the line scan and the tokenizer read any text alike.
func FuzzJSONFastPath(f *testing.F) {
	for _, line := range jsonFastLines {
		f.Add(line)
	}
	for _, line := range jsonShapeLines {
		f.Add(jsonShapeLines[0] + "\n" + line)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if fast, slow := readLines(t, text, true), readLines(t, text, false); fast != slow {
			t.Errorf("%q:\nline scan %s\ntokenizer %s", text, fast, slow)
		}
	})
}
