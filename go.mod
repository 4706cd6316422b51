module github.com/chatscopes/chatgen

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/dave/jennifer v1.7.1
	github.com/google/uuid v1.6.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/tmc/langchaingo v0.1.14
	go.etcd.io/bbolt v1.5.0
	golang.org/x/tools v0.52.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/pkoukk/tiktoken-go v0.1.6 // indirect
	github.com/stretchr/objx v0.5.3 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
