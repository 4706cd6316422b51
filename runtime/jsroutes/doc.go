// Package jsroutes writes the routes module of a chat router: from a
// [chatimpl.Manifest] (what [chat.Router.Manifest] returns), the routes as an
// ES module ([Module]) — routes, defaultRoute, client and endpoint, as
// newer Quarkus versions generate them, with the parameters and event
// types of each route — and its TypeScript declarations
// ([Declarations]), which type each route's parameters and the data of
// each event type from the JSON Schemas of the Go types.
//
//	m := router.Manifest()
//	mod := jsroutes.Module(m, "./chatscopes.mjs", "../routes")
//	dts := jsroutes.Declarations(m)
//
// Types come from the subset of JSON Schema chatgen writes (types, enums,
// arrays, objects with properties or additionalProperties, anyOf, $ref to
// the manifest's types); anything else is unknown. Names a module cannot
// export or declare (reserved words, the module's own exports, names that
// are not identifiers) stay reachable by string key. The output depends on
// the manifest only: the same manifest gives the same bytes.
//
// The package knows no transport. runtime/ws imports it and serves both
// files, made once from its router's manifest, at
// /_chat/javascript/routes.mjs and /_chat/javascript/routes.d.ts next to
// the JavaScript client; the files' header comments name those paths.
// docs/browser.md shows the module in a page.
package jsroutes
