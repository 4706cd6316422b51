package chat

// SupportPackageIsVersion4 is the compatibility contract between generated
// code and this runtime: every chat_gen.go written for version 4 of the
// generated code references it, so it compiles only against a runtime that
// supports that version. Version 4 files register each AI service with one
// call (ai.Register), which builds the service and registers its checks,
// so a check the runtime adds needs no regenerate; they describe their
// tools with chatgen's own ai.Tool fields (Name, Description, Parameters).
//
// A runtime that adds a version adds a constant and keeps the older ones
// for as long as it runs code of those versions; removing one is how a
// runtime drops a version. This runtime runs version 4 only. A compile
// error on this name means the file and the runtime do not match: re-run
// go generate with a matching chatgen (`chatgen -version` prints the
// version it writes) or update the runtime. See docs/architecture.md,
// "Compatibility".
const SupportPackageIsVersion4 = true
