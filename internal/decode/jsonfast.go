package decode

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// fastDepth is how deep the objects of a line lineScan reads may nest
// (well below maxJSONDepth: a deeper line is read by the tokenizer).
const fastDepth = 16

// fastKeys is how many keys one object of a line lineScan reads may hold
// (its duplicates are found by comparing each key with those before it).
const fastKeys = 128

// lineMember is a member of a line's object as lineScan reads it: offsets
// of the line.
type lineMember struct {
	key0, key1   int32 // the key, without its quotes
	text0, text1 int32 // the value's text (a string's without its quotes)
	level        int32 // how deep its object is: 0 for the line's object
	kind         jsonKind
}

// lineObject is an open object of a line: where its keys start (in
// lineScan.keys) and the length of the path of its members' prefix.
type lineObject struct {
	keys, path int
}

// lineScan reads a line of JSON Lines that holds one object in the common
// shape without the tokenizer (see the package doc): it only accepts what
// it reads positively and valid, and leaves everything else (scan false)
// to the tokenizer, which words the errors.
type lineScan struct {
	members []lineMember
	keys    []lineKey
	open    []lineObject
	// shape is the last line read member by member; matched, that the
	// line scan read last has its shape (its values in values).
	shape   lineShape
	matched bool
	values  []lineValue
	path    []byte // a path being built (learn)
}

// lineShape is the shape of a line of JSON Lines: the bytes between its
// scalar values (the braces, keys, colons, commas and white space around
// them) and the paths of its members. Gateways write every line of a file
// alike, so that the next line is mostly read by comparing those bytes and
// reading its values alone (match): no key read, compared for duplicates
// or joined into a path again.
//
// A line that matches is the same object with other scalars: its bytes are
// the shape's separators with a whole scalar value (a plain string, a
// number, true, false or null) between each two, and since a separator
// starts with white space, a comma or a brace, a value's end is where the
// line scan would end it. Its keys, nesting and paths are the shape's
// line's, which the line scan accepted whole.
type lineShape struct {
	ok      bool
	text    []byte  // the separators one after another
	ends    []int32 // the end of each separator in text; the last is the tail's
	members []shapeMember
	paths   []byte
}

// shapeMember is a member of a shape: its path (paths[p0:p1]), and
// whether it holds an object (its keys are members of their own) or the
// shape's next scalar value.
type shapeMember struct {
	p0, p1 int32
	object bool
}

// lineValue is a scalar value of a line that matched a shape: its text
// (a string's without its quotes) and kind (0 for null).
type lineValue struct {
	t0, t1 int32
	kind   jsonKind
}

// lineKey is a key of an open object: its offsets, and its length and
// first and last bytes (sig), compared before its bytes.
type lineKey struct {
	k0, k1, sig int32
}

func keySig(key []byte) int32 {
	if len(key) == 0 {
		return 0
	}
	return int32(len(key))<<16 | int32(key[0])<<8 | int32(key[len(key)-1])
}

// jsonSpace reports JSON's white space.
func jsonSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && jsonSpace(b[i]) {
		i++
	}
	return i
}

// plainString is the end (the closing quote) of a string starting at i
// (after its opening quote) with no escape and no control character, in
// valid UTF-8; -1 for any other.
func plainString(b []byte, i int) int {
	j := i
	// Eight bytes at a time while none is a quote, a backslash, a control
	// character or beyond ASCII; then byte by byte from the first that is.
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		if m := zeroBytes(x^quotes) | zeroBytes(x^backslashes) | ((x - controls) &^ x) | x&highBits; m&highBits != 0 {
			j += bits.TrailingZeros64(m&highBits) / 8
			break
		}
	}
	for j < len(b) && plainByte[b[j]] {
		j++
	}
	if j < len(b) && b[j] == '"' {
		return j
	}
	// Beyond ASCII: valid UTF-8 up to the closing quote.
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if !utf8.Valid(b[i:j]) {
				return -1
			}
			return j
		case c == '\\', c < 0x20:
			return -1
		}
	}
	return -1
}

const (
	lowBits     = 0x0101010101010101
	highBits    = 0x8080808080808080
	quotes      = '"' * lowBits
	backslashes = '\\' * lowBits
	controls    = 0x20 * lowBits
)

