package upstream

// oddToken reports a token outside strings that fastjson reads but encoding/json refuses:
// a number that breaks JSON's grammar (fastjson takes any run of digits, signs, dots and
// exponents, "+1", ".5" and "1.2.3" included) or a bare word other than true, false and
// null (fastjson takes inf and nan). An unterminated string counts too.
func oddToken(data []byte) bool {
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			if i = stringEnd(data, i); i < 0 {
				return true
			}
		case c == '-' || c == '+' || c == '.' || isDigit(c):
			j := i
			for j < len(data) && isNumberByte(data[j]) {
				j++
			}
			if !validNumber(data[i:j]) {
				return true
			}
			i = j - 1
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			j := i
			for j < len(data) && ('a' <= data[j] && data[j] <= 'z' || 'A' <= data[j] && data[j] <= 'Z') {
				j++
			}
			if w := string(data[i:j]); w != "true" && w != "false" && w != "null" {
				return true
			}
			i = j - 1
		}
	}
	return false
}

// stringEnd returns the index of the quote closing the string that opens at data[open],
// or -1 when it does not close.
func stringEnd(data []byte, open int) int {
	for i := open + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
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
