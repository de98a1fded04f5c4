package main

import "testing"

func TestPlaygroundURL(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"127.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/"},
		{"[::]:9000", "http://127.0.0.1:9000/"},
		{"[::1]:9000", "http://[::1]:9000/"},
		{"10.0.0.2:80", "http://10.0.0.2:80/"},
	}
	for _, tc := range cases {
		if got := playgroundURL(tc.addr); got != tc.want {
			t.Errorf("playgroundURL(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
