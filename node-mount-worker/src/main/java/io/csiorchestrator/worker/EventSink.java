package io.csiorchestrator.worker;

import io.csiorchestrator.events.ContractEvent;
import io.opentelemetry.context.Context;

/**
 * Where the worker's events go (plugin-health, node-events, mount-done). Never blocks on the broker.
 * An event caused by traced work (a node command) is published with that work's {@link Context},
 * which the record carries on in its {@code traceparent} header; an event nothing caused (a
 * heartbeat, a plugin transition) is published without one.
 */
@FunctionalInterface
public interface EventSink {

    /** Publishes {@code event}, caused by the work traced in {@code cause} ({@link Context#root()} for none). */
    void publish(ContractEvent event, Context cause);

    /** Publishes an event nothing traced caused. */
    default void publish(ContractEvent event) {
        publish(event, Context.root());
    }
}
