package chat

import (
	"context"
	"log/slog"
)

// SendToolEvent sends v, the result of an AI tool whose type is a
// //chat:event type, to the client of the request in ctx as [SendValue]
// does: the model is told the result, and the client gets it as an event
// when the tool returns. Generated code calls it for such tools.
//
// Without a route request in ctx (an AI service called outside a route)
// it sends nothing. A failure to send (the request is over, say) is
// logged, not returned: the tool has done its work, and the model must
// hear its result rather than an error.
func SendToolEvent[T any](ctx context.Context, v T) {
	rs := requestFrom(ctx)
	if rs == nil {
		return
	}
	if err := SendValue(ctx, v); err != nil {
		logger := slog.Default()
		if rs.conv != nil && rs.conv.router != nil {
			logger = rs.conv.router.logger
		}
		logger.WarnContext(ctx, "chat: a tool's event was not sent", slog.Any("err", err))
	}
}
