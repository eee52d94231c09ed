package decode

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Text numbers (Timelake convention, docs/ingest.md "Numbers"): a value is
// loaded only when the text is a decimal number a person wrote as one, and
// only when the column's type holds it exactly:
//
//	[+-]digits[.digits][(e|E)[+-]digits]   also ".5" and "5."
//	NaN, Inf, Infinity                     any case; Inf and Infinity with a sign
//
// Spaces around the value are ignored. Refused, with a reason naming what
// was found: hexadecimal notation (0x1.8p1, which Go's strconv accepts),
// digit separators (1_000, 1,000, 1 000), a value that overflows the type
// (1e309), a non-zero value that underflows to 0 (1e-400), and, for
// float/double columns, a value written as a whole number (digits only)
// that the type cannot hold exactly (9007199254740993 is not a double).
// Decimal fractions round to the nearest double as in every reader (0.1).

// numberChar classes the bytes of decimal notation: digits, signs, and
// the point and exponent letters that make a number not a whole one. Any
// other byte sends a value to the slow path (words, or a refusal with its
// reason).
const (
	charOther = iota
	charDigit
	charSign
	charFrac // '.', 'e', 'E'
)

var numberChar = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = charDigit
	}
	t['+'], t['-'] = charSign, charSign
	t['.'], t['e'], t['E'] = charFrac, charFrac, charFrac
	return t
}()

// parseFloatText parses s as a float of bitSize 32 or 64 under the rules
// above. problem is "" on success, notNumber for text that is no number,
// else an explanation to append to "cannot parse ... as <type>".
func parseFloatText(s string, bitSize int) (v float64, problem string) {
	t := s
	if len(t) > 0 && (t[0] == ' ' || t[len(t)-1] == ' ' || t[0] == '\t' || t[len(t)-1] == '\t') {
		t = strings.TrimSpace(t) // the common case, a value without spaces, skips the call
	}
	if bitSize == 64 {
		if v, ok := fastDecimal(t); ok {
			return v, ""
		}
	}
	whole := true
	for i := 0; i < len(t); i++ {
		switch numberChar[t[i]] {
		case charOther:
			return floatWord(t, bitSize)
		case charFrac:
			whole = false
		}
	}
	v, err := strconv.ParseFloat(t, bitSize)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, "out of range for " + floatName(bitSize)
		}
		return 0, notNumber
	}
	if v == 0 && nonZeroMantissa(t) {
		return 0, "too small for " + floatName(bitSize) + ": it would be stored as 0"
	}
	if whole && !exactWhole(t, bitSize) {
		return 0, "it would be stored rounded: " + wholeNumberLimit(bitSize)
	}
	return v, ""
}

// pow10 holds the powers of ten a double holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastDecimal parses the common sensor reading, [+-]digits[.digits] of at
// most 19 bytes after the sign with at most 2^53 as its digits, into the
// nearest double: float64(digits) and 10^fraction (at most 18 digits
// after the point) are then exact, so one division rounds correctly
// (Clinger's fast path, the one strconv takes first too). ok is false for
// anything else, which takes the full rules. It reads each byte once,
// where checking the bytes and then calling strconv would read them
// twice; 19 digits cannot overflow 64 bits, so the digits are summed
// without a check per digit.
func fastDecimal(t string) (v float64, ok bool) {
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	if len(t) == 0 || len(t) > 19 {
		return 0, false
	}
	var mant uint64
	i := 0
	for ; i < len(t); i++ {
		d := t[i] - '0'
		if d > 9 {
			break
		}
		mant = mant*10 + uint64(d)
	}
	whole, frac := i, 0
	if i < len(t) {
		if t[i] != '.' {
			return 0, false
		}
		for i++; i < len(t); i++ {
			d := t[i] - '0'
			if d > 9 {
				return 0, false
			}
			mant = mant*10 + uint64(d)
		}
		frac = len(t) - whole - 1
	}
	if whole+frac == 0 || mant > 1<<53 {
		return 0, false
	}
	v = float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// notNumber is the problem of a value that is no number at all: the caller
// says "cannot parse" without a further explanation.
const notNumber = "-"

// floatWord handles text with bytes outside decimal notation: the words
// for NaN and infinity, else a refusal that says what the text looks like.
func floatWord(t string, bitSize int) (float64, string) {
	if tt := strings.TrimSpace(t); tt != t {
		return parseFloatText(tt, bitSize) // other white space than ' ', '\t'
	}
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity":
		v, _ := strconv.ParseFloat(t, bitSize)
		return v, ""
	case "nan":
		if t[0] != '+' && t[0] != '-' {
			return math.NaN(), ""
		}
	}
	return 0, numberLookalike(t)
}

// numberLookalike explains why text that a reader might take for a number
// is not one here, or returns notNumber.
func numberLookalike(t string) string {
	body := strings.TrimLeft(t, "+-")
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		return "hexadecimal notation is not accepted: write the value in decimal digits"
	}
	digits, seps := 0, 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '_' || c == ',' || c == ' ' || c == '\'':
			seps++
		case numberChar[c] == charOther:
			return notNumber
		}
	}
	if digits > 0 && seps > 0 {
		if strings.Count(body, ",") == 1 && seps == 1 {
			return "digit separators are not accepted: write the digits without them, with a point for decimals (a decimal comma is read with --csv-decimal-comma)"
		}
		return "digit separators are not accepted: write the digits without them, with a point for decimals"
	}
	return notNumber
}

