package strictjwt

import (
	"errors"
	"testing"
)

func TestCheckNumericDates(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		ok      bool
	}{
		{"numbers", `{"exp":1700000000,"iat":1699990000,"nbf":1699990000}`, true},
		{"fractional exp", `{"exp":1700000000.5}`, true},
		{"no time claims", `{"sub":"alice"}`, true},
		{"exp as string", `{"exp":"9999999999"}`, false},
		{"iat as string", `{"exp":1,"iat":"1"}`, false},
		{"nbf as string", `{"exp":1,"nbf":"1"}`, false},
		{"exp null", `{"exp":null}`, false},
		{"exp object", `{"exp":{"n":1}}`, false},
		{"exp bool", `{"exp":true}`, false},
		{"duplicate exp, last a string", `{"exp":1,"exp":"9999999999"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNumericDates([]byte(tt.payload))
			if tt.ok && err != nil {
				t.Fatalf("CheckNumericDates(%s) = %v, want nil", tt.payload, err)
			}
			if !tt.ok && !errors.Is(err, ErrNotNumeric) {
				t.Fatalf("CheckNumericDates(%s) = %v, want ErrNotNumeric", tt.payload, err)
			}
		})
	}
}

func FuzzCheckNumericDates(f *testing.F) {
	f.Add([]byte(`{"exp":1700000000}`))
	f.Add([]byte(`{"exp":"1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = CheckNumericDates(b) // must not panic
	})
}
