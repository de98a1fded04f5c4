package upstream

// oddToken reads the token outside strings that data starts with and returns its length
// (at least 1) and whether fastjson reads it but encoding/json refuses it: a number that
// breaks JSON's grammar (fastjson takes any run of digits, signs, dots and exponents, "+1",
// ".5" and "1.2.3" included) or a bare word other than true, false and null (fastjson takes
// inf and nan). Any other byte (structure, spaces) is a token of one byte, never odd.
func oddToken(data []byte) (int, bool) {
	c := data[0]
	switch {
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		j := 1
		for j < len(data) && isNumberByte(data[j]) {
			j++
		}
		return j, !validNumber(data[:j])
	case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		j := 1
		for j < len(data) && ('a' <= data[j] && data[j] <= 'z' || 'A' <= data[j] && data[j] <= 'Z') {
			j++
		}
		w := string(data[:j])
		return j, w != "true" && w != "false" && w != "null"
	}
	return 1, false
}

// validNumber reports whether b is a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// digits returns the index after the run of digits starting at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isNumberByte(c byte) bool {
	return isDigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}