// nonZeroMantissa reports whether decimal text has a non-zero digit before
// its exponent.
func nonZeroMantissa(t string) bool {
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// exactWhole reports whether the whole number t (sign and digits) is held
// exactly by a float of bitSize bits. Below 2^24 (float) or 2^53 (double)
// every whole number is; beyond, only some are.
func exactWhole(t string, bitSize int) bool {
	sig := strings.TrimLeft(strings.TrimLeft(t, "+-"), "0")
	if (bitSize == 64 && len(sig) <= 15) || (bitSize == 32 && len(sig) <= 7) {
		return true
	}
	n, ok := new(big.Int).SetString(t, 10)
	if !ok {
		return false
	}
	f := new(big.Float).SetInt(n)
	if bitSize == 32 {
		_, acc := f.Float32()
		return acc == big.Exact
	}
	_, acc := f.Float64()
	return acc == big.Exact
}

// wholeNumberLimit says up to where a float type holds every whole number.
func wholeNumberLimit(bitSize int) string {
	if bitSize == 32 {
		return "a float holds every whole number only up to 2^24 = 16777216"
	}
	return "a double holds every whole number only up to 2^53 = 9007199254740992"
}

// extraScale returns the number of digits after the point a power-of-ten
// fraction with denominator d (a product of 2s and 5s) needs: the larger
// of its powers of 2 and of 5.
func extraScale(d *big.Int) int32 {
	d = new(big.Int).Set(d)
	var twos, fives int32
	for d.Sign() > 0 && d.Bit(0) == 0 {
		d.Rsh(d, 1)
		twos++
	}
	five, q, r := big.NewInt(5), new(big.Int), new(big.Int)
	for d.Sign() > 0 {
		if q.QuoRem(d, five, r); r.Sign() != 0 {
			break
		}
		d.Set(q)
		fives++
	}
	return max(twos, fives)
}

// parseDecimalText parses s into a decimal(prec, scale) value under the
// number rules, exactly: decimal notation only (no NaN or infinity, an
// exponent of at most 1000), and refused when it has more digits after the
// point than scale (it would be rounded) or more in all than prec.
//
// A value with more digits after the point than scale sets scaleProblem,
// and problem names the scale it needs: no precision ever holds it, so a
// reason need not name one.
func parseDecimalText(s string, prec, scale int32) (n decimal128.Num, problem string, scaleProblem bool) {
	t := strings.TrimSpace(s)
	for i := 0; i < len(t); i++ {
		if numberChar[t[i]] == charOther {
			return decimal128.Num{}, numberLookalike(t), false
		}
	}
	if e := strings.IndexAny(t, "eE"); e >= 0 {
		if exp, err := strconv.Atoi(t[e+1:]); err != nil || exp > 1000 || exp < -1000 {
			return decimal128.Num{}, notNumber, false
		}
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return decimal128.Num{}, notNumber, false
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return decimal128.Num{}, fmt.Sprintf("more than %d digits after the point: it needs scale %d and would be rounded; a decimal column's scale never changes, not even with --evolve widen",
			scale, scale+extraScale(r.Denom())), true
	}
	if r.Num().BitLen() > 127 {
		return decimal128.Num{}, fmt.Sprintf("more than %d digits", prec), false
	}
	n = decimal128.FromBigInt(r.Num())
	if !n.FitsInPrecision(prec) {
		return decimal128.Num{}, fmt.Sprintf("more than %d digits", prec), false
	}
	return n, "", false
}

// exactInt64 reports whether a double holds v exactly.
func exactInt64(v int64) bool {
	if v >= -1<<53 && v <= 1<<53 {
		return true
	}
	f := float64(v)
	// float64(v) is within [-2^63, 2^63]; 2^63 itself is not an int64.
	return f < math.MaxInt64 && int64(f) == v
}

// exactUint64 reports whether a double holds v exactly.
func exactUint64(v uint64) bool {
	if v <= 1<<53 {
		return true
	}
	f := float64(v)
	return f < math.MaxUint64 && uint64(f) == v
}

func floatName(bitSize int) string {
	if bitSize == 32 {
		return "float"
	}
	return "double"
}

// numberReason is the reason for text that is not a number of type dst.
func numberReason(s string, dst arrow.DataType, problem string) string {
	r := "cannot parse " + quoteValue(s) + " as " + typeName(dst)
	switch {
	case problem != notNumber && problem != "":
		r += " (" + problem + ")"
	case isFloatWord(s) && arrow.IsInteger(dst.ID()):
		r += " (" + floatWordHint + ")"
	case isNullToken(s):
		r += " (" + nullTokenHint + ")"
	}
	return r
}

// floatWordHint is the reason for NaN or an infinity in a column of whole
// numbers: a float value, or a gateway's word for a missing one.
const floatWordHint = "NaN and infinities are floating-point values, which a column of whole numbers cannot hold " +
	"(a double column holds them; a column's type does not change: docs/schema.md); " +
	"if the gateway writes it for a missing value, --csv-null names it"

// isFloatWord reports whether s is NaN or an infinity as text (any case,
// a sign before an infinity).
func isFloatWord(s string) bool {
	t := strings.TrimLeft(strings.TrimSpace(s), "+-")
	for _, w := range []string{"nan", "inf", "infinity"} {
		if strings.EqualFold(t, w) {
			return true
		}
	}
	return false
}

// parseIntText parses s as a base-10 integer of bitSize bits (spaces
// around it ignored). problem follows parseFloatText.
func parseIntText(s string, bitSize int) (int64, string) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseInt(t, 10, bitSize)
	if err == nil {
		return v, ""
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, "out of range"
	}
	if _, p := parseFloatText(t, 64); p == "" {
		return 0, notNumber // a fraction or exponent: not a whole number
	}
	return 0, numberLookalike(t)
}

