package ws

import (
	"bytes"
	"sync"
)

// Pools of the server's buffers, so that a busy connection reuses them and
// an idle one holds none (BenchmarkIdleMemory: ≤ 8 KiB per idle session).
type pools struct {
	reads  sync.Pool // *bytes.Buffer: frames being read
	frames sync.Pool // *[]byte: frames being written
	corks  sync.Pool // *[]byte: batches of frames (corkConn)
}

// maxPooled is the largest buffer kept for reuse.
const maxPooled = 64 << 10

func (s *Server) getBuf() *bytes.Buffer {
	if b, ok := s.pools.reads.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (s *Server) putBuf(b *bytes.Buffer) {
	if b.Cap() > maxPooled {
		return
	}
	b.Reset()
	s.pools.reads.Put(b)
}

func (s *Server) getFrame() []byte {
	if p, ok := s.pools.frames.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 256)
}

func (s *Server) putFrame(b []byte) {
	if b == nil || cap(b) > maxPooled {
		return
	}
	s.pools.frames.Put(&b)
}
