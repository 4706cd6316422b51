package ws

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/coder/websocket"
)

// turnWS is the websocket and socket of BenchmarkWSTurn: frames come from
// in, and each terminator written is signalled on terms. It does as
// little as possible, so that the benchmark measures the server.
type turnWS struct {
	in      chan []byte
	pending []byte
	closed  chan struct{}
	terms   chan []byte // the terminators written
}

func (f *turnWS) wait() error {
	if f.pending != nil {
		return nil
	}
	select {
	case b, ok := <-f.in:
		if !ok {
			return io.EOF
		}
		f.pending = b
		return nil
	case <-f.closed:
		return errors.New("closed")
	}
}

func (f *turnWS) buffered() bool             { return f.pending != nil }
func (f *turnWS) interrupt()                 {}
func (f *turnWS) resume()                    {}
func (f *turnWS) cork()                      {}
func (f *turnWS) uncork() error              { return nil }
func (f *turnWS) stopAtBoundary(bool)        {}
func (f *turnWS) closeNet() error            { return f.CloseNow() }
func (f *turnWS) Ping(context.Context) error { return nil }

func (f *turnWS) Reader(context.Context) (websocket.MessageType, io.Reader, error) {
	if f.pending == nil {
		return 0, nil, errors.New("no frame")
	}
	b := f.pending
	f.pending = nil
	return websocket.MessageText, bytes.NewReader(b), nil
}

var typeCompleted = []byte(`"type":"Completed"`)

func (f *turnWS) Write(_ context.Context, _ websocket.MessageType, p []byte) error {
	if bytes.Contains(p, typeCompleted) {
		f.terms <- bytes.Clone(p)
	}
	return nil
}

func (f *turnWS) Close(websocket.StatusCode, string) error { return f.CloseNow() }
func (f *turnWS) CloseNow() error {
	select {
	case <-f.closed:
	default:
		close(f.closed)
	}
	return nil
}

// BenchmarkWSTurn is the server's work for one chat turn on an open
// session, without the network: a ChatRouteMessage frame decoded, its
// request run by an echo route, its Message and Completed frames built and
// written. It is where the per-request bookkeeping of the server shows
// (the request's context, deadline, queue accounting).
func BenchmarkWSTurn(b *testing.B) {
	router := echoRouter(b)
	srv := NewServer(router, &ServerOptions{Logger: quietLogger(), IdleTimeout: -1})
	ws := &turnWS{in: make(chan []byte), closed: make(chan struct{}), terms: make(chan []byte, 1)}
	c := newConn(context.Background(), srv, ws, ws, "bench")
	served := make(chan struct{})
	go func() {
		c.serve()
		close(served)
	}()
	ws.in <- []byte(`{"type":"Connect","chatId":"b","route":"echo"}`)
	done := <-ws.terms
	scope := done[bytes.Index(done, []byte(`"data":"`))+8:]
	scope = scope[:bytes.IndexByte(scope, '"')]
	frame := []byte(`{"type":"ChatRouteMessage","chatId":"b","scopeId":"` + string(scope) + `","data":{"userMessage":"hello"}}`)
	b.ReportAllocs()
	for b.Loop() {
		ws.in <- frame
		<-ws.terms
	}
	close(ws.in)
	<-served
	_ = srv.Close()
}
