package io.csiorchestrator.plugins;

import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/** Test only: keeps the last spans that ended (a span processor bean, picked up by Quarkus). */
@Singleton
public class RecordedSpans implements SpanProcessor {

    private static final int KEEP = 5_000;
    private final Deque<SpanData> spans = new ArrayDeque<>();

    @Override
    public void onStart(Context parentContext, ReadWriteSpan span) {
    }

    @Override
    public boolean isStartRequired() {
        return false;
    }

    @Override
    public synchronized void onEnd(ReadableSpan span) {
        spans.addLast(span.toSpanData());
        while (spans.size() > KEEP) {
            spans.removeFirst();
        }
    }

    @Override
    public boolean isEndRequired() {
        return true;
    }

    public synchronized List<SpanData> ofTrace(String traceId) {
        return new ArrayList<>(spans.stream().filter(s -> s.getTraceId().equals(traceId)).toList());
    }
}
