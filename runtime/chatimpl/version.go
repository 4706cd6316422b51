package chatimpl

// SupportPackageIsVersion6 is the compatibility contract between generated
// code and this runtime: every chat_gen.go written for version 6 of the
// generated code references it, so it compiles only against a runtime that
// supports that version. Version 6 files import this package for what only
// generated code needs (registration, routes, the manifest)
// and register each directive target with one statement: a route with
// [Package.AddRoute], a bean with [Provide], an AI service with
// runtime/ai's Register, which builds the service and adds its checks, so
// a check the runtime adds needs no regenerate. Beans are declared with
// chat.NewBean and chat.BeanOptions (version 5 called chat.NewBean and
// chat.NewDurableBean with a positional chat.Kind).
//
// A runtime that adds a version adds a constant and keeps the older ones
// for as long as it runs code of those versions; removing one is how a
// runtime drops a version. This runtime runs version 6 only: a file
// written for version 5 fails to compile at its assertion of
// chatimpl.SupportPackageIsVersion5, with the comment above it telling to
// re-run go generate with a chatgen that matches the runtime
// (`chatgen -version` prints the version it writes). See
// docs/architecture.md, "Compatibility".
const SupportPackageIsVersion6 = true
