package ai

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tmc/langchaingo/schema"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// retrieveTraced runs a retrieval in a "retrieval {knowledge}" span:
// gen_ai.operation.name "retrieval", gen_ai.data_source.id the
// knowledge's name, and gen_ai.retrieval.documents the passages' ids and
// scores (JSON); their content and gen_ai.retrieval.query.text only with
// RecordContent.
func (s *Service) retrieveTraced(ctx context.Context, tr trace.Tracer, method, query string) ([]schema.Document, error) {
	k := s.know
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameRetrieval,
		semconv.GenAIDataSourceID(k.name),
		semconv.GenAIProviderNameKey.String(s.tel.provider),
		attribute.String("chatgen.ai.method", method),
	}
	if s.tel.content {
		attrs = append(attrs, semconv.GenAIRetrievalQueryText(query))
	}
	ctx, span := tr.Start(ctx, "retrieval "+k.name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	docs, err := k.get(ctx, query)
	if err != nil {
		errType := "retrieval_error"
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			errType = "canceled"
		case ctx.Err() != nil:
			errType = "deadline_exceeded"
		case errors.Is(err, context.DeadlineExceeded):
			errType = "timeout" // Knowledge.Timeout
		}
		span.SetStatus(codes.Error, s.tel.errorDescription(errType, err))
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		return nil, err
	}
	span.SetAttributes(semconv.GenAIRetrievalDocumentsKey.String(retrievedJSON(docs, s.tel.content)))
	return docs, nil
}

// retrievedJSON is gen_ai.retrieval.documents: [{id, score}], with the
// content when it is recorded.
func retrievedJSON(docs []schema.Document, content bool) string {
	type doc struct {
		ID      string  `json:"id"`
		Score   float32 `json:"score"`
		Content string  `json:"content,omitempty"`
	}
	out := make([]doc, len(docs))
	for i, d := range docs {
		out[i] = doc{ID: meta(d, "id"), Score: d.Score}
		if content {
			out[i].Content = d.PageContent
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "[]"
	}
	return string(b)
}
