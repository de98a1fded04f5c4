//go:build unix

package upstream

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// countingConn counts the reads that reach the socket directly.
type countingConn struct {
	net.Conn
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads++
	return c.Conn.Read(p)
}

// loopbackPair returns both ends of a real TCP connection on loopback.
func loopbackPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// readingAheadOver wraps the client end as the transport does, counting its direct reads;
// it also returns how many reads went ahead (buffers taken from the pool).
func readingAheadOver(t testing.TB, c *net.TCPConn) (*readAheadConn, *countingConn, *int) {
	t.Helper()
	counted := &countingConn{Conn: c}
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	ahead := new(int)
	pool := &sync.Pool{New: func() any {
		*ahead++
		b := make([]byte, readAheadSize)
		return &b
	}}
	return newReadAheadConn(counted, raw, pool), counted, ahead
}

// readAllIn reads r to its end in reads of size bytes, as the transport's buffer does.
func readAllIn(r io.Reader, size int) ([]byte, error) {
	var out []byte
	p := make([]byte, size)
	for {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
	}
}

func TestReadAhead(t *testing.T) {
	burst := bytes.Repeat([]byte("data: {\"type\":\"response.output_text.delta\",\"delta\":\"word \"}\n\n"), 700) // ~40 KiB

	t.Run("a burst is read in a few system calls and arrives whole", func(t *testing.T) {
		client, server := loopbackPair(t)
		if _, err := server.Write(burst); err != nil {
			t.Fatal(err)
		}
		server.Close()
		c, counted, _ := readingAheadOver(t, client)
		got, err := readAllIn(c, 1<<10)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v, want io.EOF after the burst", err)
		}
		if !bytes.Equal(got, burst) {
			t.Fatalf("read %d bytes, want the %d written, in order", len(got), len(burst))
		}
		if direct := counted.reads; direct > len(burst)/(4<<10) {
			t.Errorf("%d reads of 1 KiB reached the socket for %d bytes, want a few (one a burst)", direct, len(burst))
		}
		if c.held != nil {
			t.Error("a buffer is still held after the end")
		}
	})

	t.Run("a paced frame reads nothing ahead and holds no buffer while it waits", func(t *testing.T) {
		client, server := loopbackPair(t)
		frame := burst[:300]
		if _, err := server.Write(frame); err != nil {
			t.Fatal(err)
		}
		c, _, ahead := readingAheadOver(t, client)
		p := make([]byte, 1<<10)
		n, err := c.Read(p)
		if err != nil || !bytes.Equal(p[:n], frame) {
			t.Fatalf("Read = %d, %v; want the 300-byte frame", n, err)
		}
		if c.held != nil || *ahead != 0 {
			t.Errorf("held %v, %d buffers taken: a frame smaller than the read must not read ahead", c.held != nil, *ahead)
		}
		if n, err := c.Read(nil); n != 0 || err != nil || *ahead != 0 {
			t.Errorf("an empty read = %d, %v, %d buffers taken; want 0, nil and none", n, err, *ahead)
		}
	})

	// The end of a stream comes after every byte, once, wherever the read ahead meets it.
	for _, tc := range []struct {
		name string
		size int
	}{
		{"the end after bytes read ahead", 3 << 10},
		{"the end right after a full read", 1 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := loopbackPair(t)
			if _, err := server.Write(burst[:tc.size]); err != nil {
				t.Fatal(err)
			}
			server.Close()
			c, _, _ := readingAheadOver(t, client)
			got, err := readAllIn(c, 1<<10)
			if !errors.Is(err, io.EOF) || !bytes.Equal(got, burst[:tc.size]) {
				t.Fatalf("read %d bytes, %v; want %d then io.EOF", len(got), err, tc.size)
			}
			if n, err := c.Read(make([]byte, 1<<10)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("a read after the end = %d, %v; want 0, io.EOF", n, err)
			}
		})
	}

	t.Run("a buffer goes back to the pool once read out", func(t *testing.T) {
		client, server := loopbackPair(t)
		if _, err := server.Write(burst[:4<<10]); err != nil {
			t.Fatal(err)
		}
		c, _, ahead := readingAheadOver(t, client)
		p := make([]byte, 1<<10)
		read := 0
		for read < 4<<10 {
			n, err := c.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			read += n
		}
		if c.held != nil {
			t.Fatal("a buffer is still held with every byte read")
		}
		if *ahead != 1 {
			t.Errorf("%d buffers made for one burst, want one", *ahead)
		}
	})
}

// BenchmarkReadBurst reads a fast upstream's reply (about 40 KiB, in the transport's 1 KiB
// reads) from a loopback socket, as it arrives directly and read ahead. The difference is
// the system calls saved; it is largest where they are dearest (a virtual machine's).
func BenchmarkReadBurst(b *testing.B) {
	burst := bytes.Repeat([]byte("data: {\"type\":\"response.output_text.delta\",\"delta\":\"word \"}\n\n"), 700)
	for _, ahead := range []bool{false, true} {
		name := "direct"
		if ahead {
			name = "read ahead"
		}
		b.Run(name, func(b *testing.B) {
			client, server := loopbackPair(b)
			var r io.Reader = client
			if ahead {
				c, _, _ := readingAheadOver(b, client)
				r = c
			}
			p := make([]byte, 1<<10)
			b.SetBytes(int64(len(burst)))
			for b.Loop() {
				if _, err := server.Write(burst); err != nil {
					b.Fatal(err)
				}
				for read := 0; read < len(burst); {
					n, err := r.Read(p)
					if err != nil {
						b.Fatal(err)
					}
					read += n
				}
			}
		})
	}
}