// zeroBytes has the high bit of its lowest zero byte of x set (and maybe
// of higher ones), none below it.
func zeroBytes(x uint64) uint64 { return (x - lowBits) &^ x & highBits }

// plainByte marks the bytes a string holds as they are: ASCII but control
// characters, the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// jsonNumberEnd is the end of the JSON number starting at i; -1 when there
// is none (its grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
// What follows it is the caller's to check.
func jsonNumberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		for i = d; i < len(b) && isDigit(b[i]); i++ {
		}
		if i == d {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
		if i == d {
			return -1
		}
	}
	return i
}

// hasWord reports whether b holds w at i.
func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}

// scan reads line (one object, white space around it) into s.members;
// false when the line is anything it does not read: an escape, a control
// character or invalid UTF-8 in a string, an array, a duplicate key, a
// path longer than maxJSONPath, objects nested deeper than fastDepth, more
// than fastKeys keys in an object, any text that is not JSON.
func (s *lineScan) scan(line []byte) bool {
	if len(line) > 1<<30 {
		return false
	}
	if s.matched = s.match(line); s.matched {
		return true
	}
	// The slices are kept (their memory reused) when the line is read.
	members, keys, open := s.members[:0], s.keys[:0], s.open[:0]
	i := skipJSONSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	open = append(open, lineObject{})
	i++
	const (
		keyOrEnd = iota // after {
		key             // after ,
		next            // after a value
	)
	state := keyOrEnd
	for {
		i = skipJSONSpace(line, i)
		if i >= len(line) {
			return false
		}
		c := line[i]
		if state == next || (state == keyOrEnd && c == '}') {
			switch c {
			case ',':
				if state != next {
					return false
				}
				state = key
				i++
				continue
			case '}':
			default:
				return false
			}
			// The end of an object.
			i++
			top := open[len(open)-1]
			keys = keys[:top.keys]
			open = open[:len(open)-1]
			if len(open) == 0 {
				s.members, s.keys, s.open = members, keys, open
				if skipJSONSpace(line, i) != len(line) {
					return false
				}
				s.learn(line, i)
				return true
			}
			state = next
			continue
		}
		// A member.
		if c != '"' {
			return false
		}
		k0 := i + 1
		k1 := plainString(line, k0)
		if k1 < 0 {
			return false
		}
		top := &open[len(open)-1]
		path := top.path + k1 - k0
		if path > maxJSONPath || len(keys)-top.keys >= fastKeys {
			return false
		}
		key := line[k0:k1]
		sig := keySig(key)
		for _, k := range keys[top.keys:] {
			if k.sig == sig && string(line[k.k0:k.k1]) == string(key) {
				return false
			}
		}
		keys = append(keys, lineKey{int32(k0), int32(k1), sig})
		i = skipJSONSpace(line, k1+1)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipJSONSpace(line, i+1)
		if i >= len(line) {
			return false
		}
		m := lineMember{key0: int32(k0), key1: int32(k1), level: int32(len(open) - 1)}
		if line[i] == '{' {
			if len(open) >= fastDepth {
				return false
			}
			m.kind = jsonObject
			members = append(members, m)
			open = append(open, lineObject{keys: len(keys), path: path + len(pathSeparator)})
			state = keyOrEnd
			i++
			continue
		}
		v, end := scalarAt(line, i)
		if end < 0 {
			return false
		}
		m.kind, m.text0, m.text1 = v.kind, v.t0, v.t1
		i = end
		members = append(members, m)
		state = next
	}
}

// emit calls value for each member scan read, as readMembers does: path
// (in *pathBuf) and text valid only during the call.
func (s *lineScan) emit(line []byte, pathBuf *[]byte, value func(path []byte, k jsonKind, text []byte) error) error {
	if s.matched {
		return s.emitMatched(line, value)
	}
	var prefix [fastDepth + 1]int
	path := (*pathBuf)[:0]
	defer func() { *pathBuf = path }()
	for _, m := range s.members {
		key := line[m.key0:m.key1]
		var text []byte
		if m.kind != 0 && m.kind != jsonObject {
			text = line[m.text0:m.text1]
		}
		if m.level == 0 && m.kind != jsonObject {
			// A key of the line's object is its path as it is.
			if err := value(key, m.kind, text); err != nil {
				return err
			}
			continue
		}
		path = append(path[:prefix[m.level]], key...)
		if err := value(path, m.kind, text); err != nil {
			return err
		}
		if m.kind == jsonObject {
			path = append(path, pathSeparator...)
			prefix[m.level+1] = len(path)
		}
	}
	return nil
}

