package ws

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/jsroutes"
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
	//go:embed js/importmap.js
	importMapSource []byte
)

// scriptModuleSource is what ScriptPath serves to a module script: newer
// Quarkus versions serve chatscopes.js as an ES module. It re-exports
// chatscopes.mjs, so that every module of a page shares one client.
var scriptModuleSource = []byte(`// The chat scopes client as an ES module, for pages that import
// /_chat/javascript/chatscopes.js as newer Quarkus versions serve it: the
// same module as chatscopes.mjs. A classic <script> gets the classic script.
export * from "./chatscopes.mjs";
`)

// quarkusAPISource is what QuarkusAPIPath serves: the routes module, by
// re-export, so that a page importing it from both URLs (by the import
// map's name and by Quarkus' path) gets one module, one client.
var quarkusAPISource = []byte(`// The chat routes of this server at the URL of Quarkus' generated module:
// the same module as /_chat/javascript/routes.mjs.
export * from "../../_chat/javascript/routes.mjs";
`)

type asset struct {
	name, contentType string
	body              []byte
	etag              string
}

func newAsset(name, contentType string, body []byte) asset {
	sum := sha256.Sum256(body)
	return asset{name: name, contentType: contentType, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// assetKind names a file the server serves.
type assetKind int

const (
	assetScript       assetKind = iota // chatscopes.js as a classic script
	assetScriptModule                  // chatscopes.js as an ES module
	assetModule                        // chatscopes.mjs
	assetTypes                         // chatscopes.d.ts
	assetImportMap                     // the import map script
	assetQuarkusAPI                    // routes.mjs at Quarkus' URL, by re-export
	assetRoutes                        // routes.mjs, generated
	assetRoutesTypes                   // routes.d.ts, generated
	numAssets
)

const (
	jsType = "text/javascript; charset=utf-8"
	tsType = "application/typescript; charset=utf-8"
)

// assets are the files of the JavaScript client and of the routes
// module. Those made from the router's manifest (by jsroutes) are made on
// first use.
type assets struct {
	router *chat.Router
	once   sync.Once
	files  [numAssets]asset
}

func newAssets(router *chat.Router) *assets {
	as := &assets{router: router}
	as.files[assetScript] = newAsset("chatscopes.js", jsType, scriptSource)
	as.files[assetScriptModule] = newAsset("chatscopes.js", jsType, scriptModuleSource)
	as.files[assetModule] = newAsset("chatscopes.mjs", jsType, moduleSource)
	as.files[assetTypes] = newAsset("chatscopes.d.ts", tsType, typesSource)
	as.files[assetImportMap] = newAsset("generated_importmap.js", jsType, importMapSource)
	as.files[assetQuarkusAPI] = newAsset("chatscopes-api.js", jsType, quarkusAPISource)
	return as
}

// get returns the file of kind k, making the generated ones on first use.
func (as *assets) get(k assetKind) *asset {
	if k >= assetRoutes {
		as.once.Do(func() {
			m := as.router.Manifest()
			as.files[assetRoutes] = newAsset("routes.mjs", jsType, jsroutes.Module(m, "./chatscopes.mjs", "../routes"))
			as.files[assetRoutesTypes] = newAsset("routes.d.ts", tsType, jsroutes.Declarations(m))

		})
	}
	return &as.files[k]
}

// wantsModule reports whether a request for ScriptPath comes from a module
// script (or import): browsers fetch those in CORS mode, and classic
// scripts in no-cors mode (Sec-Fetch-Mode). A fetch() (destination
// "empty") and a client that sends no Sec-Fetch headers get the classic
// script.
func wantsModule(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "cors" && r.Header.Get("Sec-Fetch-Dest") != "empty"
}

// serve serves one file, with an ETag so browsers revalidate cheaply.
// vary names the request headers the choice of the file depends on.
func (as *assets) serve(w http.ResponseWriter, r *http.Request, k assetKind, vary string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a := as.get(k)
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if vary != "" {
		h.Set("Vary", vary)
	}
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}
