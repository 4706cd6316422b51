package a2aserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// This file lets a handler continue a context another process started,
// over the router's store: the resume token of the context's conversation
// is saved with it, sealed with Options.TokenKey, so that only the
// handlers holding the key can resume it.

// resumeKey is the key of the sealed resume token in a conversation's
// saved state.
const resumeKey = "a2a.resume"

// errContextBusy is the error of a message on a context another process
// serves now.
var errContextBusy = &rpcError{Code: codeInternal, Message: "Internal error: another node serves this context now; try again later"}

// newAEAD returns the cipher of key, nil for no key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		return nil, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("a2aserver: Options.TokenKey: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal returns token sealed for the conversation id.
func (h *Handler) seal(id, token string) []byte {
	nonce := make([]byte, h.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return h.aead.Seal(nonce, nonce, []byte(token), []byte(id))
}

// unseal returns the token sealed for the conversation id.
func (h *Handler) unseal(id string, sealed []byte) (string, error) {
	n := h.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("a2aserver: a sealed resume token too short")
	}
	b, err := h.aead.Open(nil, sealed[:n], sealed[n:], []byte(id))
	if err != nil {
		return "", fmt.Errorf("a2aserver: a sealed resume token: %w", err)
	}
	return string(b), nil
}

// resumeContext resumes the context id of p that another process started,
// when the handler has a store and a token key; nil when it cannot (an
// unknown context, another principal's, no key).
func (h *Handler) resumeContext(ctx context.Context, id string, p chat.Principal) (*convContext, *rpcError) {
	if h.aead == nil || h.opts.Store == nil || id == "" {
		return nil, nil
	}
	h.resumeMu.Lock()
	defer h.resumeMu.Unlock()
	if cc := h.lookupContext(id, p); cc != nil {
		return cc, nil // resumed meanwhile
	}
	st, err := h.opts.Store.Load(ctx, id)
	if err != nil || st.Principal != principalName(p) {
		return nil, nil
	}
	sealed := st.Extra[resumeKey]
	if rec := h.decodeRecord(id, st.Extra[checkpointKey]); rec != nil && rec.Resume != nil {
		sealed = rec.Resume // the token when the interrupted task started: the latest
	}
	if sealed == nil {
		return nil, nil
	}
	token, err := h.unseal(id, sealed)
	if err != nil {
		h.log.WarnContext(ctx, "a2aserver: a context's resume token does not unseal", "context", id, "err", err)
		return nil, nil
	}
	h.mu.Lock()
	closed, full := h.closed, len(h.contexts) >= h.opts.MaxContexts
	h.mu.Unlock()
	if closed || full {
		return nil, &rpcError{Code: codeInternal, Message: "Internal error: the agent takes no new context now (too many, or shutting down); try again later"}
	}
	// The resume outlives the client's request, but not long: a request
	// another session of this router still runs makes it busy.
	rctx, cancel := context.WithTimeout(chat.WithPrincipal(context.WithoutCancel(ctx), p), h.opts.CancelWait)
	defer cancel()
	conv, err := h.router.Resume(rctx, id, token)
	if errors.Is(err, chat.ErrConversationBusy) {
		return nil, errContextBusy
	}
	if err != nil {
		h.log.InfoContext(ctx, "a2aserver: a context could not be resumed", "context", id, "err", err)
		return nil, nil
	}
	cc := &convContext{id: id, principal: p, conv: conv, token: conv.ResumeToken()}
	// The state as the resume loaded it, under the lease: a task whose
	// record it has was interrupted (its node died, or its save failed),
	// since no other node serves the conversation now.
	tasks := h.decodeTasks(id, conv.Extra(extraKey))
	if rec := h.decodeRecord(id, conv.Extra(checkpointKey)); rec != nil {
		tasks = h.withInterrupted(tasks, rec, false)
		cc.interrupted = append(rec.Interrupted, rec.Task)
	}
	for _, t := range tasks {
		tk := &task{cc: cc, t: *t}
		tk.pause = pauseOf(t)
		cc.tasks = append(cc.tasks, tk)
	}
	h.keep(cc, conv)
	h.mu.Lock()
	h.contexts[id] = cc
	h.mu.Unlock()
	return cc, nil
}

// pauseOf returns what a saved input-required task waits for, from the
// data part of its status message.
func pauseOf(t *a2a.Task) *pause {
	if t.Status.State != a2a.TaskStateInputRequired || t.Status.Message == nil {
		return nil
	}
	for _, part := range t.Status.Message.Parts {
		dp, ok := part.(a2a.DataPart)
		if !ok {
			continue
		}
		for _, kind := range []string{protocol.KeyClientTool, keyConfirm} {
			if call, ok := dp.Data[kind].(map[string]any); ok {
				if id, ok := call["id"].(string); ok && id != "" {
					return &pause{kind: kind, id: id, data: call}
				}
			}
		}
	}
	return nil
}