// emitMatched is emit for a line that matched the shape: the shape's paths
// with the line's values.
func (s *lineScan) emitMatched(line []byte, value func(path []byte, k jsonKind, text []byte) error) error {
	sh := &s.shape
	v := 0
	for _, m := range sh.members {
		path := sh.paths[m.p0:m.p1:m.p1] // no room after it: an append copies
		if m.object {
			if err := value(path, jsonObject, nil); err != nil {
				return err
			}
			continue
		}
		val := s.values[v]
		v++
		var text []byte
		if val.kind != 0 {
			text = line[val.t0:val.t1]
		}
		if err := value(path, val.kind, text); err != nil {
			return err
		}
	}
	return nil
}

// learn makes the line scan just read whole (its members, the object
// ending at end) the shape lines are matched against.
func (s *lineScan) learn(line []byte, end int) {
	sh := &s.shape
	sh.ok = false
	sh.text, sh.ends, sh.members, sh.paths = sh.text[:0], sh.ends[:0], sh.members[:0], sh.paths[:0]
	var prefix [fastDepth + 1]int
	path := s.path[:0]
	at := 0 // the end of the last value
	for _, m := range s.members {
		path = append(path[:prefix[m.level]], line[m.key0:m.key1]...)
		p0 := len(sh.paths)
		sh.paths = append(sh.paths, path...)
		member := shapeMember{p0: int32(p0), p1: int32(len(sh.paths)), object: m.kind == jsonObject}
		sh.members = append(sh.members, member)
		if member.object {
			path = append(path, pathSeparator...)
			prefix[m.level+1] = len(path)
			continue
		}
		v0, v1 := int(m.text0), int(m.text1)
		if m.kind == jsonString {
			v0, v1 = v0-1, v1+1 // the quotes
		}
		sh.text = append(sh.text, line[at:v0]...)
		sh.ends = append(sh.ends, int32(len(sh.text)))
		at = v1
	}
	sh.text = append(sh.text, line[at:end]...)
	sh.ends = append(sh.ends, int32(len(sh.text)))
	s.path = path
	sh.ok = true
}

// match reads line into s.values if it has the shape's bytes between its
// values (see lineShape); false for any other line.
func (s *lineScan) match(line []byte) bool {
	sh := &s.shape
	if !sh.ok {
		return false
	}
	n := len(sh.ends) - 1 // values
	values := s.values[:0]
	i, from := 0, int32(0)
	for k, to := range sh.ends {
		sep := sh.text[from:to]
		from = to
		if len(line)-i < len(sep) || string(line[i:i+len(sep)]) != string(sep) {
			return false
		}
		i += len(sep)
		if k == n {
			break
		}
		v, end := scalarAt(line, i)
		if end < 0 {
			return false
		}
		i = end
		values = append(values, v)
	}
	s.values = values
	return skipJSONSpace(line, i) == len(line)
}

// scalarAt reads the value at i of line if it is a plain string, a number,
// true, false or null: its kind and text, and the end of its bytes; -1 for
// any other value or none.
func scalarAt(line []byte, i int) (lineValue, int) {
	if i >= len(line) {
		return lineValue{}, -1
	}
	v := lineValue{t0: int32(i)}
	switch c := line[i]; {
	case c == '"':
		end := plainString(line, i+1)
		if end < 0 {
			return v, -1
		}
		v.kind, v.t0, v.t1 = jsonString, int32(i+1), int32(end)
		return v, end + 1
	case c == '-' || isDigit(c):
		end := jsonNumberEnd(line, i)
		v.kind, v.t1 = jsonNumber, int32(end)
		return v, end
	case c == 't' && hasWord(line, i, "true"):
		v.kind, v.t1 = jsonBool, int32(i+4)
	case c == 'f' && hasWord(line, i, "false"):
		v.kind, v.t1 = jsonBool, int32(i+5)
	case c == 'n' && hasWord(line, i, "null"):
		v.t1 = int32(i + 4) // kind 0: no text
	default:
		return v, -1
	}
	return v, int(v.t1)
}
