package chatimpl

// SupportPackageIsVersion5 is the compatibility contract between generated
// code and this runtime: every chat_gen.go written for version 5 of the
// generated code references it, so it compiles only against a runtime that
// supports that version. Version 5 files import this package for what only
// generated code needs (registration, routes, the manifest) and register
// each directive target with one statement: a route with
// [Package.AddRoute], a bean with [Provide], an AI service with
// runtime/ai's Register, which builds the service and adds its checks, so
// a check the runtime adds needs no regenerate.
//
// A runtime that adds a version adds a constant and keeps the older ones
// for as long as it runs code of those versions; removing one is how a
// runtime drops a version. This runtime runs version 5 only: a file
// written for version 4 fails to compile at its assertion of
// chat.SupportPackageIsVersion4, with the comment above it telling to
// re-run go generate with a chatgen that matches the runtime
// (`chatgen -version` prints the version it writes). See
// docs/architecture.md, "Compatibility".
const SupportPackageIsVersion5 = true
