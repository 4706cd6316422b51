package ws

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"
)

// The JavaScript client, written by hand. chatscopes.mjs is the source;
// chatscopes.js is the same code as a classic script (its exports become
// globals, as in Quarkus), kept in step by TestClassicScriptInSync.
var (
	//go:embed js/chatscopes.mjs
	moduleSource []byte
	//go:embed js/chatscopes.js
	scriptSource []byte
	//go:embed js/chatscopes.d.ts
	typesSource []byte
)

type asset struct {
	name, contentType string
	body              []byte
	etag              string
}

func newAsset(name, contentType string, body []byte) asset {
	sum := sha256.Sum256(body)
	return asset{name: name, contentType: contentType, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// assets are the files of the JavaScript client, by kind.
type assets [3]asset

type assetKind int

const (
	assetScript assetKind = iota
	assetModule
	assetTypes
)

func newAssets() *assets {
	return &assets{
		assetScript: newAsset("chatscopes.js", "text/javascript; charset=utf-8", scriptSource),
		assetModule: newAsset("chatscopes.mjs", "text/javascript; charset=utf-8", moduleSource),
		assetTypes:  newAsset("chatscopes.d.ts", "application/typescript; charset=utf-8", typesSource),
	}
}

// serveAsset serves one file of the JavaScript client, with an ETag so
// browsers revalidate cheaply.
func (as *assets) serve(w http.ResponseWriter, r *http.Request, k assetKind) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a := &as[k]
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