// nullTokens are the texts other tools write for a missing value. They are
// strings like any other (Timelake convention: only an empty cell is null,
// unless CSV.Null names the token); in a column of another type the
// refusal says so, and type inference looks past them (sniffText).
var nullTokens = []string{"null", "na", "n/a", "nan", "none", "nil", "-", "#n/a"}

const nullTokenHint = "only an empty cell is null; tokens such as NULL or NA are text unless --csv-null names them"

// decimalPoint rewrites a number written with a decimal comma (CSV.DecimalComma:
// "22,5", "-0,5e3") in decimal notation ("22.5"). A point in it is refused
// (problem), never read: in the locales that write a decimal comma it
// separates thousands (1.234,5). Text with more than one comma stays text
// that is no number.
func decimalPoint(s string) (string, string) {
	if strings.IndexByte(s, '.') >= 0 {
		return "", "with --csv-decimal-comma the decimal separator is the comma; a point is not read (it separates thousands in those locales)"
	}
	return strings.Replace(s, ",", ".", 1), ""
}

func isNullToken(s string) bool {
	t := strings.TrimSpace(s)
	for _, n := range nullTokens {
		if strings.EqualFold(t, n) {
			return true
		}
	}
	return false
}

// strictFloatType is the column type the parallel CSV path gives float and
// double columns of the table: arrow-go's CSV reader then parses them with
// strictFloatBuilder (the rules above) straight into float32/float64
// storage, instead of building a string column first. A value it refuses
// is a row error, and Decode decodes the file again sequentially, where
// the text converters word the reason.
type strictFloatType struct {
	arrow.ExtensionBase
	bits int
}

func newStrictFloatType(storage arrow.DataType) *strictFloatType {
	bits := 64
	if storage.ID() == arrow.FLOAT32 {
		bits = 32
	}
	return &strictFloatType{ExtensionBase: arrow.ExtensionBase{Storage: storage}, bits: bits}
}

func (t *strictFloatType) ArrayType() reflect.Type { return reflect.TypeOf(strictFloatArray{}) }
func (t *strictFloatType) ExtensionName() string   { return "timelake.strict-float" }
func (t *strictFloatType) Serialize() string       { return "" }
func (t *strictFloatType) ExtensionEquals(o arrow.ExtensionType) bool {
	s, ok := o.(*strictFloatType)
	return ok && s.bits == t.bits
}

func (t *strictFloatType) Deserialize(storage arrow.DataType, _ string) (arrow.ExtensionType, error) {
	return newStrictFloatType(storage), nil
}

// NewBuilder implements array.CustomExtensionBuilder.
func (t *strictFloatType) NewBuilder(mem memory.Allocator) array.Builder {
	b := &strictFloatBuilder{ExtensionBuilder: array.NewExtensionBuilder(mem, t)}
	if t.bits == 32 {
		b.f32 = b.Builder.(*array.Float32Builder)
	} else {
		b.f64 = b.Builder.(*array.Float64Builder)
	}
	return b
}

type strictFloatArray struct{ array.ExtensionArrayBase }

// strictFloatBuilder appends text under the number rules; arrow-go's CSV
// reader calls AppendValueFromString for every non-empty cell.
type strictFloatBuilder struct {
	*array.ExtensionBuilder
	f32 *array.Float32Builder
	f64 *array.Float64Builder
}

var errNotStrictNumber = errors.New("not a number under the text number rules")

func (b *strictFloatBuilder) AppendValueFromString(s string) error {
	if b.f64 != nil {
		v, problem := parseFloatText(s, 64)
		if problem != "" {
			return errNotStrictNumber // the reader appends a null
		}
		b.f64.Append(v)
		return nil
	}
	v, problem := parseFloatText(s, 32)
	if problem != "" {
		return errNotStrictNumber
	}
	b.f32.Append(float32(v))
	return nil
}

// storageOf returns the storage array of a strictFloatType column, or arr.
func storageOf(arr arrow.Array) arrow.Array {
	if e, ok := arr.(array.ExtensionArray); ok {
		return e.Storage()
	}
	return arr
}
