package iostreams

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	cols := []Column{{Header: "table"}, {Header: "rows", Right: true}, {Header: "size", Pipe: "size_bytes", Right: true}, {Header: "note", Wrap: 12}}
	rows := [][]string{
		{"iot.readings", "1500", "22.4 KiB", "a note\twith a tab and words to wrap"},
		{"iot.empty", "0", "0 B", ""},
	}
	for _, tc := range []struct {
		name string
		tty  bool
		want string
	}{
		{"terminal", true, "" +
			"TABLE         ROWS      SIZE  NOTE\n" +
			"iot.readings  1500  22.4 KiB  a note with\n" +
			"                              a tab and\n" +
			"                              words to\n" +
			"                              wrap\n" +
			"iot.empty        0       0 B\n"},
		{"pipe", false, "" +
			"table\trows\tsize_bytes\tnote\n" +
			"iot.readings\t1500\t22.4 KiB\ta note with a tab and words to wrap\n" +
			"iot.empty\t0\t0 B\t\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, out, _ := Test()
			ios.SetStdoutTTY(tc.tty)
			p := ios.NewTable(cols...)
			for _, r := range rows {
				p.AddRow(r...)
			}
			if err := p.Render(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s\n(quoted %q)", out, tc.want, out)
			}
		})
	}
	t.Run("empty pipe keeps the header", func(t *testing.T) {
		ios, out, _ := Test()
		if err := ios.NewTable(cols...).Render(); err != nil || out.String() != "table\trows\tsize_bytes\tnote\n" {
			t.Errorf("%q, %v", out, err)
		}
	})
	t.Run("wrong row", func(t *testing.T) {
		ios, _, _ := Test()
		p := ios.NewTable(cols...)
		p.AddRow("one cell")
		if err := p.Render(); err == nil {
			t.Error("a row with one cell of four was printed")
		}
	})
}

func TestPrintJSON(t *testing.T) {
	v := map[string]any{"table": "iot.readings", "files": []string{"a", "b"}}
	ios, out, _ := Test()
	if err := ios.PrintJSON(v); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `{"files":["a","b"],"table":"iot.readings"}`+"\n" {
		t.Errorf("in a pipe: %q, want one line", got)
	}
	ios, out, _ = Test()
	ios.SetStdoutTTY(true)
	if err := ios.PrintJSON(v); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"files\": [\n    \"a\",\n    \"b\"\n  ],\n  \"table\": \"iot.readings\"\n}\n"
	if got := out.String(); got != want {
		t.Errorf("on a terminal: %q, want %q", got, want)
	}
	if err := ios.PrintJSON(func() {}); err == nil {
		t.Error("a func was encoded")
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Error(err)
	}
}

func TestTimedOut(t *testing.T) {
	clock := time.Date(2026, 1, 5, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	now := func() time.Time { clock = clock.Add(time.Second); return clock }

	ios, out, _ := Test()
	w := ios.TimedOut(now)
	for _, s := range []string{"loaded a.csv\n", "created table x\n  time column t\n", "part", "ial line\n"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	want := "2026-01-05T09:00:01Z loaded a.csv\n" +
		"2026-01-05T09:00:02Z created table x\n" +
		"2026-01-05T09:00:03Z   time column t\n" +
		"2026-01-05T09:00:04Z partial line\n"
	if out.String() != want {
		t.Errorf("in a pipe:\n%s\nwant (UTC, one time per line):\n%s", out, want)
	}

	ios, out, _ = Test()
	ios.SetStdoutTTY(true)
	if _, err := ios.TimedOut(now).Write([]byte("loaded a.csv\n")); err != nil || out.String() != "loaded a.csv\n" {
		t.Errorf("on a terminal: %q, %v", out, err)
	}

	// Lines written at once stay whole.
	ios, out, _ = Test()
	w = ios.TimedOut(nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Write([]byte("one whole line\n"))
		}()
	}
	wg.Wait()
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if _, rest, ok := strings.Cut(l, " "); !ok || rest != "one whole line" {
			t.Fatalf("line %q", l)
		}
	}
}
