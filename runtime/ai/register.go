package ai

import (
	"context"
	"slices"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// ServiceSpec is what generated code knows of one //chat:ai interface:
// the application's configuration of it and the methods it declares.
type ServiceSpec struct {
	// Config is the service's configuration, the interface's field of the
	// generated Deps; nil is a service without a model.
	Config *Config
	// Methods are the interface's methods, whose tools [Service.Check]
	// compares with those of the service's tool sources.
	Methods []*Method
}

// Register registers with p the AI service of bean, the bean of a
// //chat:ai interface T: it builds the [Service] from spec, named as the
// bean ("import/path.Type"), registers the checks [chat.NewRouter] runs
// ([Service.Check], and [Service.CheckStore] when the router has a store)
// and provides bean as impl of the service, the generated implementation
// of T. Generated code calls it, once per AI service, in Register; the
// checks a service needs are the runtime's business, so adding one needs
// no regenerate.
func Register[T any](p *chatimpl.Package, bean *chat.Bean[T], spec ServiceSpec, impl func(*Service) T) {
	s := NewService(bean.Name(), spec.Config)
	s.methods = slices.Clip(slices.Clone(spec.Methods))
	p.AddCheck(s.Check)
	p.AddStoreCheck(s.CheckStore)
	chatimpl.Provide(p, bean, func(context.Context) (T, error) { return impl(s), nil })
}
